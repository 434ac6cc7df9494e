//! A devices console with an embedded agent, on the real generated manifest.
//!
//! ```text
//! cargo run --example devices                                   # embedded backend
//! cargo run --example devices -- --orpc-url http://127.0.0.1:PORT/rpc   # a real oRPC server
//! cargo run --example devices -- --contract                     # print the surface contract
//! ```
//!
//! It runs a scripted agent turn by turn and checks each outcome: it
//! exits 1 with a message naming the step when anything deviates. By
//! default each call and result is one line; `--verbose` prints the
//! agent-facing catalog and every call, result and confirmation as JSON. See
//! `docs/example.md`.

/// `println!` that stops quietly, with the shell's SIGPIPE status 141,
/// when stdout is closed early (`cargo run --example devices | head`)
/// instead of panicking.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        if writeln!(std::io::stdout().lock(), $($arg)*).is_err() {
            std::process::exit(141);
        }
    }};
}

/// `print!` with the behaviour of [`say!`].
macro_rules! say_raw {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        if write!(std::io::stdout().lock(), $($arg)*).is_err() {
            std::process::exit(141);
        }
    }};
}

mod app;
mod backend;
mod embedded;

use std::process::ExitCode;
use std::sync::Arc;

use agent_surface::bridge::{
    create_governed_orpc_agent_bridge, CallOptions, CapabilityClient, DescribeScope,
    GovernedBridgeOptions, GovernedOrpcAgentBridge, HttpOrpcClient, OrpcCapabilityClient,
    ResumeApprovalRequest,
};
use agent_surface::contract::SurfaceContract;
use agent_surface::manifest::create_orpc_agent_manifest;
use agent_surface::{
    AgentConsumer, AgentError, AgentInvocation, AgentInvocationResult, AgentManifest, ErrorCode,
    Retry, SurfaceRegistry, SurfaceSnapshot,
};
use serde_json::{json, Value};

use app::{api, Device, DevicesView};
use backend::{Backend, USER_TOKEN};

const USAGE: &str = "usage: devices [--orpc-url URL] [--verbose] [--contract]

Runs the scripted devices-console agent and checks every step.

  (no flags)        use the embedded in-process devices backend; one line
                    per call and result
  --verbose         also print the agent-facing catalog and every call,
                    result and confirmation as JSON
  --orpc-url URL    call a real oRPC server instead, e.g.
                    http://127.0.0.1:PORT/rpc (the peer in tests/orpc-peer:
                    `node tests/orpc-peer/server.mjs --port 0`), with
                    `authorization: Bearer user-token`
  --contract        print the console's surface contract (every binding
                    and view capability it registers, as canonical JSON)
                    and exit: the drift gate's input, committed as
                    examples/devices/surface.contract.json (docs/drift.md)";

/// `--verbose`: print the JSON of the catalog, calls, results, confirmations.
static VERBOSE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// `--contract`: print the surface contract and exit.
static CONTRACT: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The console's contract entry point: registers everything the console
/// registers (no backend is needed, nothing is called) and prints the
/// registry's contract.
fn print_contract() -> StepResult {
    let registry = SurfaceRegistry::new(api::authority());
    let view = DevicesView::default();
    let _registrations =
        app::register(&registry, &view).map_err(|e| format!("registration was refused: {e}"))?;
    say_raw!("{}", SurfaceContract::from_registry(&registry).to_json());
    Ok(())
}

fn verbose() -> bool {
    VERBOSE.load(std::sync::atomic::Ordering::Relaxed)
}

/// One line for a result: `ok` or `CODE (retry …)`.
fn outcome_line(result: &AgentInvocationResult) -> String {
    match result {
        AgentInvocationResult::Ok { output, .. } => {
            format!("ok {}", output.as_ref().unwrap_or(&Value::Null))
        }
        AgentInvocationResult::Error { error, .. } => {
            // In short: the confirmation's summary text and expiry are
            // left out (--verbose prints them).
            let mut details = error.details.clone();
            details.remove("expiresAt");
            details.remove("summary");
            let details = if details.is_empty() {
                String::new()
            } else {
                format!(" {}", serde_json::to_string(&details).unwrap_or_default())
            };
            format!(
                "{} (retry {}){details}",
                error.code,
                serde_json::to_value(error.retry)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default()
            )
        }
    }
}

