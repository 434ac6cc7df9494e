//! The agent host with its MCP server and a simulated devices-console tab
//! in the same process (used by `examples/devices_mcp.rs` and
//! `examples/mcp_latency.rs`; the including example declares the `app`
//! and `embedded` modules of `examples/devices/`).
//!
//! The tab is what a browser page would run: the devices table (rows from
//! the backend, dev-1 and dev-2 selected), its registry, and a
//! `BrowserSurfaceSession` holding confirmations while the simulated user
//! decides. The library's `Host` keeps the state (a SQLite file by
//! default, memory, or a PostgreSQL database shared by several replicas)
//! and its `InProcessTab` carries the tab's messages without a socket.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use agent_surface::bridge::{
    create_orpc_agent_bridge, invocation_id_header, CallOptions, HttpOrpcClient,
    OrpcAgentBridgeOptions, OrpcClient,
};
use agent_surface::host::{
    BrowserSurfaceIdentity, BrowserSurfaceSession, BrowserSurfaceSessionOptions, ConfirmationEvent,
    ConfirmationMode, KnownBuild, SessionEventSubscription,
};
use agent_surface::{AgentManifest, AgentProcedureExecutor, ConsumerKind, SurfaceRegistry};
// `agent_surface::mcp` and `agent_surface::TokioTimer` need the facade's
// `mcp`/`tokio` features. An application enables them on `agent-surface`;
// a cargo example cannot enable its own package's features, so the examples
// name the same items through the runtime crate (a dev-dependency with `mcp`).
use serde_json::{json, Value};
use surface_host::host::{Database, Host, InProcessTab};
use surface_host::mcp::{McpServer, McpServerOptions};
use surface_runtime::TokioTimer;

use crate::app::{self, api, Device, DevicesView};
use crate::embedded::EmbeddedDevices;

static QUIET: AtomicBool = AtomicBool::new(false);

/// Stops the tab's and the user's log lines on stderr (for measurements).
pub fn set_quiet(quiet: bool) {
    QUIET.store(quiet, Ordering::SeqCst);
}

/// `eprintln!` unless [`set_quiet`].
macro_rules! log {
    ($($arg:tt)*) => {
        if !QUIET.load(Ordering::Relaxed) {
            eprintln!($($arg)*);
        }
    };
}

/// The requester's credential the real oRPC peer accepts.
pub const USER_TOKEN: &str = "Bearer user-token";
/// The app and build ids of the simulated page.
pub const APP_ID: &str = "devices-console";
/// The build the host knows (its authority is the generated one).
pub const BUILD_ID: &str = "devices-console-1";

/// What the simulated user does with every confirmation the tab shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UserDecision {
    /// Approve (`session.approve`).
    Approve,
    /// Reject (`session.reject`).
    Reject,
}

/// Where the host keeps its state: the database, and this process's
/// replica name when several share a PostgreSQL database.
#[derive(Clone, Debug)]
pub struct Hosting {
    /// `memory`, `sqlite:PATH` or `postgres://…`.
    pub database: Database,
    /// The replica's name (stable across its restarts).
    pub replica: String,
}

/// Where the procedures run.
pub enum Backend {
    /// The in-process devices backend of `examples/devices`.
    Embedded(Arc<EmbeddedDevices>),
    /// A real oRPC server (e.g. the peer in `tests/orpc-peer`).
    Orpc {
        /// Its URL prefix (`http://127.0.0.1:PORT/rpc`).
        url: String,
        /// The user's client.
        client: Arc<HttpOrpcClient>,
    },
}

impl Backend {
    /// The embedded backend with its four initial devices.
    pub fn embedded() -> Self {
        Backend::Embedded(Arc::new(EmbeddedDevices::seeded()))
    }

    /// A real oRPC server at `url`, called as the user.
    pub fn orpc(url: &str) -> Self {
        Backend::Orpc {
            url: url.to_string(),
            client: Arc::new(HttpOrpcClient::new(url).with_header("authorization", USER_TOKEN)),
        }
    }

    /// One line saying what it is.
    pub fn describe(&self) -> String {
        match self {
            Backend::Embedded(_) => "embedded in-process devices backend".into(),
            Backend::Orpc { url, .. } => format!("real oRPC server at {url}"),
        }
    }

    fn executor(&self, manifest: AgentManifest) -> Arc<dyn AgentProcedureExecutor> {
        match self {
            Backend::Embedded(backend) => backend.clone(),
            Backend::Orpc { client, .. } => {
                let client: Arc<dyn OrpcClient> = client.clone();
                create_orpc_agent_bridge(
                    OrpcAgentBridgeOptions::new(client, manifest)
                        .call_context(invocation_id_header)
                        .get("devices.list"),
                )
                .executor
            }
        }
    }

    async fn load_devices(&self) -> Result<Vec<Device>, String> {
        let output = match self {
            Backend::Embedded(backend) => backend
                .handle("devices.list", &json!({}), "app-load")
                .map_err(|e| format!("the embedded backend failed to list devices: {e}"))?,
            Backend::Orpc { url, client } => client
                .call("devices.list", Some(json!({})), CallOptions::default())
                .await
                .map_err(|e| format!("could not list devices from {url}: {e}"))?,
        };
        serde_json::from_value::<Vec<Device>>(output["devices"].clone())
            .map_err(|e| format!("devices.list returned an unexpected shape ({e}): {output}"))
    }
}

