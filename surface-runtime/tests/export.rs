//! The export of snapshots as agent tools (docs/agents.md): golden files of
//! every target for the devices example and the zod/oRPC construct
//! manifests, the strict-mode rules on every strict schema, strict calls
//! mapped back to the original input, and calls and results through a real
//! registry.
//!
//! Golden files live in `tests/golden/export/`; `UPDATE_GOLDEN=1 cargo test
//! -p surface-runtime --test export` rewrites them (review the diff).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::{json, Map, Value};
use surface_runtime::export::strict::check_strict_schema;
use surface_runtime::export::{
    ExportError, ExportOptions, OpenAiMode, StrictLimits, ToolCall, ToolCallError, ToolCatalog,
    ToolDescriptor, ToolResultText, ToolRoute, ToolSource,
};
use surface_runtime::host::{BrowserReference, BrowserTool};
use surface_runtime::snapshot::{ComponentContext, ComponentDescriptor};
use surface_runtime::sync::BoxFuture;
use surface_runtime::{
    AgentConsumer, AgentError, AgentInvocationResult, AgentManifest, AgentProcedureBinding,
    AgentProcedureExecutor, AgentProcedureRef, Authority, BoundField, BoundInput,
    ComponentDefinition, ConfirmationLevel, ErrorCode, ExecuteRequest, ExecutionError,
    RegistrationHandle, Retry, SurfaceRegistry, ViewCapability,
};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn manifest(path: &str) -> AgentManifest {
    let text = std::fs::read_to_string(repo().join(path)).expect("fixture readable");
    AgentManifest::from_json_str(&text).expect("fixture manifest valid")
}

fn procedure(authority: &Authority, path: &str) -> AgentProcedureRef<Value, Value> {
    AgentProcedureRef::from_authority(authority, path).expect("path in manifest")
}

/// Output JSON of every call: `{"echo": input}`.
struct Echo(Mutex<Vec<Value>>);

impl AgentProcedureExecutor for Echo {
    fn execute(&self, request: ExecuteRequest) -> BoxFuture<'_, Result<Value, ExecutionError>> {
        self.0.lock().unwrap().push(request.input.clone());
        Box::pin(async move { Ok(json!({"echo": request.input})) })
    }
}

/// `devices.disable` with `deviceIds` bound (locked) to the selection.
struct Selection(Vec<String>);

impl BoundInput for Selection {
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

/// The view capabilities' inputs (the schemas schemars derived for the
/// example's structs before `view_inputs!`, kept so the golden files are
/// those of the same catalog).
mod view {
    surface_macros::view_inputs!(
        "tests/common/export-view-inputs.json",
        crate = ::surface_runtime
    );
}
use view::{FilterInput, SelectInput};

/// The devices example: the `devices.table` "main" with select/filter view
/// capabilities; devices.list, devices.disable (deviceIds bound to the
/// selection, confirmation required), devices.purge; devices.rename
/// registered but unavailable.
struct Devices {
    registry: SurfaceRegistry,
    executor: Arc<Echo>,
    _handles: Vec<RegistrationHandle>,
}

fn devices() -> Devices {
    let authority = Authority::from_manifest(manifest("tests/fixtures/devices.manifest.json"));
    let registry = SurfaceRegistry::new(authority.clone());
    let executor = Arc::new(Echo(Mutex::new(Vec::new())));
    registry.set_procedure_executor(executor.clone());
    let table = registry
        .register_component(
            ComponentDefinition::new("devices.table", "main")
                .capability(ViewCapability::new::<SelectInput, _, _>(
                    "select",
                    "Select devices in the table",
                    |i: SelectInput| async move { Ok(json!({"selected": i.ids.len()})) },
                ))
                .capability(ViewCapability::new::<FilterInput, _, _>(
                    "filter",
                    "Filter the table by status",
                    |_i: FilterInput| async move { Ok(Value::Null) },
                )),
        )
        .expect("component registers");
    let list = registry
        .register_procedure(AgentProcedureBinding::new(procedure(
            &authority,
            "devices.list",
        )))
        .expect("list registers");
    let disable = registry
        .register_procedure(
            AgentProcedureBinding::new(procedure(&authority, "devices.disable"))
                .bind(|| Selection(vec!["dev-1".into(), "dev-2".into()]))
                .confirmation(ConfirmationLevel::Required)
                .context(&table),
        )
        .expect("disable registers");
    let purge = registry
        .register_procedure(AgentProcedureBinding::new(procedure(
            &authority,
            "devices.purge",
        )))
        .expect("purge registers");
    let rename = registry
        .register_procedure(
            AgentProcedureBinding::new(procedure(&authority, "devices.rename"))
                .when(|| false)
                .unavailable_reason("Select exactly one device"),
        )
        .expect("rename registers");
    Devices {
        registry,
        executor,
        _handles: vec![table, list, disable, purge, rename],
    }
}

/// Every tool of a manifest registered as an unbound reference.
fn unbound(manifest: AgentManifest) -> (SurfaceRegistry, Vec<RegistrationHandle>) {
    let paths: Vec<String> = manifest.tools.keys().cloned().collect();
    let authority = Authority::from_manifest(manifest);
    let registry = SurfaceRegistry::new(authority.clone());
    let handles = paths
        .iter()
        .map(|p| {
            registry
                .register_procedure(AgentProcedureBinding::new(procedure(&authority, p)))
                .expect("registers")
        })
        .collect();
    (registry, handles)
}

fn embedded() -> AgentConsumer {
    AgentConsumer::embedded("user-1")
}

// ----- golden files ------------------------------------------------------------------------

/// Whether to rewrite the golden files: `UPDATE_GOLDEN` set, and never
/// under `CI` — a CI run that rewrote what it compares would pass on any
/// change.
fn update_golden(
    update: Option<std::ffi::OsString>,
    ci: Option<std::ffi::OsString>,
) -> Result<bool, &'static str> {
    match (update, ci) {
        (Some(_), Some(ci)) if ci != "false" && ci != "0" => Err(
            "UPDATE_GOLDEN is set under CI: CI compares the golden files and never rewrites them",
        ),
        (u, _) => Ok(u.is_some()),
    }
}

#[test]
fn golden_files_are_never_rewritten_under_ci() {
    assert_eq!(
        update_golden(Some("1".into()), Some("true".into())),
        Err("UPDATE_GOLDEN is set under CI: CI compares the golden files and never rewrites them")
    );
    assert_eq!(update_golden(Some("1".into()), None), Ok(true));
    assert_eq!(update_golden(None, Some("true".into())), Ok(false));
}

fn golden(name: &str, actual: &Value) {
    let path = repo()
        .join("surface-runtime/tests/golden/export")
        .join(format!("{name}.json"));
    let text = serde_json::to_string_pretty(actual).unwrap() + "\n";
    if update_golden(std::env::var_os("UPDATE_GOLDEN"), std::env::var_os("CI")).unwrap() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|_| {
        panic!(
            "missing golden file {}; run with UPDATE_GOLDEN=1",
            path.display()
        )
    });
    assert!(
        expected == text,
        "{} differs from the export; rerun with UPDATE_GOLDEN=1 and review the diff\n--- actual ---\n{text}",
        path.display()
    );
}

