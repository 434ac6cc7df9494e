//! The agent host with its MCP server and a simulated devices-console tab
//! in the same process (used by `examples/devices_mcp.rs` and
//! `examples/mcp_latency.rs`; the including example declares the `app`
//! and `embedded` modules of `examples/devices/`).
//!
//! The tab is what a browser page would run: the devices table (rows from
//! the backend, dev-1 and dev-2 selected), its registry, and a
//! `BrowserSurfaceSession` holding confirmations while the simulated user
//! decides. Its messages reach the host through an `McpTabConnection`
//! directly (no WebSocket): exactly the calls a transport would carry.
//!
//! [`Hosting::Replica`] makes the process one replica of several on a
//! PostgreSQL database (docs/host.md, "Replicas"): its tab's messages go
//! to a `ReplicaTab`, its MCP server is `McpServer::for_replica`, and its
//! token is valid on every replica.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use agent_surface::bridge::{
    create_orpc_agent_bridge, invocation_id_header, CallOptions, HttpOrpcClient,
    OrpcAgentBridgeOptions, OrpcClient,
};
use agent_surface::host::{
    AgentHost, AgentRun, AuthenticatedConnection, BrowserSurfaceIdentity, BrowserSurfaceSession,
    BrowserSurfaceSessionOptions, BrowserToHostMessage, ConfirmationEvent, ConfirmationMode,
    KnownBuild, SessionEventSubscription,
};
use agent_surface::{AgentManifest, AgentProcedureExecutor, ConsumerKind, SurfaceRegistry};
// `agent_surface::mcp` and `agent_surface::TokioTimer` need the facade's
// `mcp`/`tokio` features. An application enables them on `agent-surface`;
// a cargo example cannot enable its own package's features, so the examples
// name the same items through the runtime crate (a dev-dependency with `mcp`).
use serde_json::{json, Value};
use surface_host::mcp::{McpServer, McpServerOptions};
use surface_runtime::host::BrowserSurfaceCall;
use surface_runtime::TokioTimer;
use surface_store::replica::{Replica, ReplicaOptions};
use surface_store::wake::PostgresWakeups;
use surface_store::{DurableHost, PostgresStore, PostgresStoreOptions};
use tokio::sync::mpsc;

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
/// The run the MCP client acts in.
pub const RUN_ID: &str = "mcp-run";

/// What the simulated user does with every confirmation the tab shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UserDecision {
    /// Approve (`session.approve`).
    Approve,
    /// Reject (`session.reject`).
    Reject,
}

/// Where the host keeps its state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Hosting {
    /// In this process only (`McpServer::new` over an `AgentHost`); the
    /// tab, session, connection and run ids are fixed.
    InProcess,
    /// One replica of several sharing a PostgreSQL database
    /// (`postgres://…`): `DurableHost` + `Replica` named `name`, wake-ups
    /// over `LISTEN/NOTIFY`; the ids are fresh for every start (an id is
    /// never reused across incarnations).
    Replica {
        /// The database URL.
        database: String,
        /// The replica's name (stable across its restarts).
        name: String,
    },
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
    /// The MCP server (its HTTP endpoint: `mcp.http_service()`).
    pub mcp: McpServer,
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
    _tab: TabLink,
    _registrations: app::Registrations,
    _subscriptions: Vec<SessionEventSubscription>,
    _announcements: agent_surface::host::AnnouncementSubscription,
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

/// The tab's side of its connection to the host: messages in dispatch
/// order, whatever the host.
#[derive(Clone)]
enum TabLink {
    /// `McpTabConnection::receive` (synchronous, in order).
    InProcess(Arc<surface_host::mcp::McpTabConnection>),
    /// To the task that hands them to `ReplicaTab::receive`, one at a time.
    Replica(mpsc::UnboundedSender<BrowserToHostMessage>),
}

fn deliver(tab: &TabLink, message: BrowserToHostMessage) {
    match tab {
        TabLink::InProcess(tab) => {
            if let Err(error) = tab.receive(message) {
                log!("[host] refused a message of the tab: {error}");
            }
        }
        TabLink::Replica(sender) => {
            let _ = sender.send(message);
        }
    }
}

/// The host, its MCP server, the run's token, the tab's link and the calls
/// for the tab.
struct Connected {
    mcp: McpServer,
    token: String,
    tab: TabLink,
    calls: mpsc::UnboundedReceiver<BrowserSurfaceCall>,
}

/// The tab's ids: fixed in process, fresh per start for a replica.
struct Ids {
    session: String,
    tab: String,
    connection: String,
    run: String,
}

impl Ids {
    fn of(hosting: &Hosting) -> Self {
        match hosting {
            Hosting::InProcess => Ids {
                session: "session-1".into(),
                tab: "tab-1".into(),
                connection: "conn-1".into(),
                run: RUN_ID.into(),
            },
            Hosting::Replica { name, .. } => {
                let nanos = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos());
                let n = format!("{name}-{nanos:x}-{:x}", std::process::id());
                Ids {
                    session: format!("session-{n}"),
                    tab: format!("tab-{n}"),
                    connection: format!("conn-{n}"),
                    run: format!("{RUN_ID}-{n}"),
                }
            }
        }
    }
}

