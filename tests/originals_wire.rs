//! Golden tests of browser-session protocol 1 against the messages recorded
//! from agent-surface's own TypeScript session (`createBrowserSurfaceSession`,
//! `tests/fixtures/originals/session*`, MIT, © Wiseair S.r.l.), in both
//! directions:
//!
//! * **what this project emits**: a Rust page built like the recorded one
//!   (the same manifest, binding, contextual text and component) announces
//!   what the original announced and answers each recorded call with the
//!   recorded result;
//! * **what this project accepts**: the recorded calls are read by the Rust
//!   session, and the recorded announcements and results by the Rust agent
//!   host, which dispatches calls equal to the recorded ones.
//!
//! Run-dependent values were replaced by `<kind#n>` in the recordings; the
//! tests substitute this side's values for them (and back) by role: the
//! surface id, registration ids, confirmation ids, timestamps. One known
//! difference is named where it shows: a registration here holds one
//! component or one procedure binding, while one registration of the
//! original may hold a component and the procedures bound inside it, or
//! several procedures of a page. The wire shapes are the same; the
//! registration ids differ (two here where the original has one) and so
//! does the surface version, which counts registrations: the tests shift it
//! by the number of extra registrations (`Page::version_offset`).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use serde_json::{json, Map, Value};
use surface_runtime::bridge::{
    create_governed_orpc_agent_bridge, CallOptions, GovernedBridgeOptions, OrpcCallError,
    OrpcCapabilityClient, OrpcClient,
};
use surface_runtime::host::{
    AgentHost, AgentRun, AuthenticatedConnection, BrowserSurfaceAnnouncement, BrowserSurfaceCall,
    BrowserSurfaceIdentity, BrowserSurfaceResult, BrowserSurfaceSession,
    BrowserSurfaceSessionOptions, BrowserToHostMessage, KnownBuild, ResultDisposition,
    ToolCallRequest,
};
use surface_runtime::sync::BoxFuture;
use surface_runtime::{
    AgentConsumer, AgentManifest, AgentProcedureBinding, AgentProcedureExecutor, AgentProcedureRef,
    Authority, BoundField, BoundInput, ComponentDefinition, ErrorCode, ExecuteRequest,
    ExecutionError, ManualClock, RegistrationHandle, Retry, SurfaceRegistry, ViewCapability,
};

/// 2026-09-13T00:00:00.000Z, the recordings' fixed clock.
const RECORDED_NOW_MS: u64 = 1_789_257_600_000;