fn all_targets(prefix: &str, catalog: &ToolCatalog) {
    golden(&format!("{prefix}.mcp"), &json!(catalog.mcp_tools()));
    for (mode, tag) in [(OpenAiMode::Plain, "plain"), (OpenAiMode::Strict, "strict")] {
        golden(
            &format!("{prefix}.openai-responses.{tag}"),
            &json!(catalog.openai_responses_tools(mode)),
        );
        golden(
            &format!("{prefix}.openai-chat.{tag}"),
            &json!(catalog.openai_chat_tools(mode)),
        );
    }
    golden(
        &format!("{prefix}.anthropic"),
        &json!(catalog.anthropic_tools()),
    );
    let status: Map<String, Value> = catalog
        .tools()
        .map(|t| {
            let s = match t.strict() {
                Ok(_) => json!("strict"),
                Err(e) => json!({"reason": e.reason.code(), "path": e.path}),
            };
            (t.name().to_string(), s)
        })
        .collect();
    golden(&format!("{prefix}.strict-status"), &Value::Object(status));
}

#[test]
fn golden_devices_example_every_target() {
    let d = devices();
    let catalog = ToolCatalog::new(&d.registry.snapshot(&embedded())).unwrap();
    all_targets("devices", &catalog);
}

#[test]
fn golden_zod_constructs_every_target() {
    let (registry, _h) = unbound(manifest("tests/fixtures/codegen/zod.manifest.json"));
    let catalog = ToolCatalog::new(&registry.snapshot(&embedded())).unwrap();
    all_targets("zod", &catalog);
}

#[test]
fn golden_orpc_constructs_every_target() {
    let (registry, _h) = unbound(manifest("tests/fixtures/codegen/orpc.manifest.json"));
    let catalog = ToolCatalog::new(&registry.snapshot(&embedded())).unwrap();
    all_targets("orpc", &catalog);
}

// ----- strict-mode rules on every exported strict schema -------------------------------------

/// The manifests the corpus-wide checks run on: the fixtures, and every
/// `tests/fixtures/corpus/*.manifest.json`.
fn corpus_manifests() -> Vec<(String, AgentManifest)> {
    let mut out = vec![
        (
            "devices".to_string(),
            manifest("tests/fixtures/devices.manifest.json"),
        ),
        (
            "handwritten".to_string(),
            manifest("tests/fixtures/handwritten.manifest.json"),
        ),
        (
            "zod".to_string(),
            manifest("tests/fixtures/codegen/zod.manifest.json"),
        ),
        (
            "orpc".to_string(),
            manifest("tests/fixtures/codegen/orpc.manifest.json"),
        ),
    ];
    let dir = repo().join("tests/fixtures/corpus");
    let read =
        std::fs::read_dir(&dir).expect("tests/fixtures/corpus (the public tool-schema corpus)");
    let mut files: Vec<PathBuf> = read
        .map(|e| e.expect("corpus entry").path())
        .filter(|p| p.to_string_lossy().ends_with(".manifest.json"))
        .collect();
    files.sort();
    for file in files {
        let text = std::fs::read_to_string(&file).expect("corpus file readable");
        let m = AgentManifest::from_json_str(&text)
            .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        out.push((file.file_name().unwrap().to_string_lossy().into_owned(), m));
    }
    out
}

/// Every tool the registry accepts (its schema compiles) registered as an
/// unbound reference; the number refused.
fn register_all(manifest: AgentManifest) -> (SurfaceRegistry, Vec<RegistrationHandle>, usize) {
    let paths: Vec<String> = manifest.tools.keys().cloned().collect();
    let authority = Authority::from_manifest(manifest);
    let registry = SurfaceRegistry::new(authority.clone());
    let mut handles = Vec::new();
    let mut refused = 0;
    for p in &paths {
        match registry.register_procedure(AgentProcedureBinding::new(procedure(&authority, p))) {
            Ok(h) => handles.push(h),
            Err(_) => refused += 1,
        }
    }
    (registry, handles, refused)
}

#[test]
fn every_strict_schema_of_the_corpus_passes_the_strict_rules() {
    let limits = StrictLimits::default();
    let mut counts = (0usize, 0usize);
    let mut refused_total = 0;
    let mut reasons: std::collections::BTreeMap<String, usize> = Default::default();
    for (label, m) in corpus_manifests() {
        let (registry, _h, refused) = register_all(m);
        refused_total += refused;
        let snapshot = registry.snapshot(&embedded());
        let catalog = ToolCatalog::new(&snapshot).unwrap_or_else(|e| panic!("{label}: {e}"));
        // Reversible and deterministic: every live reference has one name,
        // and the name maps back to it.
        assert_eq!(
            catalog.all_tools().len(),
            snapshot.procedures.len(),
            "{label}"
        );
        for p in &snapshot.procedures {
            let id = p.procedure_id.as_str();
            let tool = catalog
                .tool_for(id, &p.registration_id)
                .expect("every reference named");
            let back = catalog
                .invocation(ToolCall::new(tool.name(), "c", None))
                .unwrap();
            assert_eq!(back.capability_id, id, "{label}");
            assert_eq!(
                back.registration_id.as_deref(),
                Some(p.registration_id.as_str())
            );
            assert_eq!(back.surface_version, Some(snapshot.surface_version));
        }
        assert_eq!(ToolCatalog::new(&snapshot).unwrap(), catalog, "{label}");
        for tool in catalog.openai_responses_tools(OpenAiMode::Strict) {
            assert!(
                surface_runtime::export::naming::is_valid_tool_name(&tool.name),
                "{label}: name {}",
                tool.name
            );
            if tool.strict {
                counts.0 += 1;
                if let Err(v) = check_strict_schema(&tool.parameters, &limits) {
                    panic!("{label}/{}: {v}", tool.name);
                }
                // The strict schema is itself a valid JSON Schema.
                jsonschema::validator_for(&tool.parameters)
                    .unwrap_or_else(|e| panic!("{label}/{}: {e}", tool.name));
            } else {
                counts.1 += 1;
                let reason = catalog.tool(&tool.name).unwrap().strict().unwrap_err();
                *reasons.entry(reason.reason.code()).or_default() += 1;
            }
            assert_eq!(tool.parameters["type"], "object", "{label}/{}", tool.name);
        }
        for tool in catalog.mcp_tools() {
            assert_eq!(tool.input_schema["type"], "object", "{label}/{}", tool.name);
            jsonschema::validator_for(&tool.input_schema)
                .unwrap_or_else(|e| panic!("{label}/{}: {e}", tool.name));
            if let Some(out) = &tool.output_schema {
                assert_eq!(out["type"], "object", "{label}/{}", tool.name);
            }
        }
    }
    eprintln!(
        "strict: {}, not strict: {} {reasons:?}; schemas the registry refused: {refused_total}",
        counts.0, counts.1
    );
    // 1,520 strict and 178 not strict tools (2026-12).
    assert!(
        counts.0 >= 1500 && counts.1 >= 170,
        "the corpus gave {} strict and {} non-strict tools; expected at least 1,500 and 170",
        counts.0,
        counts.1
    );
}

// ----- samples: normalized schemas accept them, strict calls map back to them ---------------