/// Starts the host as `hosting` says, the run on the tab, and the tab's
/// connection.
async fn connect(
    hosting: &Hosting,
    ids: &Ids,
    options: McpServerOptions,
) -> Result<Connected, String> {
    let host =
        AgentHost::new().with_known_build(KnownBuild::new(APP_ID, BUILD_ID, api::authority()));
    let run = AgentRun {
        run_id: ids.run.clone(),
        session_id: ids.session.clone(),
        tab_id: Some(ids.tab.clone()),
        kind: ConsumerKind::Embedded,
    };
    // Authenticated by the app; here in-process.
    let auth = AuthenticatedConnection::new(&ids.connection, &ids.session, "user-1");
    let (calls_in, calls) = mpsc::unbounded_channel();
    match hosting {
        Hosting::InProcess => {
            let host = Arc::new(host);
            host.start_run(run).map_err(|e| e.to_string())?;
            let mcp = McpServer::new(host, options);
            let token = mcp.issue_token(&ids.run);
            let (tab, mut tab_calls) = mcp.open_connection(auth).map_err(|e| e.to_string())?;
            tokio::spawn(async move {
                while let Some(call) = tab_calls.next().await {
                    let _ = calls_in.send(call);
                }
            });
            Ok(Connected {
                mcp,
                token,
                tab: TabLink::InProcess(Arc::new(tab)),
                calls,
            })
        }
        Hosting::Replica { database, name } => {
            let store = PostgresStore::open(PostgresStoreOptions::new(database.clone()))
                .await
                .map_err(|e| format!("the host store at {database}: {e}"))?;
            let wake = Arc::new(PostgresWakeups::for_store(&store));
            let (durable, _) = DurableHost::open(host, Arc::new(store), name)
                .await
                .map_err(|e| e.to_string())?;
            let (replica, interrupted) =
                Replica::start(Arc::new(durable), wake, ReplicaOptions::default())
                    .await
                    .map_err(|e| e.to_string())?;
            if !interrupted.is_empty() {
                log!(
                    "[host] replica {name}: {} routed call(s) it held before it stopped are interrupted",
                    interrupted.len()
                );
            }
            let mcp = McpServer::for_replica(replica.clone(), options);
            replica
                .durable()
                .start_run(run)
                .await
                .map_err(|e| e.to_string())?;
            let token = mcp
                .issue_durable_token(&ids.run)
                .await
                .map_err(|e| e.to_string())?;
            let (tab, mut tab_calls) = replica.open_connection(auth).map_err(|e| e.to_string())?;
            tokio::spawn(async move {
                while let Some(call) = tab_calls.next().await {
                    let _ = calls_in.send(call);
                }
            });
            let (sender, mut messages) = mpsc::unbounded_channel();
            tokio::spawn(async move {
                while let Some(message) = messages.recv().await {
                    if let Err(error) = tab.receive(message).await {
                        log!("[host] refused a message of the tab: {error}");
                    }
                }
                tab.close().await;
            });
            Ok(Connected {
                mcp,
                token,
                tab: TabLink::Replica(sender),
                calls,
            })
        }
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
    let ids = Ids::of(&hosting);
    let session = BrowserSurfaceSession::new(
        BrowserSurfaceSessionOptions::new(
            registry.clone(),
            BrowserSurfaceIdentity::new(APP_ID, BUILD_ID, &ids.session, &ids.tab),
            consumer.clone(),
        )
        .confirmations(ConfirmationMode::Hold)
        .timer(Arc::new(TokioTimer)),
    );

    // ----- the host, the run, the tab's connection
    let Connected {
        mcp,
        token,
        tab,
        mut calls,
    } = connect(&hosting, &ids, options).await?;
    let announcement = session
        .connect(&ids.connection)
        .map_err(|e| e.to_string())?;
    deliver(
        &tab,
        BrowserToHostMessage::Announcement(Box::new(announcement)),
    );
    let announcements = {
        let tab = tab.clone();
        session
            .subscribe(move |a| {
                deliver(
                    &tab,
                    BrowserToHostMessage::Announcement(Box::new(a.clone())),
                )
            })
            .map_err(|e| e.to_string())?
    };
    let progress = {
        let tab = tab.clone();
        session
            .on_progress(move |p| deliver(&tab, BrowserToHostMessage::Progress(p.clone())))
            .map_err(|e| e.to_string())?
    };
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

    // ----- calls from the host into the tab
    {
        let (tab, session, registry, view) =
            (tab.clone(), session.clone(), registry.clone(), view.clone());
        tokio::spawn(async move {
            while let Some(call) = calls.recv().await {
                let (tab, session, registry, view, rendered) = (
                    tab.clone(),
                    session.clone(),
                    registry.clone(),
                    view.clone(),
                    rendered.clone(),
                );
                tokio::spawn(async move {
                    let capability = call.invocation.capability_id.clone();
                    let result = session.invoke(call).await;
                    // Re-render before answering, so the host knows the new
                    // surface before the agent's next call.
                    render(&registry, &view, &rendered);
                    let summary = match result.invocation_result() {
                        Some(r) => serde_json::to_value(r).unwrap_or(Value::Null)["status"]
                            .as_str()
                            .unwrap_or("?")
                            .to_string(),
                        None => format!("rejected ({:?})", result.rejection()),
                    };
                    log!("[tab] {capability} -> {summary}");
                    deliver(&tab, BrowserToHostMessage::Result(Box::new(result)));
                });
            }
        });
    }

    Ok(DevicesMcp {
        mcp,
        token,
        registry,
        view,
        session,
        consumer,
        _tab: tab,
        _registrations: registrations,
        _subscriptions: vec![progress, dialogs],
        _announcements: announcements,
    })
}