fn fixture(dir: &str, name: &str) -> Value {
    let path = format!(
        "{}/tests/fixtures/originals/{dir}/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Replaces every string equal to a key of `map` (anywhere in `value`,
/// keys of objects included) with its value.
fn substitute(value: &Value, map: &BTreeMap<String, String>) -> Value {
    match value {
        Value::String(s) => Value::String(map.get(s).cloned().unwrap_or_else(|| s.clone())),
        Value::Array(items) => Value::Array(items.iter().map(|v| substitute(v, map)).collect()),
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, v)| (k.clone(), substitute(v, map)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Sets every `expiresAt` to the recordings' `<timestamp>`.
fn mask_timestamps(value: &mut Value) {
    match value {
        Value::Object(m) => {
            for (k, v) in m.iter_mut() {
                if k == "expiresAt" {
                    *v = json!("<timestamp>");
                } else {
                    mask_timestamps(v);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(mask_timestamps),
        _ => {}
    }
}

/// Adds `by` (which may be negative) to every `surfaceVersion` string.
fn shift_versions(value: &mut Value, by: i64) {
    match value {
        Value::Object(m) => {
            for (k, v) in m.iter_mut() {
                match (k.as_str(), v.as_str()) {
                    ("surfaceVersion", Some(text)) => {
                        let n: i64 = text.parse().expect("a decimal surfaceVersion");
                        *v = json!((n + by).to_string());
                    }
                    _ => shift_versions(v, by),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| shift_versions(v, by)),
        _ => {}
    }
}

// ----- the page the recordings were made with ----------------------------------------------

/// `devices.disable` with `deviceIds` bound from the selection and locked.
struct Selected(Vec<String>);

impl BoundInput for Selected {
    type Input = Value;
    const PROCEDURE: &'static str = "devices.disable";
    fn bound_fields() -> &'static [BoundField] {
        &[BoundField {
            name: "deviceIds",
            locked: true,
        }]
    }
    fn to_bound_json(&self) -> Result<Map<String, Value>, serde_json::Error> {
        let mut m = Map::new();
        m.insert("deviceIds".into(), serde_json::to_value(&self.0)?);
        Ok(m)
    }
}

/// `devices.purge` with `deviceIds` bound from the selection and locked.
struct SelectedForPurge(Vec<String>);

impl BoundInput for SelectedForPurge {
    type Input = Value;
    const PROCEDURE: &'static str = "devices.purge";
    fn bound_fields() -> &'static [BoundField] {
        Selected::bound_fields()
    }
    fn to_bound_json(&self) -> Result<Map<String, Value>, serde_json::Error> {
        Selected(self.0.clone()).to_bound_json()
    }
}

/// The recorded app's backend for the plain sessions: `{disabled: n}`.
struct Backend(Mutex<Vec<Value>>);

impl AgentProcedureExecutor for Backend {
    fn execute(&self, request: ExecuteRequest) -> BoxFuture<'_, Result<Value, ExecutionError>> {
        let n = request.input["deviceIds"].as_array().map_or(0, Vec::len);
        self.0.lock().unwrap().push(request.input);
        Box::pin(std::future::ready(Ok(json!({ "disabled": n }))))
    }
}

fn plain_manifest() -> AgentManifest {
    AgentManifest::from_json_str(&json!({"tools": {"devices.disable": {
        "description": "Disable the given devices",
        "inputSchema": {"type": "object",
            "properties": {"deviceIds": {"type": "array", "items": {"type": "string"}, "minItems": 1},
                           "reason": {"type": "string"}},
            "required": ["deviceIds"], "additionalProperties": false},
        "effect": "server-mutation"}}}).to_string())
    .expect("the recorded app's manifest")
}

fn governed_manifest() -> AgentManifest {
    AgentManifest::from_json_str(&fixture("session-governed", "governed.manifest.json").to_string())
        .expect("the manifest the original built from describe")
}

fn identity() -> BrowserSurfaceIdentity {
    BrowserSurfaceIdentity::new("console", "build-1", "session-1", "tab-1")
}

/// A Rust page like the recorded one: registry, selection, session.
struct Page {
    registry: SurfaceRegistry,
    selection: Arc<Mutex<Vec<String>>>,
    session: BrowserSurfaceSession,
    /// Recorded placeholder → this page's value, by role.
    ids: BTreeMap<String, String>,
    /// This page's surface versions minus the recording's (the extra
    /// registrations, see the module docs).
    version_offset: i64,
    _handles: Vec<RegistrationHandle>,
}

fn note(selection: &Arc<Mutex<Vec<String>>>) -> impl Fn() -> String + Send + Sync + 'static {
    let selection = selection.clone();
    move || {
        format!(
            "Currently bound to the {} selected device(s)",
            selection.lock().unwrap().len()
        )
    }
}

fn disable_binding(
    authority: &Authority,
    selection: &Arc<Mutex<Vec<String>>>,
) -> AgentProcedureBinding {
    let reference: AgentProcedureRef<Value, Value> =
        AgentProcedureRef::from_authority(authority, "devices.disable").unwrap();
    let bound = selection.clone();
    AgentProcedureBinding::new(reference)
        .bind(move || Selected(bound.lock().unwrap().clone()))
        .describe(note(selection))
}

fn registry(manifest: AgentManifest) -> SurfaceRegistry {
    SurfaceRegistry::builder(Authority::from_manifest(manifest))
        .clock(Arc::new(ManualClock::new(RECORDED_NOW_MS)))
        .build()
}

fn session(registry: &SurfaceRegistry) -> BrowserSurfaceSession {
    BrowserSurfaceSession::new(
        BrowserSurfaceSessionOptions::new(
            registry.clone(),
            identity(),
            AgentConsumer::embedded("user-1"),
        )
        .clock(Arc::new(ManualClock::new(RECORDED_NOW_MS))),
    )
}

/// The page of `originals/session`: one reference to `devices.disable`.
fn plain_page() -> (Page, Arc<Backend>) {
    let registry = registry(plain_manifest());
    let backend = Arc::new(Backend(Mutex::default()));
    registry.set_procedure_executor(backend.clone());
    let selection = Arc::new(Mutex::new(vec!["d1".to_string()]));
    let handle = registry
        .register_procedure(disable_binding(registry.authority(), &selection))
        .unwrap();
    let ids = BTreeMap::from([(
        "<registrationId#1>".into(),
        handle.registration_id().to_string(),
    )]);
    let page = Page::start(registry, selection, ids, 0, vec![handle]);
    (page, backend)
}

// ----- the plain session: what the Rust page emits -----------------------------------------

impl Page {
    /// A page over `registry` whose session starts now; `ids` maps the
    /// recording's placeholders to this page's values (the surface id is
    /// added here).
    fn start(
        registry: SurfaceRegistry,
        selection: Arc<Mutex<Vec<String>>>,
        mut ids: BTreeMap<String, String>,
        version_offset: i64,
        handles: Vec<RegistrationHandle>,
    ) -> Self {
        ids.insert("<surfaceId#1>".into(), registry.surface_id().to_string());
        let session = session(&registry);
        Page {
            registry,
            selection,
            session,
            ids,
            version_offset,
            _handles: handles,
        }
    }

    /// `as_recorded`, with the registration id kept under `alias` written
    /// back as the recording's `<registrationId#1>` (one registration of
    /// the original holds what two hold here).
    fn as_recorded_as(&self, value: &Value, alias: &str) -> Value {
        let back = BTreeMap::from([(alias.to_string(), "<registrationId#1>".to_string())]);
        substitute(&self.as_recorded(value), &back)
    }

    /// A recorded call aimed at the registration kept under `alias`, with
    /// `confirmation_id` for the recording's `<confirmationId#1>`.
    fn recorded_call_at(
        &self,
        dir: &str,
        case: &str,
        alias: &str,
        confirmation_id: Option<&str>,
    ) -> String {
        let mut ids = self.ids.clone();
        ids.insert("<registrationId#1>".into(), self.ids[alias].clone());
        if let Some(id) = confirmation_id {
            ids.insert("<confirmationId#1>".into(), id.to_string());
        }
        self.ours(&fixture(dir, &format!("{case}.call.json")), &ids)
    }

    /// `value` with this page's values put back as the recordings' placeholders.
    fn as_recorded(&self, value: &Value) -> Value {
        let back: BTreeMap<String, String> = self
            .ids
            .iter()
            .map(|(k, v)| (v.clone(), k.clone()))
            .collect();
        let mut v = substitute(value, &back);
        mask_timestamps(&mut v);
        shift_versions(&mut v, -self.version_offset);
        v
    }

    /// A recorded message with this page's values in place of the
    /// placeholders, as text.
    fn ours(&self, recorded: &Value, ids: &BTreeMap<String, String>) -> String {
        let mut v = substitute(recorded, ids);
        shift_versions(&mut v, self.version_offset);
        v.to_string()
    }

    /// A recorded call with this page's values in place of the placeholders.
    fn recorded_call(&self, dir: &str, case: &str) -> String {
        self.ours(&fixture(dir, &format!("{case}.call.json")), &self.ids)
    }

    /// The selection changes to `ids`: the application tells the registry.
    fn select(&self, ids: &[&str]) {
        *self.selection.lock().unwrap() = ids.iter().map(|s| s.to_string()).collect();
        self.registry.notify_changed();
    }
}

/// The cases of a recorded session, in the order the original ran them.
const CASES: [&str; 9] = [
    "valid",
    "replay",
    "replay-changed-input",
    "wrong-session",
    "stale-version",
    "stale-registration",
    "locked-field",
    "invalid-call",
    "wrong-connection",
];

async fn answers_every_recorded_call(page: &Page, dir: &str) {
    for case in CASES {
        let result = page
            .session
            .invoke_json(&page.recorded_call(dir, case))
            .await;
        let ours = page.as_recorded(&serde_json::to_value(&result).unwrap());
        assert_eq!(ours, fixture(dir, &format!("{case}.result.json")), "{case}");
    }
}

async fn after_disconnect(page: &Page, dir: &str) {
    page.session.disconnect();
    assert_eq!(
        serde_json::to_value(page.session.announcement()).unwrap(),
        fixture(dir, "announcement.after-disconnect.json")
    );
    let result = page
        .session
        .invoke_json(&page.recorded_call(dir, "after-disconnect"))
        .await;
    assert_eq!(
        page.as_recorded(&serde_json::to_value(&result).unwrap()),
        fixture(dir, "after-disconnect.result.json")
    );
}

#[tokio::test]
async fn a_rust_page_announces_and_answers_as_the_original_session() {
    let (page, backend) = plain_page();
    let connect = page.session.connect("connection-1").unwrap();
    assert_eq!(
        page.as_recorded(&serde_json::to_value(&connect).unwrap()),
        fixture("session", "connect.announcement.json")
    );
    let announced = Arc::new(Mutex::new(Vec::new()));
    let sink = announced.clone();
    let _sub = page
        .session
        .subscribe(move |a| sink.lock().unwrap().push(serde_json::to_value(a).unwrap()))
        .unwrap();
    page.select(&["d1", "d2"]);
    let last = announced
        .lock()
        .unwrap()
        .last()
        .cloned()
        .expect("announced");
    assert_eq!(
        page.as_recorded(&last),
        fixture("session", "subscribe.announcement.json")
    );
    answers_every_recorded_call(&page, "session").await;
    // The backend received what the original's did, once.
    assert_eq!(
        Value::Array(backend.0.lock().unwrap().clone()),
        fixture("session", "domainCalls.json")
    );
    after_disconnect(&page, "session").await;
}

// ----- the plain session: what the Rust host accepts ---------------------------------------

/// Concrete values for the recordings' placeholders, as a TypeScript page
/// would have sent them.
fn typescript_ids() -> BTreeMap<String, String> {
    BTreeMap::from([
        ("<surfaceId#1>".into(), "surf_ts_7f3a".into()),
        ("<registrationId#1>".into(), "reg_ts_1".into()),
        ("<confirmationId#1>".into(), "conf_ts_1".into()),
    ])
}

fn host_for(manifest: AgentManifest) -> AgentHost {
    AgentHost::new().with_known_build(KnownBuild::new(
        "console",
        "build-1",
        Authority::from_manifest(manifest),
    ))
}

fn connection() -> AuthenticatedConnection {
    AuthenticatedConnection::new("connection-1", "session-1", "user-1")
}

/// The Rust host accepts `dir`'s recorded announcements (connect, then
/// subscribe) and starts run `run-1` on the tab.
fn host_with_typescript_page(dir: &str, manifest: AgentManifest) -> AgentHost {
    let host = host_for(manifest);
    let ids = typescript_ids();
    for name in ["connect.announcement.json", "subscribe.announcement.json"] {
        let announcement: BrowserSurfaceAnnouncement =
            serde_json::from_value(substitute(&fixture(dir, name), &ids))
                .unwrap_or_else(|e| panic!("{dir}/{name} does not parse: {e}"));
        host.accept_announcement(&connection(), &announcement)
            .unwrap_or_else(|e| panic!("{dir}/{name} refused: {e}"));
    }
    host.start_run(AgentRun {
        run_id: "run-1".into(),
        session_id: "session-1".into(),
        tab_id: Some("tab-1".into()),
        kind: surface_runtime::ConsumerKind::Embedded,
    })
    .unwrap();
    host
}

/// The host dispatches the recorded `case` call and accepts the recorded
/// result as its completion.
fn host_round_trip(host: &AgentHost, dir: &str, case: &str, capability_id: &str) {
    let ids = typescript_ids();
    let recorded_call = substitute(&fixture(dir, &format!("{case}.call.json")), &ids);
    let invocation = &recorded_call["invocation"];
    let call = host
        .dispatch(ToolCallRequest::new(
            "run-1",
            recorded_call["toolCallId"].as_str().unwrap(),
            invocation["invocationId"].as_str().unwrap(),
            capability_id,
            invocation["input"].clone(),
        ))
        .unwrap();
    assert_eq!(
        serde_json::to_value(&call).unwrap(),
        recorded_call,
        "{case}"
    );
    let recorded_result = substitute(&fixture(dir, &format!("{case}.result.json")), &ids);
    let result: BrowserSurfaceResult = serde_json::from_value(recorded_result.clone()).unwrap();
    match host.accept_result(&connection(), &result).unwrap() {
        ResultDisposition::Completed(done) => {
            assert_eq!(
                serde_json::to_value(&done.result).unwrap(),
                recorded_result["result"]
            );
        }
        other => panic!("{case}: expected a completion, got {other:?}"),
    }
}

#[test]
fn a_rust_host_accepts_a_typescript_page_and_dispatches_its_calls() {
    let host = host_with_typescript_page("session", plain_manifest());
    host_round_trip(&host, "session", "valid", "domain:devices.disable");
    // An error result of the original's (the locked field) is read as the
    // original wrote it.
    host_round_trip(&host, "session", "locked-field", "domain:devices.disable");
}

// ----- lone surrogates: text JavaScript writes and Rust strings cannot hold -----------------

/// `text` with its one `"target"` string written as `lone` (a JSON escape
/// sequence), as `JSON.stringify` writes a JavaScript string cut in the
/// middle of an emoji.
fn with_lone_surrogate(text: &str, target: &str, lone: &str) -> String {
    let quoted = format!("\"{target}\"");
    assert_eq!(text.matches(&quoted).count(), 1, "{text}");
    text.replace(&quoted, &format!("\"{lone}\""))
}

#[tokio::test]
async fn a_recorded_call_with_a_lone_surrogate_is_an_invalid_call_echoing_its_ids() {
    // The original runs it (its strings hold lone surrogates); no Rust
    // string can, so the call is refused, never run with altered input —
    // answered as the recorded invalid call was, with this call's ids, so
    // the host can match the answer to its pending tool call.
    let (page, backend) = plain_page();
    page.session.connect("connection-1").unwrap();
    page.select(&["d1", "d2"]);
    let text = with_lone_surrogate(
        &page.recorded_call("session", "valid"),
        "maintenance",
        r"maintenance \ud83d",
    );
    let result = page.session.invoke_json(&text).await;
    let mut expected = fixture("session", "invalid-call.result.json");
    expected["runId"] = json!("run-1");
    expected["toolCallId"] = json!("tool-invocation-1");
    expected["invocationId"] = json!("invocation-1");
    assert_eq!(
        page.as_recorded(&serde_json::to_value(&result).unwrap()),
        expected
    );
    assert!(backend.0.lock().unwrap().is_empty());
    // The call itself, as recorded, then runs.
    let result = page
        .session
        .invoke_json(&page.recorded_call("session", "valid"))
        .await;
    assert_eq!(
        page.as_recorded(&serde_json::to_value(&result).unwrap()),
        fixture("session", "valid.result.json")
    );
}

#[test]
fn a_rust_host_reads_a_typescript_result_with_a_lone_surrogate_as_u_fffd() {
    let host = host_with_typescript_page("session", plain_manifest());
    let ids = typescript_ids();
    let recorded_call = substitute(&fixture("session", "valid.call.json"), &ids);
    let invocation = &recorded_call["invocation"];
    host.dispatch(ToolCallRequest::new(
        "run-1",
        recorded_call["toolCallId"].as_str().unwrap(),
        invocation["invocationId"].as_str().unwrap(),
        "domain:devices.disable",
        invocation["input"].clone(),
    ))
    .unwrap();
    // The recorded result, its output a string cut in the middle of an
    // emoji, as the TypeScript page's `JSON.stringify` writes it.
    let mut recorded = substitute(&fixture("session", "valid.result.json"), &ids);
    recorded["result"]["output"] = json!({"note": "LONE"});
    let text = with_lone_surrogate(&recorded.to_string(), "LONE", r"ok\ud83d");
    assert!(serde_json::from_str::<BrowserSurfaceResult>(&text).is_err());
    let BrowserToHostMessage::Result(result) = BrowserToHostMessage::from_json(&text).unwrap()
    else {
        panic!("a result: {text}")
    };
    match host.accept_result(&connection(), &result).unwrap() {
        ResultDisposition::Completed(done) => {
            let mut expected = recorded["result"].clone();
            expected["output"] = json!({"note": "ok\u{FFFD}"});
            assert_eq!(serde_json::to_value(&done.result).unwrap(), expected);
        }
        other => panic!("expected a completion, got {other:?}"),
    }
}

#[test]
fn the_rust_session_reads_every_recorded_call_and_the_host_every_recorded_result() {
    for dir in ["session", "session-component", "session-governed"] {
        let ids = typescript_ids();
        let dir_path = format!(
            "{}/tests/fixtures/originals/{dir}",
            env!("CARGO_MANIFEST_DIR")
        );
        for entry in std::fs::read_dir(&dir_path).unwrap() {
            let name = entry.unwrap().file_name().into_string().unwrap();
            let value = substitute(&fixture(dir, &name), &ids);
            if name.ends_with(".call.json") && name != "invalid-call.call.json" {
                serde_json::from_value::<BrowserSurfaceCall>(value)
                    .unwrap_or_else(|e| panic!("{dir}/{name}: {e}"));
            } else if name.ends_with(".result.json") {
                serde_json::from_value::<BrowserSurfaceResult>(value)
                    .unwrap_or_else(|e| panic!("{dir}/{name}: {e}"));
            }
        }
    }
    // The recorded invalid call (a number for `runId`) is not a call.
    let invalid = fixture("session", "invalid-call.call.json");
    assert!(serde_json::from_value::<BrowserSurfaceCall>(invalid).is_err());
}

#[test]
fn every_code_and_retry_of_the_originals_matrix_is_known() {
    let matrix = fixture(".", "error-matrix.json");
    let codes = matrix["codes"].as_object().unwrap();
    assert_eq!(codes.len(), 16);
    for (name, row) in codes {
        let code: ErrorCode = serde_json::from_value(json!(name)).unwrap();
        assert!(ErrorCode::KNOWN.contains(&code), "{name}");
        assert_eq!(code.as_str(), name);
        let retries: Vec<Retry> = row["retry"]
            .as_array()
            .unwrap()
            .iter()
            .map(|retry| {
                serde_json::from_value(retry.clone())
                    .unwrap_or_else(|e| panic!("{name}: retry {retry}: {e}"))
            })
            .collect();
        // The table the pipeline brings every error within is the matrix.
        assert_eq!(code.retries(), retries.as_slice(), "{name}");
        let keys: Vec<&str> = row["details"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| k.as_str().unwrap())
            .collect();
        assert_eq!(code.detail_keys(), keys.as_slice(), "{name}");
    }
    // Beside the matrix: the seeds' two domain codes.
    assert_eq!(ErrorCode::KNOWN.len(), 18);
}

// ----- the session with a component ---------------------------------------------------------

/// The recorded app's `devices.table`: `readState`, `selectRows`,
/// `clearSelection` (its table selection is empty; the bound ids come from
/// the app's own selection).
fn devices_table(recorded: &Value) -> ComponentDefinition {
    let observation = &recorded["observations"][0];
    let select = &recorded["actions"][0];
    let clear = &recorded["actions"][1];
    let table_selection: Arc<Mutex<Vec<String>>> = Arc::default();
    let selected = table_selection.clone();
    ComponentDefinition::new("devices.table", "default")
        .description(recorded["description"].as_str().unwrap())
        .capability(ViewCapability::observation(
            "readState",
            observation["description"].as_str().unwrap(),
            observation["outputSchema"].clone(),
            || async { Ok(json!({"visibleRows": [], "selectedIds": [], "sorting": {}})) },
        ))
        .capability(
            ViewCapability::with_schema(
                "selectRows",
                select["description"].as_str().unwrap(),
                select["inputSchema"].clone(),
                |_input| async { Ok(Value::Null) },
            )
            .idempotent(false)
            .reversible(true),
        )
        .capability(
            ViewCapability::with_schema(
                "clearSelection",
                clear["description"].as_str().unwrap(),
                clear["inputSchema"].clone(),
                |_input| async { Ok(Value::Null) },
            )
            .when(move || !selected.lock().unwrap().is_empty())
            .unavailable_reason("No rows are selected"),
        )
}

/// The page of `originals/session-component`.
fn component_page() -> (Page, Arc<Backend>) {
    let registry = registry(plain_manifest());
    let backend = Arc::new(Backend(Mutex::default()));
    registry.set_procedure_executor(backend.clone());
    let recorded = fixture("session-component", "connect.announcement.json");
    let table = registry
        .register_component(devices_table(&recorded["snapshot"]["components"][0]))
        .unwrap();
    let selection = Arc::new(Mutex::new(vec!["d1".to_string()]));
    let disable = registry
        .register_procedure(disable_binding(registry.authority(), &selection).context(&table))
        .unwrap();
    // The original gives a procedure bound inside a component the
    // component's registration id; this project gives it its own. Both are
    // `<registrationId#1>` in the recording.
    let ids = BTreeMap::from([
        (
            "<registrationId#1>".into(),
            disable.registration_id().to_string(),
        ),
        (TABLE.into(), table.registration_id().to_string()),
    ]);
    let page = Page::start(registry, selection, ids, 1, vec![table, disable]);
    (page, backend)
}

/// Where the component's own registration id is kept in `Page::ids`.
const TABLE: &str = "<componentRegistrationId#1>";

#[tokio::test]
async fn a_rust_page_with_a_component_announces_observations_and_actions_as_the_original() {
    let (page, backend) = component_page();
    let connect = page.session.connect("connection-1").unwrap();
    assert_eq!(
        page.as_recorded_as(&serde_json::to_value(&connect).unwrap(), TABLE),
        fixture("session-component", "connect.announcement.json")
    );
    page.select(&["d1", "d2"]);
    let announcement = page.session.announcement().unwrap();
    assert_eq!(
        page.as_recorded_as(&serde_json::to_value(&announcement).unwrap(), TABLE),
        fixture("session-component", "subscribe.announcement.json")
    );
    answers_every_recorded_call(&page, "session-component").await;
    // A view action: a void success has no `output`.
    let result = page
        .session
        .invoke_json(&page.recorded_call_at("session-component", "view-action", TABLE, None))
        .await;
    assert_eq!(
        page.as_recorded_as(&serde_json::to_value(&result).unwrap(), TABLE),
        fixture("session-component", "view-action.result.json")
    );
    assert_eq!(
        Value::Array(backend.0.lock().unwrap().clone()),
        fixture("session-component", "domainCalls.json")
    );
    after_disconnect(&page, "session-component").await;
}

#[test]
fn a_rust_host_accepts_a_typescript_page_with_a_component() {
    let host = host_with_typescript_page("session-component", plain_manifest());
    host_round_trip(
        &host,
        "session-component",
        "valid",
        "domain:devices.disable",
    );
    host_round_trip(
        &host,
        "session-component",
        "view-action",
        "view:devices.table.selectRows",
    );
}

// ----- the governed session -------------------------------------------------------------------

/// Concrete values for the gateway's placeholders (the bridge passes only
/// safe identifiers on to the agent, and `<approvalId#1>` is not one).
fn gateway_ids() -> BTreeMap<String, String> {
    BTreeMap::from([
        ("<approvalId#1>".into(), "appr_ts_1".into()),
        ("<executionId#1>".into(), "exec_ts_1".into()),
        ("<executionId#2>".into(), "exec_ts_2".into()),
        ("<timestamp>".into(), "2026-09-13T00:15:00.000Z".into()),
    ])
}

/// The capability gateway as the original session met it: each `invoke`
/// answered with the outcome `domainCalls.json` recorded for its
/// capability; every request kept.
struct RecordedGateway {
    calls: Value,
    requests: Mutex<Vec<(String, Value)>>,
}

impl OrpcClient for RecordedGateway {
    fn call<'a>(
        &'a self,
        path: &'a str,
        input: Option<Value>,
        _options: CallOptions,
    ) -> BoxFuture<'a, Result<Value, OrpcCallError>> {
        let input = input.unwrap_or(Value::Null);
        self.requests
            .lock()
            .unwrap()
            .push((path.to_string(), input.clone()));
        let outcome = self
            .calls
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["capabilityId"] == input["capabilityId"])
            .map(|c| substitute(&c["outcome"], &gateway_ids()))
            .expect("a recorded call of this capability");
        Box::pin(std::future::ready(Ok(outcome)))
    }
}

/// The page of `originals/session-governed`: `devices.disable` and
/// `devices.purge`, both bound to the selection, through the governed
/// bridge.
fn governed_page() -> (Page, Arc<RecordedGateway>) {
    let manifest = governed_manifest();
    let registry = registry(manifest.clone());
    let gateway = Arc::new(RecordedGateway {
        calls: fixture("session-governed", "domainCalls.json"),
        requests: Mutex::default(),
    });
    let client = OrpcCapabilityClient::new(gateway.clone());
    let bridge =
        create_governed_orpc_agent_bridge(GovernedBridgeOptions::new(Arc::new(client), manifest));
    registry.set_procedure_executor(bridge.executor.clone());
    let selection = Arc::new(Mutex::new(vec!["d1".to_string()]));
    let disable = registry
        .register_procedure(disable_binding(registry.authority(), &selection))
        .unwrap();
    let purge_ref: AgentProcedureRef<Value, Value> =
        AgentProcedureRef::from_authority(registry.authority(), "devices.purge").unwrap();
    let bound = selection.clone();
    let purge = registry
        .register_procedure(
            AgentProcedureBinding::new(purge_ref)
                .bind(move || SelectedForPurge(bound.lock().unwrap().clone())),
        )
        .unwrap();
    let mut ids = BTreeMap::from([
        (
            "<registrationId#1>".into(),
            disable.registration_id().to_string(),
        ),
        (PURGE.into(), purge.registration_id().to_string()),
    ]);
    ids.extend(gateway_ids());
    let page = Page::start(registry, selection, ids, 1, vec![disable, purge]);
    (page, gateway)
}

/// Where the purge reference's registration id is kept in `Page::ids`.
const PURGE: &str = "<purgeRegistrationId#1>";

#[tokio::test]
async fn a_rust_page_on_the_governed_bridge_answers_as_the_original_session() {
    let (page, gateway) = governed_page();
    let connect = page.session.connect("connection-1").unwrap();
    assert_eq!(
        page.as_recorded_as(&serde_json::to_value(&connect).unwrap(), PURGE),
        fixture("session-governed", "connect.announcement.json")
    );
    page.select(&["d1", "d2"]);
    let announcement = page.session.announcement().unwrap();
    assert_eq!(
        page.as_recorded_as(&serde_json::to_value(&announcement).unwrap(), PURGE),
        fixture("session-governed", "subscribe.announcement.json")
    );
    answers_every_recorded_call(&page, "session-governed").await;
    governed_purge(&page).await;
    // What the bridge sent the gateway is what the TypeScript bridge sent.
    let sent: Vec<Value> = gateway
        .requests
        .lock()
        .unwrap()
        .iter()
        .map(|(path, input)| {
            assert_eq!(path, "invoke");
            input.clone()
        })
        .collect();
    let recorded: Vec<Value> = fixture("session-governed", "domainCalls.json")
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let mut request = c["options"].clone();
            request["capabilityId"] = c["capabilityId"].clone();
            request["input"] = c["input"].clone();
            request
        })
        .collect();
    assert_eq!(sent, recorded);
}