fn samples() -> Map<String, Value> {
    let text = std::fs::read_to_string(repo().join("tests/fixtures/codegen/samples.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// Why a value has no strict form.
#[derive(Debug, PartialEq)]
enum Miss {
    /// An object has a property the schema does not declare: strict mode
    /// closes objects, so such a call cannot be made strictly.
    Undeclared,
    /// The value does not fit the schema's structure.
    Shape,
}

/// What a strict model sends for `value`: every property the strict
/// schema requires and `value` leaves out is `null`.
fn strictify(v: &Value, s: &Value, root: &Value) -> Result<Value, Miss> {
    if let Some(r) = s.get("$ref").and_then(Value::as_str) {
        let name = r.strip_prefix("#/$defs/").ok_or(Miss::Shape)?;
        return strictify(v, &root["$defs"][name], root);
    }
    if let Some(branches) = s.get("anyOf").and_then(Value::as_array) {
        let mut miss = Miss::Shape;
        for b in branches {
            match strictify(v, b, root) {
                Ok(c) => {
                    let check = json!({"$defs": root.get("$defs").cloned().unwrap_or(json!({})), "allOf": [b]});
                    if jsonschema::validator_for(&check).unwrap().is_valid(&c) {
                        return Ok(c);
                    }
                }
                Err(Miss::Undeclared) => miss = Miss::Undeclared,
                Err(Miss::Shape) => {}
            }
        }
        return Err(miss);
    }
    match (s.get("type").and_then(Value::as_str), v) {
        (Some("object"), Value::Object(map)) => {
            let props = s["properties"].as_object().ok_or(Miss::Shape)?;
            if map.keys().any(|k| !props.contains_key(k)) {
                return Err(Miss::Undeclared);
            }
            let mut out = Map::new();
            for (k, ps) in props {
                let child = match map.get(k) {
                    Some(c) => strictify(c, ps, root)?,
                    None => Value::Null,
                };
                out.insert(k.clone(), child);
            }
            Ok(Value::Object(out))
        }
        (Some("array"), Value::Array(items)) => items
            .iter()
            .map(|i| strictify(i, &s["items"], root))
            .collect::<Result<Vec<_>, _>>()
            .map(Value::Array),
        _ => Ok(v.clone()),
    }
}

/// For each valid input sample of a tool: the normalized schema accepts
/// it, and, when the tool is strict, its strict form (absent optional
/// properties as `null`) passes the strict schema and maps back to exactly
/// the sample. Output samples pass the declared output schema. Returns the
/// number of strict round trips.
fn check_tool_samples(
    label: &str,
    catalog: &ToolCatalog,
    path: &str,
    inputs: &[Value],
    outputs: &[Value],
) -> usize {
    let name = surface_runtime::export::naming::tool_name(path);
    let Some(tool) = catalog.tool(&name) else {
        // Not registered (the registry refused its schema).
        return 0;
    };
    let input = jsonschema::validator_for(tool.input_schema()).unwrap();
    let mut round_trips = 0;
    for sample in inputs {
        if !sample.is_object() {
            // The pipeline refuses non-object input whatever the schema
            // says; the exported root is `"type": "object"` for that reason.
            continue;
        }
        assert!(
            input.is_valid(sample),
            "{label}/{name}: normalized schema refuses {sample}"
        );
        let Ok(strict) = tool.strict() else { continue };
        let params = strict.parameters();
        let sent = match strictify(sample, params, params) {
            Ok(sent) => sent,
            // Undeclared properties (open objects): strict mode closes
            // objects, so this call can only be made without strict mode.
            Err(Miss::Undeclared) => continue,
            Err(Miss::Shape) => panic!("{label}/{name}: {sample} has no strict form"),
        };
        assert!(
            jsonschema::validator_for(params).unwrap().is_valid(&sent),
            "{label}/{name}: strict schema refuses {sent}"
        );
        let invocation = catalog
            .strict_invocation(ToolCall::new(&name, "call-1", Some(sent.clone())))
            .unwrap();
        assert_eq!(&invocation.input, sample, "{label}/{name}: sent {sent}");
        round_trips += 1;
    }
    if let Some(out) = tool.output_schema() {
        let validator = jsonschema::validator_for(&out.schema).unwrap();
        for sample in outputs {
            let wrapped = if out.wrapped {
                json!({"result": sample})
            } else {
                sample.clone()
            };
            assert!(
                validator.is_valid(&wrapped),
                "{label}/{name}: output schema refuses {sample}"
            );
        }
    }
    round_trips
}

fn check_samples(fixture: &str) -> usize {
    let (registry, _h) = unbound(manifest(fixture));
    let catalog = ToolCatalog::new(&registry.snapshot(&embedded())).unwrap();
    let mut round_trips = 0;
    for (path, cases) in samples() {
        assert!(catalog
            .tool(&surface_runtime::export::naming::tool_name(&path))
            .is_some());
        let inputs = cases["input"].as_array().unwrap();
        let outputs = cases
            .get("output")
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice);
        round_trips += check_tool_samples(fixture, &catalog, &path, inputs, outputs);
    }
    round_trips
}

#[test]
fn strict_calls_of_the_zod_samples_map_back_to_the_samples() {
    assert!(check_samples("tests/fixtures/codegen/zod.manifest.json") >= 20);
}

#[test]
fn strict_calls_of_the_orpc_samples_map_back_to_the_samples() {
    assert!(check_samples("tests/fixtures/codegen/orpc.manifest.json") >= 15);
}

// ----- calls and results through a registry -----------------------------------------------------

fn error_of(result: &AgentInvocationResult) -> &AgentError {
    result
        .error()
        .unwrap_or_else(|| panic!("expected an error, got {result:?}"))
}

#[tokio::test]
async fn a_locked_field_sent_by_the_model_is_refused_with_invalid_input() {
    let d = devices();
    let consumer = embedded();
    let catalog = ToolCatalog::new(&d.registry.snapshot(&consumer)).unwrap();
    let schema = catalog.tool("devices__disable").unwrap().input_schema();
    assert!(schema["properties"].get("deviceIds").is_none());
    let call = ToolCall::new(
        "devices__disable",
        "c-1",
        Some(json!({"deviceIds": ["dev-3"]})),
    );
    let result = d
        .registry
        .invoke(catalog.invocation(call).unwrap(), &consumer)
        .await;
    let error = error_of(&result);
    assert_eq!(error.code, ErrorCode::InvalidInput);
    assert_eq!(error.details["lockedFields"], json!(["deviceIds"]));
    assert!(d.executor.0.lock().unwrap().is_empty());
}

#[tokio::test]
async fn a_confirmed_call_runs_with_the_bound_selection() {
    let d = devices();
    let consumer = embedded();
    let catalog = ToolCatalog::new(&d.registry.snapshot(&consumer)).unwrap();
    let call = ToolCall::new("devices__disable", "c-1", Some(json!({"reason": "lost"})));
    let first = d
        .registry
        .invoke(catalog.invocation(call).unwrap(), &consumer)
        .await;
    let error = error_of(&first);
    assert_eq!(error.code, ErrorCode::ConfirmationRequired);
    let mcp = catalog.mcp_result("devices__disable", &first);
    assert!(mcp.is_error);
    let text = serde_json::to_value(&mcp).unwrap();
    assert!(text["content"][0]["text"]
        .as_str()
        .unwrap()
        .starts_with("CONFIRMATION_REQUIRED: "));
    assert!(text["content"][0]["text"].as_str().unwrap().ends_with(
        "you cannot confirm it yourself. Once the user has confirmed, make the same call again."
    ));
    // No output schema: the error is also structuredContent.
    assert_eq!(text["structuredContent"]["code"], "CONFIRMATION_REQUIRED");
    assert_eq!(text["structuredContent"]["retry"], "with-confirmation");
    // The application approves; the host retries with a fresh id.
    let id = error.details["confirmationId"].as_str().unwrap();
    let approved = d.registry.confirm(id).unwrap();
    let retry = ToolCall::new("devices__disable", "c-2", Some(json!({"reason": "lost"})));
    let mut invocation = catalog.invocation(retry).unwrap();
    invocation.confirmation_id = Some(approved.confirmation_id);
    let second = d.registry.invoke(invocation, &consumer).await;
    assert!(second.error().is_none(), "{second:?}");
    assert_eq!(
        d.executor.0.lock().unwrap().as_slice(),
        [json!({"deviceIds": ["dev-1", "dev-2"], "reason": "lost"})]
    );
}

#[tokio::test]
async fn a_strict_call_has_its_absent_nulls_removed_and_a_plain_one_does_not() {
    let d = devices();
    let consumer = embedded();
    let catalog = ToolCatalog::new(&d.registry.snapshot(&consumer)).unwrap();
    let args = json!({"limit": null, "status": "active"});
    let plain = catalog
        .invocation(ToolCall::new("devices__list", "c-1", Some(args.clone())))
        .unwrap();
    assert_eq!(plain.input, args);
    let refused = d.registry.invoke(plain, &consumer).await;
    assert_eq!(error_of(&refused).code, ErrorCode::InvalidInput);
    let strict = catalog
        .strict_invocation(ToolCall::new("devices__list", "c-2", Some(args)))
        .unwrap();
    assert_eq!(strict.input, json!({"status": "active"}));
    let ok = d.registry.invoke(strict, &consumer).await;
    assert!(ok.error().is_none(), "{ok:?}");
    // A view capability: `extend: null` (an absent Option) is removed too.
    let select = catalog
        .strict_invocation(ToolCall::new(
            "view__devices__table__select",
            "c-3",
            Some(json!({"ids": ["dev-3"], "extend": null})),
        ))
        .unwrap();
    assert_eq!(select.input, json!({"ids": ["dev-3"]}));
    let selected = d.registry.invoke(select, &consumer).await;
    assert_eq!(
        selected,
        AgentInvocationResult::ok(
            "c-3",
            "view:devices.table.select",
            json!({"selected": 1}),
            d.registry.surface_version()
        )
    );
}

#[test]
fn an_invocation_carries_the_catalog_identity_and_the_call_id() {
    let d = devices();
    let snapshot = d.registry.snapshot(&embedded());
    let catalog = ToolCatalog::new(&snapshot).unwrap();
    let purge = catalog
        .invocation(ToolCall::new("devices__purge", "call_abc", None))
        .unwrap();
    let descriptor = snapshot
        .procedures_for("domain:devices.purge")
        .next()
        .unwrap();
    assert_eq!(purge.invocation_id, "call_abc");
    assert_eq!(purge.capability_id, "domain:devices.purge");
    assert_eq!(
        purge.registration_id.as_deref(),
        Some(descriptor.registration_id.as_str())
    );
    assert_eq!(purge.surface_version, Some(snapshot.surface_version));
    assert_eq!(purge.input, json!({}));
    let select = catalog
        .invocation(ToolCall::new("view__devices__table__select", "c", None))
        .unwrap();
    assert_eq!(select.capability_id, "view:devices.table.select");
    assert_eq!(
        select.registration_id.as_deref(),
        Some(snapshot.components[0].registration_id.as_str())
    );
}

#[tokio::test]
async fn a_call_from_an_older_catalog_is_stale_for_a_destructive_tool() {
    let d = devices();
    let consumer = embedded();
    let old = ToolCatalog::new(&d.registry.snapshot(&consumer)).unwrap();
    let authority = d.registry.authority().clone();
    let _stats = d
        .registry
        .register_procedure(AgentProcedureBinding::new(procedure(
            &authority,
            "devices.stats",
        )))
        .unwrap();
    let call = ToolCall::new(
        "devices__purge",
        "c-1",
        Some(json!({"deviceIds": ["dev-1"]})),
    );
    let result = d
        .registry
        .invoke(old.invocation(call).unwrap(), &consumer)
        .await;
    let error = error_of(&result);
    assert_eq!(error.code, ErrorCode::StaleCapability);
    assert_eq!(error.retry, Retry::AfterRefresh);
    assert!(
        serde_json::to_value(old.mcp_result("devices__purge", &result)).unwrap()["content"][0]
            ["text"]
            .as_str()
            .unwrap()
            .ends_with("list the tools again, then use a current tool.")
    );
}

#[tokio::test]
async fn an_unavailable_tool_is_not_exported_but_a_call_naming_it_gets_unavailable() {
    let d = devices();
    let consumer = embedded();
    let catalog = ToolCatalog::new(&d.registry.snapshot(&consumer)).unwrap();
    assert!(catalog
        .mcp_tools()
        .iter()
        .all(|t| t.name != "devices__rename"));
    assert!(catalog
        .anthropic_tools()
        .iter()
        .all(|t| t.name != "devices__rename"));
    let rename = catalog.tool("devices__rename").unwrap();
    assert!(!rename.is_exported() && !rename.available());
    let call = ToolCall::new(
        "devices__rename",
        "c-1",
        Some(json!({"deviceId": "d", "name": "n"})),
    );
    let result = d
        .registry
        .invoke(catalog.invocation(call).unwrap(), &consumer)
        .await;
    let error = error_of(&result);
    assert_eq!(error.code, ErrorCode::CapabilityNotAvailable);
    assert!(
        error.message.contains("Select exactly one device"),
        "{error:?}"
    );
}

#[test]
fn include_unavailable_exports_the_tool_with_its_reason() {
    let d = devices();
    let options = ExportOptions {
        include_unavailable: true,
        ..ExportOptions::default()
    };
    let catalog = ToolCatalog::with_options(&d.registry.snapshot(&embedded()), &options).unwrap();
    let rename = catalog
        .mcp_tools()
        .into_iter()
        .find(|t| t.name == "devices__rename")
        .unwrap();
    assert_eq!(
        rename.description.as_deref(),
        Some("Rename a device\n\nCurrently unavailable: Select exactly one device")
    );
}

#[test]
fn a_headless_consumer_gets_no_view_tools() {
    let d = devices();
    let catalog = ToolCatalog::new(&d.registry.snapshot(&AgentConsumer::headless("h"))).unwrap();
    let names: Vec<String> = catalog.mcp_tools().into_iter().map(|t| t.name).collect();
    assert_eq!(
        names,
        ["devices__list", "devices__disable", "devices__purge"]
    );
}

#[test]
fn tool_call_errors_are_typed_and_map_to_agent_errors() {
    let d = devices();
    let catalog = ToolCatalog::new(&d.registry.snapshot(&embedded())).unwrap();
    let version = catalog.surface_version();
    let unknown = catalog
        .invocation(ToolCall::new("devices__explode", "c", None))
        .unwrap_err();
    assert_eq!(
        unknown,
        ToolCallError::UnknownTool {
            name: "devices__explode".into(),
            surface_version: version
        }
    );
    assert_eq!(unknown.agent_error().code, ErrorCode::CapabilityNotFound);
    assert_eq!(unknown.agent_error().retry, Retry::AfterRefresh);
    let long = "x".repeat(1000);
    match catalog.invocation(ToolCall::new(long, "c", None)) {
        Err(ToolCallError::UnknownTool { name, .. }) => assert_eq!(name.len(), 128),
        other => panic!("{other:?}"),
    }
    for (args, found) in [
        (json!([1]), "an array"),
        (json!(null), "null"),
        (json!("x"), "a string"),
    ] {
        let err = catalog
            .invocation(ToolCall::new("devices__list", "c", Some(args)))
            .unwrap_err();
        assert_eq!(
            err,
            ToolCallError::ArgumentsNotObject {
                name: "devices__list".into(),
                found
            }
        );
        let agent = err.agent_error();
        assert_eq!(
            (agent.code, agent.retry),
            (ErrorCode::InvalidInput, Retry::WithChanges)
        );
        assert_eq!(
            agent.details["issues"],
            json!([{"path": "", "message": "The arguments must be one JSON object."}])
        );
    }
    assert_eq!(
        catalog
            .invocation(ToolCall::new("devices__list", "", None))
            .unwrap_err(),
        ToolCallError::EmptyCallId
    );
    assert_eq!(
        catalog
            .invocation(ToolCall::new("devices__list", "i".repeat(257), None))
            .unwrap_err(),
        ToolCallError::CallIdTooLong {
            size: 257,
            limit: 256
        }
    );
    let result = unknown.to_result("c-9", "", catalog.surface_version());
    assert_eq!(result.invocation_id(), "c-9");
    assert_eq!(result.capability_id(), "");
    assert_eq!(result.surface_version(), catalog.surface_version());
    assert_eq!(result.error().unwrap().code, ErrorCode::CapabilityNotFound);
}

#[test]
fn json_argument_text_is_parsed_with_limits() {
    let call = ToolCall::from_json_arguments("devices__list", "c", r#"{"limit": 5}"#).unwrap();
    assert_eq!(call.arguments, Some(json!({"limit": 5})));
    let empty = ToolCall::from_json_arguments("devices__list", "c", "  ").unwrap();
    assert_eq!(empty.arguments, None);
    assert_eq!(
        ToolCall::from_json_arguments("devices__list", "c", "{\n \"limit\": }").unwrap_err(),
        ToolCallError::ArgumentsNotJson {
            name: "devices__list".into(),
            line: 2,
            column: 11
        }
    );
    let big = format!("{{\"a\":\"{}\"}}", "x".repeat(262_144));
    assert_eq!(
        ToolCall::from_json_arguments("t", "c", &big).unwrap_err(),
        ToolCallError::ArgumentsTooLarge {
            name: "t".into(),
            size: big.len(),
            limit: 245_760
        }
    );
}

#[test]
fn results_map_to_mcp_and_provider_shapes() {
    let d = devices();
    let catalog = ToolCatalog::new(&d.registry.snapshot(&embedded())).unwrap();
    let ok = AgentInvocationResult::ok("c", "domain:devices.list", json!({"devices": []}), 1);
    assert_eq!(
        serde_json::to_value(catalog.mcp_result("devices__list", &ok)).unwrap(),
        json!({"content": [{"type": "text", "text": "{\"devices\":[]}"}],
               "structuredContent": {"devices": []}, "isError": false})
    );
    // Declared output schema: an error carries no structuredContent.
    let err = AgentInvocationResult::err(
        "c",
        "domain:devices.list",
        AgentError::new(ErrorCode::Timeout, "The call timed out.", Retry::Yes),
        1,
    );
    assert_eq!(
        serde_json::to_value(catalog.mcp_result("devices__list", &err)).unwrap(),
        json!({"content": [
            {"type": "text", "text": "TIMEOUT: The call timed out. The same call may succeed if you make it again later."},
            {"type": "text", "text": "{\"code\":\"TIMEOUT\",\"message\":\"The call timed out.\",\"retry\":\"yes\"}"}],
          "isError": true})
    );
    // No output schema and a non-object output: text only.
    let null = AgentInvocationResult::ok("c", "domain:devices.purge", Value::Null, 1);
    assert_eq!(
        serde_json::to_value(catalog.mcp_result("devices__purge", &null)).unwrap(),
        json!({"content": [{"type": "text", "text": "null"}], "isError": false})
    );
    let text = ToolResultText::new(&err);
    assert!(text.is_error);
    assert_eq!(
        text.text,
        "TIMEOUT: The call timed out. The same call may succeed if you make it again later.\n{\"code\":\"TIMEOUT\",\"message\":\"The call timed out.\",\"retry\":\"yes\"}"
    );
    assert_eq!(
        text.anthropic_tool_result("toolu_1"),
        json!({"type": "tool_result", "tool_use_id": "toolu_1", "content": text.text, "is_error": true})
    );
    assert_eq!(
        ToolResultText::new(&ok).openai_function_call_output("call_1"),
        json!({"type": "function_call_output", "call_id": "call_1", "output": "{\"devices\":[]}"})
    );
    assert_eq!(
        ToolResultText::new(&ok).openai_tool_message("call_1"),
        json!({"role": "tool", "tool_call_id": "call_1", "content": "{\"devices\":[]}"})
    );
}

#[test]
fn a_non_object_output_schema_is_wrapped_under_result() {
    let m = AgentManifest::from_json_str(
        r#"{"tools":{"devices.count":{"description":"Count","inputSchema":{"type":"object"},
            "outputSchema":{"type":"integer","minimum":0},"effect":"server-query"}}}"#,
    )
    .unwrap();
    let (registry, _h) = unbound(m);
    let catalog = ToolCatalog::new(&registry.snapshot(&embedded())).unwrap();
    let tool = catalog.tool("devices__count").unwrap();
    let out = tool.output_schema().unwrap();
    assert!(out.wrapped);
    assert_eq!(
        out.schema,
        json!({"type": "object", "properties": {"result": {"type": "integer", "minimum": 0}}, "required": ["result"]})
    );
    let ok = AgentInvocationResult::ok("c", "domain:devices.count", json!(3), 1);
    let result = serde_json::to_value(tool.mcp_result(&ok)).unwrap();
    assert_eq!(result["structuredContent"], json!({"result": 3}));
    assert_eq!(result["content"][0]["text"], "3");
}

