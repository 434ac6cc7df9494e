//! The agent host with its MCP server and a simulated devices-console tab
//! in one process (for `examples/devices_mcp.rs` and `mcp_latency.rs`,
//! which declare the `app`, `backend` and `embedded` modules of
//! `examples/devices/`): the devices table (dev-1 and dev-2 selected), its
//! registry and a `BrowserSurfaceSession` holding confirmations while the
//! simulated user decides, connected by the library's `InProcessTab`.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use agent_surface::host::{BrowserSurfaceSession, BrowserSurfaceSessionOptions, KnownBuild};
use agent_surface::host::{ConfirmationEvent, ConfirmationMode, SessionEventSubscription};
use agent_surface::{AgentConsumer, AgentManifest, ConsumerKind, SurfaceRegistry};
// `agent_surface::mcp` and `TokioTimer` need the facade's `mcp`/`tokio`
// features, which a cargo example cannot enable on its own package: the
// examples name the same items through the runtime crates.
use surface_host::host::{fresh_page_identity, Database, Host, InProcessTab};
use surface_runtime::host::{BrowserSurfaceCall, BrowserSurfaceResult};
use surface_runtime::TokioTimer;

use crate::app::{self, api, DevicesView};
use crate::backend::Backend;

static QUIET: AtomicBool = AtomicBool::new(false);

/// Stops the tab's and the user's log lines on stderr (for measurements).
pub fn set_quiet(quiet: bool) {
    QUIET.store(quiet, Ordering::SeqCst);
}

macro_rules! log {
    ($($arg:tt)*) => { if !QUIET.load(Ordering::Relaxed) { eprintln!($($arg)*); } };
}

/// The simulated page's app and build (the host knows the build).
pub const APP_ID: &str = "devices-console";
pub const BUILD_ID: &str = "devices-console-1";

/// What the simulated user does with every confirmation the tab shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UserDecision {
    Approve,
    Reject,
}

/// What [`start`] starts: where the procedures run, the simulated user,
/// the host's database and replica name.
pub struct Setup {
    pub backend: Backend,
    pub decision: UserDecision,
    pub decide_after: Duration,
    pub database: Database,
    pub replica: String,
}

/// The running host (its MCP endpoint: `host.mcp_service()`), the run the
/// MCP client acts in with its bearer token, and the tab, closed when
/// dropped.
pub struct DevicesMcp {
    pub host: Host,
    pub run: String,
    pub token: String,
    pub registry: SurfaceRegistry,
    pub consumer: AgentConsumer,
    _tab: (InProcessTab, app::Registrations, SessionEventSubscription),
}

/// What a UI framework does after state changed: the selection feeds
/// `describe()` and `when()`, so the registry announces a new version.
fn render(registry: &SurfaceRegistry, view: &DevicesView, rendered: &AtomicU64) {
    let revision = view.revision();
    if rendered.swap(revision, Ordering::SeqCst) != revision {
        let version = registry.notify_changed();
        log!(
            "[tab] selection {:?} -> surfaceVersion {version}",
            view.selection()
        );
    }
}

/// Starts the host, the simulated tab and a run for an MCP client.
pub async fn start(setup: Setup) -> Result<DevicesMcp, String> {
    let manifest = AgentManifest::from_json_str(api::MANIFEST_JSON).map_err(|e| e.to_string())?;
    let registry = SurfaceRegistry::builder(api::authority())
        .timer(Arc::new(TokioTimer))
        .build();
    registry.set_procedure_executor(setup.backend.ordinary(manifest, &["devices.list"]));
    let view = DevicesView::default();
    let registrations = app::register(&registry, &view).map_err(|e| e.to_string())?;
    view.set_rows(setup.backend.load_devices().await?);
    view.select(vec!["dev-1".into(), "dev-2".into()])
        .map_err(|unknown| format!("the backend has no rows {unknown:?}"))?;
    let rendered = Arc::new(AtomicU64::new(0));
    render(&registry, &view, &rendered);
    log!("[tab] devices table loaded; the user selected dev-1 and dev-2");

    let host = Host::builder(setup.database)
        .known_build(KnownBuild::new(APP_ID, BUILD_ID, api::authority()))
        .replica(setup.replica)
        .build()
        .await
        .map_err(|e| e.to_string())?;
    let consumer = app::consumer();
    let options = BrowserSurfaceSessionOptions::new(
        registry.clone(),
        fresh_page_identity(APP_ID, BUILD_ID),
        consumer.clone(),
    );
    let session = BrowserSurfaceSession::new(
        options
            .confirmations(ConfirmationMode::Hold)
            .timer(Arc::new(TokioTimer)),
    );
    let run = host
        .start_page_run(session.identity(), ConsumerKind::Embedded)
        .await;
    let run = run.map_err(|e| e.to_string())?;
    let token = host.issue_token(&run).await.map_err(|e| e.to_string())?;
    let dialogs = simulated_user(&session, setup.decision, setup.decide_after)?;
    // After each call, re-render before answering: the host knows the new
    // surface before the agent's next call.
    let tab_registry = registry.clone();
    let after_call = move |call: &BrowserSurfaceCall, result: &BrowserSurfaceResult| {
        render(&tab_registry, &view, &rendered);
        let ok = result.invocation_result().is_some_and(|r| r.is_ok());
        let status = if ok { "ok" } else { "not ok" };
        log!("[tab] {} -> {status}", call.invocation.capability_id);
    };
    let tab = InProcessTab::connect_with(&host, &session, "user-1", Some(Arc::new(after_call)));
    let tab = tab.await.map_err(|e| e.to_string())?;
    let _tab = (tab, registrations, dialogs);
    Ok(DevicesMcp {
        host,
        run,
        token,
        registry,
        consumer,
        _tab,
    })
}

/// The user in front of the tab's confirmation dialog: `decision` after
/// `decide_after`.
fn simulated_user(
    session: &BrowserSurfaceSession,
    decision: UserDecision,
    decide_after: Duration,
) -> Result<SessionEventSubscription, String> {
    let decider = session.clone();
    let on_dialog = move |event: &ConfirmationEvent| match event {
        ConfirmationEvent::Requested(c) => {
            log!(
                "[tab] confirmation dialog: {} with {}",
                c.capability_id,
                c.input
            );
            let (session, id) = (decider.clone(), c.confirmation_id.clone());
            tokio::spawn(async move {
                tokio::time::sleep(decide_after).await;
                let decided = match decision {
                    UserDecision::Approve => session.approve(&id),
                    UserDecision::Reject => session.reject(&id),
                };
                log!("[user] {decision:?} {id}: {decided:?}");
            });
        }
        ConfirmationEvent::Settled {
            confirmation_id,
            outcome,
            ..
        } => {
            log!("[tab] dialog {confirmation_id} closed: {outcome:?}")
        }
    };
    session
        .on_confirmation(on_dialog)
        .map_err(|e| e.to_string())
}