/// The running host, MCP server and tab. Dropping it closes the tab.
pub struct DevicesMcp {
    /// The host (its MCP endpoint: `host.mcp_service()`).
    pub host: Host,
    /// The MCP server.
    pub mcp: McpServer,
    /// The run the MCP client acts in.
    pub run: String,
    /// The bearer token of the run's MCP client.
    pub token: String,
    /// The tab's registry.
    pub registry: SurfaceRegistry,
    /// The tab's devices table.
    pub view: DevicesView,
    /// The tab's session.
    pub session: BrowserSurfaceSession,
    /// The tab's consumer.
    pub consumer: agent_surface::AgentConsumer,
    _tab: InProcessTab,
    _registrations: app::Registrations,
    _dialogs: SessionEventSubscription,
}

/// What a UI framework does after state changed: the selection feeds
/// `describe()` and `when()`, so the app tells the registry the surface
/// changed (a new surface version, a new announcement).
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

/// Starts the host (as `hosting` says), its MCP server and the simulated
/// tab.
pub async fn start(
    backend: Backend,
    decision: UserDecision,
    decide_after: Duration,
    options: McpServerOptions,
    hosting: Hosting,
) -> Result<DevicesMcp, String> {
    let manifest = AgentManifest::from_json_str(api::MANIFEST_JSON)
        .map_err(|e| format!("the compiled-in manifest does not parse: {e}"))?;

    // ----- the tab
    let registry = SurfaceRegistry::builder(api::authority())
        .timer(Arc::new(TokioTimer))
        .build();
    registry.set_procedure_executor(backend.executor(manifest));
    let view = DevicesView::default();
    let registrations =
        app::register(&registry, &view).map_err(|e| format!("registration was refused: {e}"))?;
    view.set_rows(backend.load_devices().await?);
    view.select(vec!["dev-1".into(), "dev-2".into()])
        .map_err(|unknown| format!("the backend has no rows {unknown:?}"))?;
    let rendered = Arc::new(AtomicU64::new(0));
    render(&registry, &view, &rendered);
    log!("[tab] devices table loaded; the user selected dev-1 and dev-2");

    let consumer = app::consumer();
    let mut host = Host::builder(hosting.database.clone())
        .known_build(KnownBuild::new(APP_ID, BUILD_ID, api::authority()))
        .mcp(options);
    if hosting.replica != surface_host::host::DEFAULT_REPLICA_NAME {
        host = host.replica(&hosting.replica);
    }
    let host = host.build().await.map_err(|e| e.to_string())?;
    if !host.interrupted_routes().is_empty() {
        log!(
            "[host] replica {}: {} routed call(s) it held before it stopped are interrupted",
            hosting.replica,
            host.interrupted_routes().len()
        );
    }
    // Fresh ids per start: an id is never reused on a durable store.
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let n = format!("{}-{nanos:x}-{:x}", hosting.replica, std::process::id());
    let session = BrowserSurfaceSession::new(
        BrowserSurfaceSessionOptions::new(
            registry.clone(),
            BrowserSurfaceIdentity::new(
                APP_ID,
                BUILD_ID,
                format!("session-{n}"),
                format!("tab-{n}"),
            ),
            consumer.clone(),
        )
        .confirmations(ConfirmationMode::Hold)
        .timer(Arc::new(TokioTimer)),
    );
    let run = host
        .start_page_run(session.identity(), ConsumerKind::Embedded)
        .await
        .map_err(|e| e.to_string())?;
    let token = host.issue_token(&run).await.map_err(|e| e.to_string())?;

    // ----- the simulated user, in front of the tab's confirmation dialog
    let dialogs = {
        let decider = session.clone();
        session
            .on_confirmation(move |event| match event {
                ConfirmationEvent::Requested(c) => {
                    log!(
                        "[tab] confirmation dialog: {} with {}",
                        c.capability_id,
                        c.input
                    );
                    let session = decider.clone();
                    let id = c.confirmation_id.clone();
                    tokio::spawn(async move {
                        tokio::time::sleep(decide_after).await;
                        let outcome = match decision {
                            UserDecision::Approve => session.approve(&id),
                            UserDecision::Reject => session.reject(&id),
                        };
                        match outcome {
                            Ok(()) => log!("[user] {decision:?}s {id}"),
                            Err(e) => log!("[user] could not decide {id}: {e}"),
                        }
                    });
                }
                ConfirmationEvent::Settled {
                    confirmation_id,
                    outcome,
                    ..
                } => log!("[tab] dialog {confirmation_id} closed: {outcome:?}"),
            })
            .map_err(|e| e.to_string())?
    };

    // ----- the tab's connection: after each call, re-render before
    // answering, so the host knows the new surface before the agent's next
    // call.
    let after_call = {
        let (registry, view) = (registry.clone(), view.clone());
        Arc::new(
            move |call: &surface_runtime::host::BrowserSurfaceCall,
                  result: &surface_runtime::host::BrowserSurfaceResult| {
                render(&registry, &view, &rendered);
                let summary = match result.invocation_result() {
                    Some(r) => serde_json::to_value(r).unwrap_or(Value::Null)["status"]
                        .as_str()
                        .unwrap_or("?")
                        .to_string(),
                    None => format!("rejected ({:?})", result.rejection()),
                };
                log!("[tab] {} -> {summary}", call.invocation.capability_id);
            },
        )
    };
    let tab = InProcessTab::connect_with(&host, &session, "user-1", Some(after_call))
        .await
        .map_err(|e| e.to_string())?;

    Ok(DevicesMcp {
        mcp: host.mcp().clone(),
        host,
        run,
        token,
        registry,
        view,
        session,
        consumer,
        _tab: tab,
        _registrations: registrations,
        _dialogs: dialogs,
    })
}