// ----- naming through a registry -----------------------------------------------------------------

fn two_tables(registry: &SurfaceRegistry, instances: [(&str, &str); 2]) -> Vec<RegistrationHandle> {
    let authority = registry.authority().clone();
    let mut handles = Vec::new();
    for (ty, instance) in instances {
        let table = registry
            .register_component(ComponentDefinition::new(ty, instance))
            .unwrap();
        let disable = registry
            .register_procedure(
                AgentProcedureBinding::new(procedure(&authority, "devices.disable"))
                    .bind(|| Selection(vec!["dev-1".into()]))
                    .context(&table),
            )
            .unwrap();
        handles.extend([table, disable]);
    }
    handles
}

#[test]
fn two_references_to_one_procedure_get_distinct_names_by_instance() {
    let authority = Authority::from_manifest(manifest("tests/fixtures/devices.manifest.json"));
    let registry = SurfaceRegistry::new(authority);
    let _h = two_tables(
        &registry,
        [("devices.table", "main"), ("devices.table", "archive")],
    );
    let snapshot = registry.snapshot(&embedded());
    let catalog = ToolCatalog::new(&snapshot).unwrap();
    let names: Vec<&str> = catalog.tools().map(|t| t.name()).collect();
    assert_eq!(
        names,
        ["devices__disable__main", "devices__disable__archive"]
    );
    let archive = catalog.tool("devices__disable__archive").unwrap();
    assert_eq!(archive.title(), "devices.disable (archive)");
    assert!(archive
        .description()
        .contains("Acts on the devices.table component \"archive\"."));
    let invocation = catalog
        .invocation(ToolCall::new("devices__disable__archive", "c", None))
        .unwrap();
    let expected = snapshot
        .procedures
        .iter()
        .find(|p| p.context.as_ref().unwrap().instance_id == "archive")
        .unwrap();
    assert_eq!(
        invocation.registration_id.as_deref(),
        Some(expected.registration_id.as_str())
    );
    // Deterministic: the same snapshot gives the same catalog.
    assert_eq!(ToolCatalog::new(&snapshot).unwrap(), catalog);
}