/// The approver's credential the real peer's decision endpoint accepts.
const APPROVER_TOKEN: &str = "Bearer approver-token";

/// A sibling of the peer's RPC handler: `…/rpc` → `…/<path>` (the
/// governed gateway `/gateway`, the decision endpoint `/approvals/decide`).
fn sibling_url(rpc_url: &str, path: &str) -> String {
    let rpc_url = rpc_url.trim_end_matches('/');
    format!("{}/{path}", rpc_url.strip_suffix("/rpc").unwrap_or(rpc_url))
}

/// A step that did not go as scripted.
type StepResult<T = ()> = Result<T, String>;

fn ensure(condition: bool, message: impl FnOnce() -> String) -> StepResult {
    if condition {
        Ok(())
    } else {
        Err(message())
    }
}

fn pretty(value: &impl serde::Serialize) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|e| format!("<unserializable: {e}>"))
}

/// The error of `result`, which must have `code`.
fn expect_error(result: &AgentInvocationResult, code: ErrorCode) -> StepResult<AgentError> {
    match result {
        AgentInvocationResult::Error { error, .. } if error.code == code => Ok(error.clone()),
        other => Err(format!(
            "expected {code}; got {}",
            serde_json::to_string(other).unwrap_or_default()
        )),
    }
}

/// `rows` must be the four seed devices with their seed statuses.
fn ensure_seed(rows: &[Device]) -> StepResult {
    ensure(
        rows.iter()
            .map(|d| (d.id.as_str(), d.name.as_str(), d.status.as_str()))
            .eq([
                ("dev-1", "Lobby camera", "active"),
                ("dev-2", "Door sensor", "active"),
                ("dev-3", "Old router", "disabled"),
                ("dev-locked", "Core switch", "active"),
            ]),
        || {
            format!(
                "devices.list should return the four seed devices with their seed statuses: \
             expected dev-1 active, dev-2 active, dev-3 disabled, dev-locked active; got {} \
             (the peer keeps its state in memory: start a fresh one for every run)",
                rows.iter()
                    .map(|d| format!("{} {}", d.id, d.status))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        },
    )
}

/// The output of `result`, which must be a success.
fn expect_success(result: &AgentInvocationResult) -> StepResult<Value> {
    match result {
        AgentInvocationResult::Ok { output, .. } => Ok(output.clone().unwrap_or(Value::Null)),
        other => Err(format!(
            "expected success; got {}",
            serde_json::to_string(other).unwrap_or_default()
        )),
    }
}

impl Backend {
    fn describe(&self) -> String {
        match self {
            Backend::Embedded(_) => {
                "embedded in-process devices backend (--orpc-url URL to use a real oRPC server)"
                    .into()
            }
            Backend::Orpc { url, .. } => {
                format!(
                    "real oRPC server at {url} (create_orpc_agent_bridge + HttpOrpcClient; devices.purge through the governed bridge and the gateway at {})",
                    sibling_url(url, "gateway")
                )
            }
        }
    }

    /// The backend's governed gateway, with the requester's credential.
    fn gateway(&self) -> Arc<dyn CapabilityClient> {
        match self {
            Backend::Embedded(backend) => backend.clone(),
            Backend::Orpc { url, .. } => Arc::new(OrpcCapabilityClient::new(
                HttpOrpcClient::new(sibling_url(url, "gateway"))
                    .with_header("authorization", USER_TOKEN),
            )),
        }
    }

    /// The executor the registry runs procedures through: the governed
    /// bridge for what the gateway governs here (`devices.purge`, from its
    /// `describe`), the ordinary bridge for the rest.
    async fn bridge(&self, manifest: AgentManifest) -> StepResult<GovernedOrpcAgentBridge> {
        let gateway = self.gateway();
        let descriptors = gateway
            .describe(
                DescribeScope::ids(["devices.purge"]),
                CallOptions::default(),
            )
            .await
            .map_err(|e| format!("the gateway's describe failed: {e}"))?;
        let governed = create_orpc_agent_manifest(descriptors)
            .map_err(|e| format!("the gateway's descriptors are not a manifest: {e}"))?;
        Ok(create_governed_orpc_agent_bridge(
            GovernedBridgeOptions::new(gateway, governed).fallback(self.ordinary(manifest, &[])),
        ))
    }

    /// The application's decision endpoint (the approver's credential):
    /// the approval's status afterwards.
    async fn decide(&self, approval_id: &str, status: &str) -> StepResult<String> {
        match self {
            Backend::Embedded(backend) => backend
                .decide(approval_id, status)
                .map(|a| a.status.as_str().to_string()),
            Backend::Orpc { url, .. } => {
                let endpoint = sibling_url(url, "approvals/decide");
                let response = reqwest::Client::new()
                    .post(&endpoint)
                    .header("authorization", APPROVER_TOKEN)
                    .header("content-type", "application/json")
                    .body(json!({"approvalId": approval_id, "status": status}).to_string())
                    .send()
                    .await
                    .map_err(|e| format!("POST {endpoint} failed: {e}"))?;
                let code = response.status();
                let body = response.bytes().await.map_err(|e| e.to_string())?;
                let answer: Value = serde_json::from_slice(&body)
                    .map_err(|e| format!("POST {endpoint} answered {code} without JSON: {e}"))?;
                match answer["status"].as_str() {
                    Some(status) if code.is_success() => Ok(status.to_string()),
                    _ => Err(format!("POST {endpoint} answered {code}: {answer}")),
                }
            }
        }
    }
}

/// The application: its registry, its devices table, its backend and the
/// bridge its procedures run through.
struct App {
    registry: SurfaceRegistry,
    view: DevicesView,
    backend: Backend,
    bridge: GovernedOrpcAgentBridge,
    rendered_revision: std::sync::atomic::AtomicU64,
}

impl App {
    /// What a UI framework does after state changed: the selection feeds
    /// `describe()` and `when()`, so the app tells the registry the surface
    /// changed (a new `surfaceVersion`).
    fn render(&self) {
        let revision = self.view.revision();
        let previous = self
            .rendered_revision
            .swap(revision, std::sync::atomic::Ordering::SeqCst);
        if previous != revision {
            let version = self.registry.notify_changed();
            say!("[app] selection/filter changed -> surfaceVersion {version}");
        }
    }

    async fn reload(&self) -> StepResult {
        let rows = self.backend.load_devices().await?;
        self.view.set_rows(rows);
        self.render();
        say_raw!("{}", self.view.render());
        Ok(())
    }

    /// A click in the table.
    fn user_selects(&self, ids: &[&str]) -> StepResult {
        say!("[user] selects {ids:?} in the table");
        self.view
            .select(ids.iter().map(|s| s.to_string()).collect())
            .map_err(|unknown| format!("the table has no rows {unknown:?}"))?;
        self.render();
        say_raw!("{}", self.view.render());
        Ok(())
    }

    /// The effective input a `CONFIRMATION_REQUIRED` error's confirmation
    /// holds (what the server will receive), as the app's dialog shows it.
    fn held_input(&self, error: &AgentError) -> Value {
        error.details["confirmationId"]
            .as_str()
            .and_then(|id| self.registry.pending_confirmation(id))
            .map(|pending| pending.input)
            .unwrap_or(Value::Null)
    }

    /// The user approves in the app's own dialog; never a model tool.
    fn user_approves(&self, confirmation_id: &str) -> StepResult<String> {
        let pending = self
            .registry
            .pending_confirmation(confirmation_id)
            .ok_or_else(|| format!("no pending confirmation {confirmation_id}"))?;
        say!(
            "[app] confirmation dialog: {} with {}",
            pending.capability_id,
            serde_json::to_string(&pending.input).unwrap_or_default()
        );
        say!("[user] approves -> registry.confirm({confirmation_id:?})");
        let approved = self
            .registry
            .confirm(confirmation_id)
            .map_err(|e| format!("confirm failed: {e}"))?;
        if verbose() {
            say!("[app] approved in the registry:\n{}", pretty(&approved));
        }
        say!("[app] tells the agent {confirmation_id} is approved (single use; the registry holds the input it binds)");
        Ok(confirmation_id.to_string())
    }
}

/// The scripted agent: it only knows the snapshot it last took and calls
/// through `registry.invoke`, always naming the registration and the
/// surface version it acted on.
struct Agent {
    registry: SurfaceRegistry,
    consumer: AgentConsumer,
    calls: u32,
    snapshot: SurfaceSnapshot,
    /// Whether the first version change was explained (once is enough).
    explained: bool,
}

impl Agent {
    fn new(registry: SurfaceRegistry, consumer: AgentConsumer) -> Self {
        let snapshot = registry.snapshot(&consumer);
        Self {
            registry,
            consumer,
            calls: 0,
            snapshot,
            explained: false,
        }
    }

    /// Takes a fresh snapshot (the agent's tool list).
    fn discover(&mut self) -> &SurfaceSnapshot {
        let before = self.snapshot.surface_version;
        let old = std::mem::replace(&mut self.snapshot, self.registry.snapshot(&self.consumer));
        let now = self.snapshot.surface_version;
        if now == before {
            say!("[agent] takes a snapshot: surfaceVersion {now} (unchanged)");
            return &self.snapshot;
        }
        // What this snapshot found changed in availability: each such
        // change bumped the version once more, on top of the app's reports.
        let mut became = [Vec::new(), Vec::new()]; // [available, unavailable]
        for p in &self.snapshot.procedures {
            if let Some(was) = old
                .procedures
                .iter()
                .find(|o| o.procedure_id == p.procedure_id)
            {
                if was.available != p.available {
                    became[usize::from(!p.available)].push(p.procedure_id.as_str());
                }
            }
        }
        let observed: Vec<String> = became
            .iter()
            .zip(["available", "unavailable"])
            .filter(|(ids, _)| !ids.is_empty())
            .map(|(ids, state)| format!("{} became {state}", ids.join(" and ")))
            .collect();
        let observed = if observed.is_empty() {
            String::new()
        } else {
            format!("; this snapshot observed that {}", observed.join(", "))
        };
        if self.explained {
            say!("[agent] takes a snapshot: surfaceVersion {now} (was {before}{observed})");
        } else {
            self.explained = true;
            say!(
                "[agent] takes a snapshot: surfaceVersion {now} (was {before} at its last \
                 snapshot{observed}; the registry bumps the version on every registration, \
                 every change the app reports and every availability change a snapshot \
                 observes, so it can move by more than the app's reports)"
            );
        }
        &self.snapshot
    }

    /// A call to `capability_id` built from the last snapshot, with a fresh
    /// invocation id.
    fn invocation(&mut self, capability_id: &str, input: Value) -> StepResult<AgentInvocation> {
        let registration_id = if capability_id.starts_with("view:") {
            self.snapshot
                .components
                .iter()
                .find(|c| c.capabilities().any(|v| v.capability_id() == capability_id))
                .map(|c| c.registration_id.clone())
        } else {
            self.snapshot
                .procedures
                .iter()
                .find(|p| p.procedure_id == capability_id)
                .map(|p| p.registration_id.clone())
        }
        .ok_or_else(|| format!("{capability_id} is not in the agent's snapshot"))?;
        self.calls += 1;
        let mut invocation =
            AgentInvocation::new(format!("inv-{:02}", self.calls), capability_id.to_string());
        invocation.registration_id = Some(registration_id);
        invocation.surface_version = Some(self.snapshot.surface_version);
        invocation.input = input;
        Ok(invocation)
    }

    async fn call(&self, invocation: AgentInvocation) -> AgentInvocationResult {
        if verbose() {
            say!("-> agent call:\n{}", pretty(&invocation));
        } else {
            say!(
                "-> agent calls {} with {}{}",
                invocation.capability_id,
                invocation.input,
                if invocation.confirmation_id.is_some() {
                    " + the approved confirmationId"
                } else {
                    ""
                }
            );
        }
        let result = self.registry.invoke(invocation, &self.consumer).await;
        if verbose() {
            say!("<- result:\n{}", pretty(&result));
        } else {
            say!("<- {}", outcome_line(&result));
        }
        result
    }
}

/// The step under way, named by the failure message.
static CURRENT_STEP: std::sync::Mutex<String> = std::sync::Mutex::new(String::new());

fn step(n: u32, title: &str) {
    *CURRENT_STEP.lock().unwrap_or_else(|p| p.into_inner()) = format!("step {n} ({title})");
    say!("\n=== Step {n}: {title} ===");
}

fn passed(n: u32, what: &str) {
    say!("[ok] step {n}: {what}");
}

fn devices_of(output: &Value) -> StepResult<Vec<Device>> {
    serde_json::from_value(output["devices"].clone())
        .map_err(|e| format!("devices.list output has an unexpected shape ({e}): {output}"))
}

fn ids(devices: &[Device]) -> Vec<&str> {
    devices.iter().map(|d| d.id.as_str()).collect()
}

async fn run(backend: Backend) -> StepResult {
    let manifest = AgentManifest::from_json_str(api::MANIFEST_JSON)
        .map_err(|e| format!("the compiled-in manifest does not parse: {e}"))?;
    say!("agent-surface example: devices console");
    say!("backend:  {}", backend.describe());
    say!(
        "manifest: tests/fixtures/devices.manifest.json ({} procedures, digest {})",
        manifest.tools.len(),
        &api::MANIFEST_DIGEST[..16]
    );
    let unregistered: Vec<&str> = manifest
        .tools
        .keys()
        .map(String::as_str)
        .filter(|p| !app::REGISTERED.contains(p))
        .collect();
    say!(
        "          this console registers {} of them ({}); the agent sees only registered \
         procedures, so {} stay out of its catalog",
        app::REGISTERED.len(),
        app::REGISTERED.join(", "),
        unregistered.join(", ")
    );
    say!(
        "          dev-locked is a device the backend refuses to disable or purge \
         (FORBIDDEN); the script uses it where a call must not go through"
    );

    let registry = SurfaceRegistry::new(api::authority());
    let bridge = backend.bridge(manifest).await?;
    registry.set_procedure_executor(bridge.executor.clone());
    let app = App {
        registry: registry.clone(),
        view: DevicesView::default(),
        backend,
        bridge,
        rendered_revision: std::sync::atomic::AtomicU64::new(0),
    };
    let registrations = app::register(&registry, &app.view)
        .map_err(|e| format!("registration was refused: {e}"))?;
    say!(
        "[app] registers devices.table ({}: view:devices.table.select, view:devices.table.filter), \
         devices.list ({}, unbound), devices.disable ({}, bound to the selection, confirmation required), \
         devices.purge ({}, bound to the selection)",
        registrations.table.registration_id(),
        registrations.list.registration_id(),
        registrations.disable.registration_id(),
        registrations.purge.registration_id(),
    );
    say!("[app] loads the devices table");
    app.reload().await?;

    let mut agent = Agent::new(registry.clone(), app::consumer());

    // ---------------------------------------------------------------- 1
    step(1, "discovery");
    // The rows the app loaded must be the seed (the script's checks
    // depend on it): a reused peer is caught here, before any selection.
    ensure_seed(&app.view.visible_rows())?;
    app.user_selects(&["dev-1", "dev-2"])?;
    let snapshot = agent.discover().clone();
    let catalog = serde_json::to_value(&snapshot).map_err(|e| e.to_string())?;
    if verbose() {
        say!("agent-facing catalog:\n{}", pretty(&catalog));
    } else {
        say!(
            "[agent] sees {} procedures and {} view capabilities (--verbose prints the catalog's JSON)",
            snapshot.procedures.len(),
            snapshot.components.iter().map(|c| c.capabilities().count()).sum::<usize>()
        );
    }
    let procedure_ids: Vec<&str> = snapshot
        .procedures
        .iter()
        .map(|p| p.procedure_id.as_str())
        .collect();
    ensure(
        procedure_ids
            == [
                "domain:devices.list",
                "domain:devices.disable",
                "domain:devices.purge",
            ],
        || {
            format!("the catalog should list devices.list, .disable, .purge; it lists {procedure_ids:?}")
        },
    )?;
    let disable = &catalog["procedures"][1];
    ensure(
        disable["inputSchema"]["properties"] == json!({"reason": {"type": "string"}})
            && disable["inputSchema"]
                .get("required")
                .is_none_or(|r| r == &json!([])),
        || {
            format!(
                "devices.disable's agent schema should only have `reason`: {}",
                disable["inputSchema"]
            )
        },
    )?;
    ensure(
        disable["boundFields"]
            == json!([{"path": "deviceIds", "locked": true, "source": "ui-state"}])
            && disable["confirmation"] == "required"
            && disable["available"] == true,
        || {
            format!("devices.disable should be available, bound (locked deviceIds), confirmation required: {disable}")
        },
    )?;
    ensure(
        catalog["procedures"][2]["confirmation"] == "required"
            && catalog["procedures"][2]["effect"] == "destructive"
            && catalog["procedures"][0]["confirmation"] == "never",
        || "devices.purge should need confirmation (destructive floor), devices.list never".into(),
    )?;
    let views: Vec<String> = snapshot
        .components
        .iter()
        .flat_map(|c| c.capabilities().map(|v| v.capability_id().to_string()))
        .collect();
    ensure(
        views == ["view:devices.table.select", "view:devices.table.filter"],
        || format!("the table's view capabilities should be select and filter: {views:?}"),
    )?;
    let catalog_text = catalog.to_string();
    ensure(!catalog_text.contains("dev-1"), || {
        "the catalog leaks a bound value (dev-1): bindings must stay out of snapshots".into()
    })?;
    let call = agent.invocation("domain:devices.list", json!({}))?;
    let listed = devices_of(&expect_success(&agent.call(call).await)?)?;
    ensure_seed(&listed)?;
    passed(1, "catalog lists 3 procedures + 2 view capabilities; disable's schema hides the bound deviceIds; devices.list returned the 4 seed devices");

    // ---------------------------------------------------------------- 2
    step(2, "the agent tries to set the locked deviceIds");
    let call = agent.invocation(
        "domain:devices.disable",
        json!({"deviceIds": ["dev-locked"], "reason": "cleanup"}),
    )?;
    let error = expect_error(&agent.call(call).await, ErrorCode::InvalidInput)?;
    ensure(
        error.details.get("lockedFields") == Some(&json!(["deviceIds"])),
        || {
            format!(
                "INVALID_INPUT should name lockedFields [\"deviceIds\"]: {:?}",
                error.details
            )
        },
    )?;
    passed(
        2,
        "INVALID_INPUT with lockedFields [\"deviceIds\"]; nothing reached the backend",
    );

    // ---------------------------------------------------------------- 3
    step(3, "a call that needs the user's confirmation");
    let call = agent.invocation("domain:devices.disable", json!({"reason": "maintenance"}))?;
    let error = expect_error(&agent.call(call).await, ErrorCode::ConfirmationRequired)?;
    let confirmation_id = error.details["confirmationId"]
        .as_str()
        .ok_or("CONFIRMATION_REQUIRED without details.confirmationId")?
        .to_string();
    let summary_input = &app.held_input(&error);
    ensure(
        summary_input == &json!({"deviceIds": ["dev-1", "dev-2"], "reason": "maintenance"})
            && error.retry == Retry::WithConfirmation,
        || format!("the summary should show the selected ids dev-1, dev-2: {summary_input}"),
    )?;
    passed(
        3,
        "CONFIRMATION_REQUIRED; the summary shows the selected ids [\"dev-1\",\"dev-2\"]",
    );

    // ---------------------------------------------------------------- 4
    step(
        4,
        "the user approves; the agent retries with a fresh invocation id and the confirmationId",
    );
    let approved = app.user_approves(&confirmation_id)?;
    let mut call = agent.invocation("domain:devices.disable", json!({"reason": "maintenance"}))?;
    call.confirmation_id = Some(approved);
    let output = expect_success(&agent.call(call).await)?;
    ensure(output == json!({"disabled": ["dev-1", "dev-2"]}), || {
        format!("the backend should report dev-1 and dev-2 disabled: {output}")
    })?;
    say!("[app] reloads the table");
    app.reload().await?;
    let statuses: Vec<(String, String)> = app
        .view
        .visible_rows()
        .into_iter()
        .map(|d| (d.id, d.status))
        .collect();
    ensure(
        statuses
            .iter()
            .all(|(id, s)| (s == "disabled") == (id != "dev-locked")),
        || format!("after disabling, only dev-locked should be active: {statuses:?}"),
    )?;
    passed(4, "ok: the backend disabled [\"dev-1\",\"dev-2\"]");

    // ---------------------------------------------------------------- 5
    step(
        5,
        "the selection changes after approval: the old approval no longer applies",
    );
    app.user_selects(&["dev-locked"])?;
    agent.discover();
    let call = agent.invocation("domain:devices.disable", json!({}))?;
    let error = expect_error(&agent.call(call).await, ErrorCode::ConfirmationRequired)?;
    let confirmation_id = error.details["confirmationId"]
        .as_str()
        .ok_or("CONFIRMATION_REQUIRED without details.confirmationId")?
        .to_string();
    ensure(
        app.held_input(&error) == json!({"deviceIds": ["dev-locked"]}),
        || {
            format!(
                "the summary should show [\"dev-locked\"]: {}",
                error.details["summary"]
            )
        },
    )?;
    let stale_approval = app.user_approves(&confirmation_id)?;
    say!("[agent] changes the selection through the view capability before retrying");
    let call = agent.invocation("view:devices.table.select", json!({"deviceIds": ["dev-3"]}))?;
    let output = expect_success(&agent.call(call).await)?;
    ensure(output == json!({"selected": ["dev-3"]}), || {
        format!("view:devices.table.select should select dev-3: {output}")
    })?;
    app.render();
    say_raw!("{}", app.view.render());
    agent.discover();
    let mut call = agent.invocation("domain:devices.disable", json!({}))?;
    call.confirmation_id = Some(stale_approval);
    let error = expect_error(&agent.call(call).await, ErrorCode::ConfirmationInvalid)?;
    ensure(
        error.details.get("reason") == Some(&json!("mismatch")) && error.retry == Retry::No,
        || {
            format!(
                "CONFIRMATION_INVALID should say mismatch, retry no: {:?} {:?}",
                error.details, error.retry
            )
        },
    )?;
    let call = agent.invocation("domain:devices.disable", json!({}))?;
    let error = expect_error(&agent.call(call).await, ErrorCode::ConfirmationRequired)?;
    ensure(
        app.held_input(&error) == json!({"deviceIds": ["dev-3"]}),
        || {
            format!(
                "the new confirmation should show [\"dev-3\"]: {}",
                error.details["summary"]
            )
        },
    )?;
    let fresh_id = error.details["confirmationId"].as_str().unwrap_or_default();
    say!("[user] declines -> registry.reject({fresh_id:?})");
    registry
        .reject(fresh_id)
        .map_err(|e| format!("reject failed: {e}"))?;
    passed(5, "a confirmation approved for [\"dev-locked\"] is CONFIRMATION_INVALID (mismatch, retry no) once the selection is [\"dev-3\"]; a fresh call asks again with [\"dev-3\"]");

    // ---------------------------------------------------------------- 6
    step(6, "a stale surface version on a destructive procedure");
    let seen = agent.discover().surface_version;
    let purge = agent.invocation("domain:devices.purge", json!({}))?;
    app.user_selects(&["dev-1"])?;
    let current = registry.surface_version();
    let error = expect_error(&agent.call(purge).await, ErrorCode::StaleCapability)?;
    ensure(
        error.retry == Retry::AfterRefresh
            && error.details.get("reason") == Some(&json!("surface-version-mismatch"))
            && current > seen,
        || {
            format!("STALE_CAPABILITY should be after-refresh with reason surface-version-mismatch (the surface is at {current}): {error:?}")
        },
    )?;
    passed(6, &format!("STALE_CAPABILITY (after-refresh): the agent acted on surfaceVersion {seen}, the surface is at {current}"));

    // ---------------------------------------------------------------- 7
    step(
        7,
        "after a refresh: local confirmation, then the server's own approval",
    );
    agent.discover();
    let call = agent.invocation("domain:devices.purge", json!({}))?;
    let error = expect_error(&agent.call(call).await, ErrorCode::ConfirmationRequired)?;
    ensure(
        app.held_input(&error) == json!({"deviceIds": ["dev-1"]})
            && error.details["effect"] == "destructive",
        || {
            format!(
                "the purge confirmation should show [\"dev-1\"]: {}",
                error.details["summary"]
            )
        },
    )?;
    let confirmation_id = error.details["confirmationId"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let approved = app.user_approves(&confirmation_id)?;
    let mut call = agent.invocation("domain:devices.purge", json!({}))?;
    call.confirmation_id = Some(approved);
    // The backend holds the purge under this id.
    let held_id = call.invocation_id.clone();
    let error = expect_error(&agent.call(call).await, ErrorCode::DomainApprovalRequired)?;
    ensure(
        error.details.get("approvalId") == Some(&json!("appr-1"))
            && error.details.get("invocationId") == Some(&json!(held_id))
            && error.details.get("origin") == Some(&json!("server"))
            && error.details.contains_key("expiresAt")
            && error.retry == Retry::No,
        || {
            format!("DOMAIN_APPROVAL_REQUIRED should carry approvalId appr-1, the invocation id, origin server and expiresAt, retry no: {error:?}")
        },
    )?;
    let call = agent.invocation("domain:devices.list", json!({}))?;
    let listed = devices_of(&expect_success(&agent.call(call).await)?)?;
    ensure(
        ids(&listed) == ["dev-1", "dev-2", "dev-3", "dev-locked"],
        || format!("nothing may be purged before the server's approval: {listed:?}"),
    )?;
    passed(7, "the local confirmation passed, the server still answered DOMAIN_APPROVAL_REQUIRED (appr-1); nothing was purged");

    // ---------------------------------------------------------------- 8
    step(
        8,
        "a person approves appr-1; the host resumes the held purge through the backend",
    );
    let approval = app
        .bridge
        .get_approval("appr-1", CallOptions::default())
        .await
        .map_err(|e| format!("getApproval failed: {e}"))?
        .ok_or("the gateway has no approval appr-1")?;
    say!(
        "[approver page] getApproval(appr-1): {} {}, types {:?}, reasons {:?}, expires {}",
        approval.capability_id,
        approval.status.as_str(),
        approval.types,
        approval.reasons,
        approval.expires_at
    );
    say!("[approver] approves appr-1 at the application's decision endpoint (POST /approvals/decide, approver credential; never a model tool)");
    let decided = app.backend.decide("appr-1", "approved").await?;
    ensure(decided == "approved", || {
        format!("the decision endpoint should answer approved, got {decided:?}")
    })?;
    say!("[host] resumes {held_id} through the gateway's resumeApproval {{invocationId, approvalId}} with the requester's credential; the confirmed call is not sent again");
    let resume = || ResumeApprovalRequest::new(&held_id, "appr-1");
    let outcome = app.bridge.resume(resume()).await;
    let result = outcome.to_invocation_result("domain:devices.purge", registry.surface_version());
    if verbose() {
        say!("<- the run receives:\n{}", pretty(&result));
    } else {
        say!("<- the run receives {}", outcome_line(&result));
    }
    let output = expect_success(&result)?;
    ensure(output == json!({"purged": ["dev-1"]}), || {
        format!("the resumed purge should purge [\"dev-1\"]: {output}")
    })?;
    let again = app.bridge.resume(resume()).await;
    ensure(again == outcome, || {
        format!("a second resume must answer the recorded outcome: {again:?}")
    })?;
    let call = agent.invocation("domain:devices.list", json!({}))?;
    let listed = devices_of(&expect_success(&agent.call(call).await)?)?;
    ensure(ids(&listed) == ["dev-2", "dev-3", "dev-locked"], || {
        format!("dev-1 should be gone after the approved purge: {listed:?}")
    })?;
    passed(8, "approved by a person, resumed once through the gateway: the run received {\"purged\":[\"dev-1\"]}; a second resume answered the recorded outcome; dev-1 is gone");

    say!("\nAll 8 steps passed.");
    Ok(())
}

fn parse_args() -> Result<Option<String>, String> {
    let mut args = std::env::args().skip(1);
    let mut url = None;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--verbose" | "-v" => VERBOSE.store(true, std::sync::atomic::Ordering::Relaxed),
            "--contract" => CONTRACT.store(true, std::sync::atomic::Ordering::Relaxed),
            "--orpc-url" => {
                url = Some(args.next().ok_or("--orpc-url needs a URL")?);
            }
            "-h" | "--help" => return Err(String::new()),
            other => {
                if let Some(value) = other.strip_prefix("--orpc-url=") {
                    url = Some(value.to_string());
                } else {
                    return Err(format!("unknown argument `{other}`"));
                }
            }
        }
    }
    Ok(url)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let url = match parse_args() {
        Ok(url) => url,
        Err(message) if message.is_empty() => {
            say!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(message) => {
            eprintln!("error: {message}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    if CONTRACT.load(std::sync::atomic::Ordering::Relaxed) {
        return match print_contract() {
            Ok(()) => ExitCode::SUCCESS,
            Err(message) => {
                eprintln!("error: {message}");
                ExitCode::FAILURE
            }
        };
    }
    let backend = Backend::new(url);
    match run(backend).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            let at = CURRENT_STEP
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone();
            let at = if at.is_empty() {
                "setup".to_string()
            } else {
                at
            };
            eprintln!("\nFAILED at {at}: {message}");
            ExitCode::FAILURE
        }
    }
}