/// The purge: a local confirmation first, approved in the page, then the
/// server's own approval (`DOMAIN_APPROVAL_REQUIRED`).
async fn governed_purge(page: &Page) {
    let asked = page
        .session
        .invoke_json(&page.recorded_call_at(
            "session-governed",
            "domain-approval.local-confirmation",
            PURGE,
            None,
        ))
        .await;
    let asked = serde_json::to_value(&asked).unwrap();
    let confirmation_id = asked["result"]["error"]["details"]["confirmationId"]
        .as_str()
        .expect("a local confirmation")
        .to_string();
    let mut ids = page.ids.clone();
    ids.insert("<confirmationId#1>".into(), confirmation_id.clone());
    let back: BTreeMap<String, String> = ids.into_iter().map(|(k, v)| (v, k)).collect();
    assert_eq!(
        page.as_recorded_as(&substitute(&asked, &back), PURGE),
        fixture(
            "session-governed",
            "domain-approval.local-confirmation.result.json"
        )
    );
    page.registry.confirm(&confirmation_id).unwrap();
    let held = page
        .session
        .invoke_json(&page.recorded_call_at(
            "session-governed",
            "domain-approval",
            PURGE,
            Some(&confirmation_id),
        ))
        .await;
    assert_eq!(
        page.as_recorded_as(&serde_json::to_value(&held).unwrap(), PURGE),
        fixture("session-governed", "domain-approval.result.json")
    );
}

#[test]
fn a_rust_host_accepts_a_typescript_page_on_the_governed_bridge() {
    let host = host_with_typescript_page("session-governed", governed_manifest());
    host_round_trip(&host, "session-governed", "valid", "devices.disable");
}