#[test]
fn same_instance_ids_in_two_component_types_are_qualified_by_type() {
    let authority = Authority::from_manifest(manifest("tests/fixtures/devices.manifest.json"));
    let registry = SurfaceRegistry::new(authority);
    let _h = two_tables(
        &registry,
        [("devices.table", "main"), ("devices.grid", "main")],
    );
    let catalog = ToolCatalog::new(&registry.snapshot(&embedded())).unwrap();
    let names: Vec<&str> = catalog.tools().map(|t| t.name()).collect();
    assert_eq!(
        names,
        [
            "devices__disable__devices__table__main",
            "devices__disable__devices__grid__main"
        ]
    );
}

#[test]
fn a_procedure_and_a_view_capability_with_one_name_are_a_collision_naming_both() {
    let m = AgentManifest::from_json_str(
        r#"{"tools":{"view.devices.table.select":{"description":"d","inputSchema":{"type":"object"},"effect":"server-query"}}}"#,
    )
    .unwrap();
    let (registry, _h) = unbound(m);
    let _table = registry
        .register_component(
            ComponentDefinition::new("devices.table", "main").capability(
                ViewCapability::with_schema(
                    "select",
                    "Select",
                    json!({"type": "object"}),
                    |_v| async { Ok(Value::Null) },
                ),
            ),
        )
        .unwrap();
    let err = ToolCatalog::new(&registry.snapshot(&embedded())).unwrap_err();
    assert_eq!(
        err,
        ExportError::NameCollision {
            name: "view__devices__table__select".into(),
            first: "domain:view.devices.table.select".into(),
            second: "view:devices.table.select".into(),
        }
    );
    assert!(err
        .to_string()
        .contains("`domain:view.devices.table.select` and `view:devices.table.select`"));
}

#[test]
fn a_capability_id_override_stays_out_of_the_invocation() {
    let m = AgentManifest::from_json_str(
        r#"{"tools":{"mail.send":{"description":"Send","inputSchema":{"type":"object"},
            "effect":"external-side-effect","capabilityId":"cap:mail.send@2"}}}"#,
    )
    .unwrap();
    let (registry, _h) = unbound(m);
    let catalog = ToolCatalog::new(&registry.snapshot(&embedded())).unwrap();
    let tool = &catalog.mcp_tools()[0];
    assert_eq!(tool.name, "mail__send");
    assert_eq!(
        serde_json::to_value(&tool.annotations).unwrap(),
        json!({"readOnlyHint": false, "openWorldHint": true})
    );
    // The call names the procedure id, as the original's does; the
    // registry resolves it and the executor sends the override.
    let invocation = catalog
        .invocation(ToolCall::new("mail__send", "c", None))
        .unwrap();
    assert_eq!(invocation.capability_id, "domain:mail.send");
}

/// An exact normalization (nothing loosened) keeps every refusal: each
/// invalid object sample is refused by the normalized schema too.
fn check_exact_refusals(
    label: &str,
    catalog: &ToolCatalog,
    path: &str,
    invalid: &[Value],
) -> usize {
    let name = surface_runtime::export::naming::tool_name(path);
    let Some(tool) = catalog.tool(&name) else {
        return 0;
    };
    if !tool.input_loosened().is_empty() {
        return 0;
    }
    let validator = jsonschema::validator_for(tool.input_schema()).unwrap();
    let mut checked = 0;
    for sample in invalid.iter().filter(|s| s.is_object()) {
        assert!(
            !validator.is_valid(sample),
            "{label}/{name}: the exact normalized schema accepts the invalid {sample}"
        );
        checked += 1;
    }
    checked
}

#[test]
fn strict_calls_of_the_corpus_samples_map_back_to_the_samples() {
    let dir = repo().join("tests/fixtures/corpus");
    let mut round_trips = 0;
    let mut refusals = 0;
    for (label, m) in corpus_manifests() {
        let Some(source) = label.strip_suffix(".manifest.json") else {
            continue;
        };
        let Ok(text) = std::fs::read_to_string(dir.join(format!("{source}.samples.json"))) else {
            continue;
        };
        let samples: Map<String, Value> = serde_json::from_str(&text).expect("samples JSON");
        let (registry, _h, _refused) = register_all(m);
        let catalog = ToolCatalog::new(&registry.snapshot(&embedded())).unwrap();
        for (path, cases) in &samples {
            let list = |v: Option<&Value>| v.and_then(Value::as_array).cloned().unwrap_or_default();
            let inputs = list(cases.pointer("/input/valid"));
            let invalid: Vec<Value> = list(cases.pointer("/input/invalid"))
                .into_iter()
                .filter_map(|case| case.get("value").cloned())
                .collect();
            refusals += check_exact_refusals(&label, &catalog, path, &invalid);
            let outputs = list(cases.pointer("/output/valid"));
            round_trips += check_tool_samples(&label, &catalog, path, &inputs, &outputs);
        }
    }
    eprintln!("corpus samples: {round_trips} strict round trips, {refusals} refusals kept");
    // 2,964 round trips and 1,807 refusals from the vendored corpus
    // (2026-12): missing sample files, or a filter that skips them, fail here.
    assert!(
        round_trips >= 2900 && refusals >= 1750,
        "the corpus samples gave {round_trips} strict round trips and {refusals} refusals; \
         expected at least 2,900 and 1,750"
    );
}

// ----- catalogs of tools -----------------------------------------------------------------------

/// Every exported list of a catalog, as JSON.
fn exported(catalog: &ToolCatalog) -> Value {
    json!({
        "mcp": catalog.mcp_tools(),
        "responses.plain": catalog.openai_responses_tools(OpenAiMode::Plain),
        "responses.strict": catalog.openai_responses_tools(OpenAiMode::Strict),
        "chat.plain": catalog.openai_chat_tools(OpenAiMode::Plain),
        "chat.strict": catalog.openai_chat_tools(OpenAiMode::Strict),
        "anthropic": catalog.anthropic_tools(),
    })
}

fn all_names(catalog: &ToolCatalog) -> Vec<&str> {
    catalog.all_tools().iter().map(|t| t.name()).collect()
}

const DEVICES_NAMES: [&str; 6] = [
    "devices__list",
    "devices__disable",
    "devices__purge",
    "devices__rename",
    "view__devices__table__select",
    "view__devices__table__filter",
];

#[test]
fn a_catalog_of_a_snapshots_tools_equals_the_snapshots_catalog() {
    let d = devices();
    let snapshot = d.registry.snapshot(&embedded());
    for options in [
        ExportOptions::default(),
        ExportOptions {
            include_unavailable: true,
            ..ExportOptions::default()
        },
    ] {
        let of_snapshot = ToolCatalog::with_options(&snapshot, &options).unwrap();
        let of_tools =
            ToolCatalog::from_tools(ToolSource::from_snapshot(&snapshot), &options).unwrap();
        assert_eq!(of_tools, of_snapshot);
        assert_eq!(all_names(&of_tools), DEVICES_NAMES);
        assert_eq!(exported(&of_tools), exported(&of_snapshot));
        assert_eq!(of_tools.surface_version(), snapshot.surface_version);
    }
    let sources = ToolSource::from_snapshot(&snapshot);
    assert_eq!(sources.len(), 6);
    assert!(sources
        .iter()
        .all(|s| s.route == ToolRoute::Registry && s.surface_version == snapshot.surface_version));
    assert_eq!(
        sources
            .iter()
            .map(|s| s.descriptor.capability_id())
            .collect::<Vec<_>>(),
        [
            "domain:devices.list",
            "domain:devices.disable",
            "domain:devices.purge",
            "domain:devices.rename",
            "view:devices.table.select",
            "view:devices.table.filter",
        ]
    );
    // The golden files' catalog, built from its tools.
    let (registry, _h) = unbound(manifest("tests/fixtures/codegen/zod.manifest.json"));
    let snapshot = registry.snapshot(&embedded());
    let of_tools = ToolCatalog::from_tools(
        ToolSource::from_snapshot(&snapshot),
        &ExportOptions::default(),
    )
    .unwrap();
    assert_eq!(of_tools, ToolCatalog::new(&snapshot).unwrap());
}

#[test]
fn a_catalog_of_tools_lists_procedures_first_then_views_by_component() {
    let d = devices();
    let _grid = d
        .registry
        .register_component(ComponentDefinition::new("devices.grid", "side").capability(
            ViewCapability::with_schema("zoom", "Zoom", json!({"type": "object"}), |_v| async {
                Ok(Value::Null)
            }),
        ))
        .unwrap();
    let snapshot = d.registry.snapshot(&embedded());
    let mut sources = ToolSource::from_snapshot(&snapshot);
    // Sorted by capability id, as an agent host composes a run's tools:
    // views of two components and procedures interleaved.
    sources.sort_by(|a, b| {
        a.descriptor
            .capability_id()
            .cmp(b.descriptor.capability_id())
    });
    sources.reverse();
    let catalog = ToolCatalog::from_tools(sources, &ExportOptions::default()).unwrap();
    assert_eq!(
        all_names(&catalog),
        [
            "devices__rename",
            "devices__purge",
            "devices__list",
            "devices__disable",
            "view__devices__table__select",
            "view__devices__table__filter",
            "view__devices__grid__zoom",
        ]
    );
}

#[test]
fn each_invocation_carries_its_tools_route_registration_and_surface_version() {
    let d = devices();
    let snapshot = d.registry.snapshot(&embedded());
    let mut sources = ToolSource::from_snapshot(&snapshot);
    let browser = ToolRoute::Browser {
        tab_id: "tab-1".into(),
    };
    for source in &mut sources {
        if source.descriptor.capability_id() != "domain:devices.list" {
            source.route = browser.clone();
            source.surface_version = 40;
        }
    }
    let catalog = ToolCatalog::from_tools(sources, &ExportOptions::default()).unwrap();
    assert_eq!(catalog.surface_version(), 40);
    assert_eq!(
        exported(&catalog),
        exported(&ToolCatalog::new(&snapshot).unwrap())
    );
    let list = catalog.tool("devices__list").unwrap();
    assert_eq!(
        (list.route(), list.surface_version()),
        (&ToolRoute::Registry, snapshot.surface_version)
    );
    let invocation = catalog
        .invocation(ToolCall::new("devices__list", "c1", None))
        .unwrap();
    assert_eq!(invocation.surface_version, Some(snapshot.surface_version));
    let select = catalog.tool("view__devices__table__select").unwrap();
    assert_eq!((select.route(), select.surface_version()), (&browser, 40));
    let invocation = catalog
        .invocation(ToolCall::new("view__devices__table__select", "c2", None))
        .unwrap();
    assert_eq!(invocation.surface_version, Some(40));
    assert_eq!(invocation.capability_id, "view:devices.table.select");
    assert_eq!(
        invocation.registration_id.as_deref(),
        Some(snapshot.components[0].registration_id.as_str())
    );
    // Without tools: surface version 0 (a snapshot's catalog keeps the
    // snapshot's).
    let empty = ToolCatalog::from_tools(Vec::new(), &ExportOptions::default()).unwrap();
    assert_eq!((empty.surface_version(), empty.all_tools().len()), (0, 0));
    let mut none = snapshot.clone();
    none.procedures.clear();
    none.components.clear();
    assert_eq!(
        ToolCatalog::new(&none).unwrap().surface_version(),
        snapshot.surface_version
    );
}

#[test]
fn an_agent_hosts_browser_tool_catalogs_as_its_snapshot_entries() {
    let d = devices();
    let snapshot = d.registry.snapshot(&embedded());
    let procedure = snapshot.procedures[0].clone();
    let component = snapshot.components[0].clone();
    let tool = BrowserTool {
        capability_id: "view:devices.table.select".into(),
        tab_id: "tab-1".into(),
        surface_version: 9,
        references: vec![
            BrowserReference::Procedure(procedure.clone()),
            BrowserReference::View {
                component: ComponentDescriptor {
                    observations: Vec::new(),
                    actions: Vec::new(),
                    ..component.clone()
                },
                capability: component.capabilities().next().unwrap(),
            },
        ],
    };
    let sources: Vec<ToolSource> = tool.into_tool_sources().collect();
    let route = ToolRoute::Browser {
        tab_id: "tab-1".into(),
    };
    assert_eq!(
        sources,
        [
            ToolSource {
                descriptor: ToolDescriptor::Procedure(procedure),
                route: route.clone(),
                surface_version: 9,
            },
            ToolSource {
                descriptor: ToolDescriptor::View {
                    registration_id: component.registration_id.clone(),
                    component: ComponentContext {
                        component_type: "devices.table".into(),
                        instance_id: "main".into(),
                    },
                    capability: component.capabilities().next().unwrap(),
                },
                route,
                surface_version: 9,
            },
        ]
    );
    assert_eq!(
        sources[1].descriptor.registration_id(),
        component.registration_id
    );
}

#[test]
fn one_tool_given_twice_is_a_name_collision() {
    let d = devices();
    let snapshot = d.registry.snapshot(&embedded());
    let list = ToolSource::from_snapshot(&snapshot).remove(0);
    assert_eq!(list.descriptor.registration_id(), "r2");
    // Two registrations of one capability are qualified by registration id
    // (they have no component): both get `devices__list__r2`.
    let err = ToolCatalog::from_tools([list.clone(), list], &ExportOptions::default()).unwrap_err();
    assert_eq!(
        err,
        ExportError::NameCollision {
            name: "devices__list__r2".into(),
            first: "domain:devices.list".into(),
            second: "domain:devices.list".into(),
        }
    );
}

// ----- mixed drafts and root-`$id` references in every target --------------------------------

/// The input schema `name` is exported with in every target: MCP, OpenAI
/// Responses and Chat (plain and strict) and Anthropic.
fn exported_inputs(catalog: &ToolCatalog, name: &str) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for t in catalog.mcp_tools().into_iter().filter(|t| t.name == name) {
        out.push(("mcp".to_string(), t.input_schema));
    }
    for mode in [OpenAiMode::Plain, OpenAiMode::Strict] {
        for t in catalog.openai_responses_tools(mode) {
            if t.name == name {
                out.push((format!("openai-responses {mode:?}"), t.parameters));
            }
        }
        for t in catalog.openai_chat_tools(mode) {
            if t.function.name == name {
                out.push((format!("openai-chat {mode:?}"), t.function.parameters));
            }
        }
    }
    for t in catalog
        .anthropic_tools()
        .into_iter()
        .filter(|t| t.name == name)
    {
        out.push(("anthropic".to_string(), t.input_schema));
    }
    assert_eq!(out.len(), 6, "{name} is exported to every target");
    out
}

/// Calls `f` on every schema object of `v` (any value below it that is an
/// object).
fn every_object(v: &Value, f: &mut dyn FnMut(&Map<String, Value>)) {
    match v {
        Value::Object(m) => {
            f(m);
            m.values().for_each(|x| every_object(x, f));
        }
        Value::Array(a) => a.iter().for_each(|x| every_object(x, f)),
        _ => {}
    }
}

#[test]
fn a_root_id_prefixed_ref_is_a_local_ref_in_every_target() {
    let m = AgentManifest::from_json_str(
        r#"{"tools":{"names.set":{"description":"Set","effect":"server-query","inputSchema":
            {"$id": "https://x.test/s", "type": "object",
             "properties": {"a": {"$ref": "https://x.test/s#/$defs/Name"}},
             "$defs": {"Name": {"type": "string"}}}}}}"#,
    )
    .unwrap();
    let (registry, _h) = unbound(m);
    let catalog = ToolCatalog::new(&registry.snapshot(&embedded())).unwrap();
    let tool = catalog.tool("names__set").expect("exported");
    assert!(tool.strict().is_ok(), "{:?}", tool.strict().err());
    for (target, schema) in exported_inputs(&catalog, "names__set") {
        let a = &schema["properties"]["a"];
        let strict = target.ends_with("Strict");
        let expected = if strict {
            // Optional in strict mode: required and nullable.
            json!({"anyOf": [{"type": "string"}, {"type": "null"}]})
        } else {
            json!({"type": "string"})
        };
        assert_eq!(a, &expected, "{target}: {schema}");
        assert!(schema.get("$defs").is_none(), "{target}: {schema}");
        assert!(schema.get("$id").is_none(), "{target}: {schema}");
    }
}

/// The OpenAI tools of the corpus written in mixed drafts: 2019-09's
/// `$recursiveAnchor` (with `$recursiveRef: "#"`) and draft-04's boolean
/// `exclusiveMinimum`, inside otherwise 2020-12 OpenAPI schemas.
const MIXED_DRAFT_TOOLS: [&str; 11] = [
    "openai.Compactconversation",
    "openai.Getinputtokencounts",
    "openai.beta_Compactconversation",
    "openai.beta_Getinputtokencounts",
    "openai.beta_createResponse",
    "openai.createConversation",
    "openai.createConversationItems",
    "openai.createEvalRun",
    "openai.createResponse",
    "openai.searchVectorStore",
    "openai.createFineTuningJob",
];

#[test]
fn mixed_draft_corpus_tools_export_to_every_target_in_one_reading() {
    let mut all = manifest("tests/fixtures/corpus/all.manifest.json");
    all.tools
        .retain(|path, _| MIXED_DRAFT_TOOLS.contains(&path.as_str()));
    assert_eq!(all.tools.len(), MIXED_DRAFT_TOOLS.len());
    // The registry's validator (2020-12) refuses these schemas (a boolean
    // `$recursiveAnchor` or `exclusiveMinimum` breaks its meta-schema), so
    // they are registered with a placeholder and exported as an agent host
    // exports descriptors: through `ToolCatalog::from_tools`.
    let originals: std::collections::BTreeMap<String, Value> = all
        .tools
        .iter_mut()
        .map(|(path, tool)| {
            let schema = std::mem::replace(&mut tool.input_schema, json!({"type": "object"}));
            (path.clone(), schema)
        })
        .collect();
    let (registry, _h, refused) = register_all(all);
    assert_eq!(refused, 0);
    let mut sources = ToolSource::from_snapshot(&registry.snapshot(&embedded()));
    for source in &mut sources {
        if let ToolDescriptor::Procedure(p) = &mut source.descriptor {
            let path = p.procedure_id.trim_start_matches("domain:");
            p.input_schema = Arc::new(originals[path].clone());
        }
    }
    let catalog = ToolCatalog::from_tools(sources, &ExportOptions::default()).expect("exports");
    assert_eq!(catalog.all_tools().len(), MIXED_DRAFT_TOOLS.len());
    let names: Vec<String> = catalog.tools().map(|t| t.name().to_string()).collect();
    for t in catalog.tools() {
        let status = t.strict().map(|_| "strict".to_string());
        eprintln!("{}: {:?}", t.name(), status.map_err(|e| e.to_string()));
    }
    for name in &names {
        for (target, schema) in exported_inputs(&catalog, name) {
            jsonschema::validator_for(&schema).unwrap_or_else(|e| panic!("{name} {target}: {e}"));
            every_object(&schema, &mut |m| {
                for k in [
                    "$recursiveAnchor",
                    "$recursiveRef",
                    "$dynamicAnchor",
                    "$anchor",
                ] {
                    assert!(!m.contains_key(k), "{name} {target}: {k} kept");
                }
                for k in ["exclusiveMinimum", "exclusiveMaximum"] {
                    assert!(
                        !m.get(k).is_some_and(Value::is_boolean),
                        "{name} {target}: boolean {k} kept"
                    );
                }
            });
        }
    }
    // The draft-04 bound is read as such: `minimum: 0, exclusiveMinimum:
    // true` is the 2020-12 `exclusiveMinimum: 0`.
    let tuning = catalog
        .tools()
        .find(|t| t.name().contains("createFineTuningJob"))
        .expect("createFineTuningJob exported");
    let (_, mcp) = &exported_inputs(&catalog, tuning.name())[0];
    let mut exclusive = 0;
    every_object(mcp, &mut |m| {
        if m.get("exclusiveMinimum").is_some_and(Value::is_number) {
            exclusive += 1;
            assert!(!m.contains_key("minimum"), "{m:?}");
        }
    });
    assert!(exclusive > 0, "{mcp}");
}
