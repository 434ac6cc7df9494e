//! Surfaces too large for one tool list (docs/pipeline.md, "Large
//! surfaces" and "Concurrency groups"): a snapshot's scope and budget with
//! priorities and the `truncated` marker, and calls of one concurrency
//! group run one after the other.

mod common;

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use common::*;
use futures_channel::oneshot;
use serde_json::{json, Value};
use surface_runtime::{
    AgentInvocation, AgentProcedureBinding, ComponentDefinition, SnapshotOptions, SurfaceRegistry,
    ViewCapability,
};

fn view(name: &str) -> ViewCapability {
    ViewCapability::with_schema(name, name, json!({"type": "object"}), |_v: Value| async {
        Ok(Value::Null)
    })
}

fn ids(registry: &SurfaceRegistry, options: &SnapshotOptions) -> (Vec<String>, Option<Value>) {
    let snapshot = registry.snapshot_with(&consumer(), options);
    let mut ids: Vec<String> = snapshot
        .procedures
        .iter()
        .map(|p| p.procedure_id.clone())
        .collect();
    for c in &snapshot.components {
        ids.extend(c.actions.iter().map(|a| a.capability_id.clone()));
    }
    (ids, snapshot.truncated.map(Value::Object))
}

#[test]
fn a_budget_keeps_the_highest_priority_first_and_counts_what_it_dropped() {
    let f = fixture();
    let _list = register_plain(&f.registry, "devices.list");
    let _rename = f
        .registry
        .register_procedure(
            AgentProcedureBinding::new(procedure(f.registry.authority(), "devices.rename"))
                .priority(10),
        )
        .unwrap();
    let _table = f
        .registry
        .register_component(
            ComponentDefinition::new("devices.table", "main")
                .priority(5)
                .capability(view("select"))
                .capability(view("filter")),
        )
        .unwrap();
    let everything = ids(&f.registry, &SnapshotOptions::default());
    assert_eq!(
        everything,
        (
            vec![
                "domain:devices.list".to_string(),
                "domain:devices.rename".into(),
                "view:devices.table.select".into(),
                "view:devices.table.filter".into()
            ],
            None
        )
    );
    // Budget 3: rename (10) and the table (5, two capabilities); list (0)
    // is dropped. Registration order is kept in what is listed.
    let options = SnapshotOptions {
        budget: Some(3),
        ..SnapshotOptions::default()
    };
    assert_eq!(
        ids(&f.registry, &options),
        (
            vec![
                "domain:devices.rename".to_string(),
                "view:devices.table.select".into(),
                "view:devices.table.filter".into()
            ],
            Some(json!({"droppedComponents": 0, "droppedProcedures": 1, "budget": 3}))
        )
    );
    // Budget 2: the table does not fit; list does.
    let options = SnapshotOptions {
        budget: Some(2),
        ..SnapshotOptions::default()
    };
    assert_eq!(
        ids(&f.registry, &options),
        (
            vec![
                "domain:devices.list".to_string(),
                "domain:devices.rename".into()
            ],
            Some(json!({"droppedComponents": 1, "droppedProcedures": 0, "budget": 2}))
        )
    );
}

#[test]
fn a_scope_lists_the_capabilities_under_its_prefixes() {
    let f = fixture();
    let _list = register_plain(&f.registry, "devices.list");
    let _rename = register_plain(&f.registry, "devices.rename");
    let _table = f
        .registry
        .register_component(
            ComponentDefinition::new("devices.table", "main")
                .capability(view("select"))
                .capability(view("filter")),
        )
        .unwrap();
    let _panel = f
        .registry
        .register_component(ComponentDefinition::new("panel", "main").capability(view("open")))
        .unwrap();
    let options = SnapshotOptions {
        scope: vec!["domain:devices.ren".into(), "view:devices.table.sel".into()],
        budget: None,
    };
    assert_eq!(
        ids(&f.registry, &options),
        (
            vec![
                "domain:devices.rename".to_string(),
                "view:devices.table.select".into()
            ],
            None
        )
    );
    let snapshot = f.registry.snapshot_with(&consumer(), &options);
    assert_eq!(
        snapshot.components.len(),
        1,
        "the panel has nothing in scope"
    );
}

#[test]
fn the_registry_default_options_cut_every_snapshot() {
    let f = fixture_with(|b| {
        b.snapshot_options(SnapshotOptions {
            scope: Vec::new(),
            budget: Some(1),
        })
    });
    let _list = register_plain(&f.registry, "devices.list");
    let _rename = register_plain(&f.registry, "devices.rename");
    let snapshot = f.registry.snapshot(&consumer());
    assert_eq!(snapshot.procedures.len(), 1);
    assert_eq!(snapshot.procedures[0].procedure_id, "domain:devices.list");
    assert_eq!(
        snapshot.truncated.map(Value::Object),
        Some(json!({"droppedComponents": 0, "droppedProcedures": 1, "budget": 1}))
    );
    // The cut is what the agent is shown, not what it may call: a call of
    // a capability left out still runs (the budget is not a policy).
    let r = call(
        &f.registry,
        "i1",
        "domain:devices.rename",
        json!({"deviceId": "d1", "name": "x"}),
    );
    assert!(r.is_ok(), "{r:?}");
}

fn poll<F: Future + ?Sized>(future: &mut Pin<Box<F>>) -> Poll<F::Output> {
    future
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
}

/// A view capability `name` whose handler logs its start and waits for its
/// release.
fn waiting_view(
    name: &'static str,
    log: &Arc<Mutex<Vec<String>>>,
    release: oneshot::Receiver<()>,
) -> ViewCapability {
    let log = log.clone();
    let release = Mutex::new(Some(release));
    ViewCapability::with_schema(name, name, json!({"type": "object"}), move |_v: Value| {
        log.lock().unwrap().push(format!("{name} started"));
        let release = release.lock().unwrap().take().expect("called once");
        let log = log.clone();
        async move {
            release.await.ok();
            log.lock().unwrap().push(format!("{name} ended"));
            Ok(Value::Null)
        }
    })
}

fn invocation(id: &str, capability: &str, registry: &SurfaceRegistry) -> AgentInvocation {
    let mut inv = AgentInvocation::new(id, capability);
    inv.surface_version = Some(registry.surface_version());
    inv
}

#[test]
fn calls_in_one_concurrency_group_run_one_after_the_other() {
    let registry = SurfaceRegistry::new(authority());
    let log = Arc::new(Mutex::new(Vec::new()));
    let (release_a, a) = oneshot::channel();
    let (release_b, b) = oneshot::channel();
    let (release_c, c) = oneshot::channel();
    let _table = registry
        .register_component(
            ComponentDefinition::new("devices.table", "main")
                .concurrency_group("devices.table/main")
                .capability(waiting_view("a", &log, a))
                .capability(waiting_view("b", &log, b)),
        )
        .unwrap();
    let _other = registry
        .register_component(
            ComponentDefinition::new("panel", "main").capability(waiting_view("c", &log, c)),
        )
        .unwrap();
    let consumer = consumer();
    let mut first = Box::pin(registry.invoke(
        invocation("i1", "view:devices.table.a", &registry),
        &consumer,
    ));
    let mut second = Box::pin(registry.invoke(
        invocation("i2", "view:devices.table.b", &registry),
        &consumer,
    ));
    let mut third =
        Box::pin(registry.invoke(invocation("i3", "view:panel.c", &registry), &consumer));
    assert!(poll(&mut first).is_pending());
    assert!(poll(&mut second).is_pending());
    assert!(poll(&mut third).is_pending());
    // b waits for a's turn; c, in no group, runs at once.
    assert_eq!(*log.lock().unwrap(), ["a started", "c started"]);
    release_b.send(()).unwrap();
    assert!(poll(&mut second).is_pending(), "b has not started");
    release_a.send(()).unwrap();
    assert!(poll(&mut first).is_ready());
    assert!(poll(&mut second).is_ready());
    release_c.send(()).unwrap();
    assert!(poll(&mut third).is_ready());
    assert_eq!(
        *log.lock().unwrap(),
        [
            "a started",
            "c started",
            "a ended",
            "b started",
            "b ended",
            "c ended"
        ]
    );
}

#[test]
fn a_binding_with_a_context_joins_its_components_group() {
    let f = fixture();
    let log = Arc::new(Mutex::new(Vec::new()));
    let (release_a, a) = oneshot::channel();
    let table = f
        .registry
        .register_component(
            ComponentDefinition::new("devices.table", "main")
                .concurrency_group("devices.table/main")
                .capability(waiting_view("a", &log, a)),
        )
        .unwrap();
    let _list = f
        .registry
        .register_procedure(
            AgentProcedureBinding::new(procedure(f.registry.authority(), "devices.list"))
                .context(&table),
        )
        .unwrap();
    let consumer = consumer();
    let mut view_call = Box::pin(f.registry.invoke(
        invocation("i1", "view:devices.table.a", &f.registry),
        &consumer,
    ));
    let mut procedure_call = Box::pin(f.registry.invoke(
        invocation("i2", "domain:devices.list", &f.registry),
        &consumer,
    ));
    assert!(poll(&mut view_call).is_pending());
    assert!(poll(&mut procedure_call).is_pending());
    // The executor is not even asked until the view call has settled.
    assert!(f.executor.calls().is_empty());
    release_a.send(()).unwrap();
    assert!(poll(&mut view_call).is_ready());
    assert!(matches!(poll(&mut procedure_call), Poll::Ready(r) if r.is_ok()));
    assert_eq!(f.executor.calls().len(), 1);
}

fn meta_catalog(registry: &SurfaceRegistry) -> surface_runtime::export::ToolCatalog {
    let options = surface_runtime::export::ExportOptions {
        mode: surface_runtime::export::ToolMode::Meta,
        ..Default::default()
    };
    surface_runtime::export::ToolCatalog::with_options(&registry.snapshot(&consumer()), &options)
        .unwrap()
}

#[test]
fn meta_mode_exports_two_tools_to_every_target() {
    use surface_runtime::export::OpenAiMode;
    let f = fixture();
    let _list = register_plain(&f.registry, "devices.list");
    let _rename = register_plain(&f.registry, "devices.rename");
    let catalog = meta_catalog(&f.registry);
    let mcp: Vec<Value> = catalog
        .mcp_tools()
        .iter()
        .map(|t| serde_json::to_value(t).unwrap())
        .collect();
    assert_eq!(mcp.len(), 2);
    assert_eq!(mcp[0]["name"], "surface_discover");
    assert_eq!(
        mcp[0]["annotations"],
        json!({"readOnlyHint": true, "openWorldHint": false})
    );
    assert_eq!(mcp[1]["name"], "surface_act");
    assert_eq!(
        mcp[1]["inputSchema"],
        json!({"type": "object", "properties": {
            "tool": {"type": "string", "description": "The tool's name, as surface_discover listed it."},
            "arguments": {"type": "object", "description": "The tool's arguments."}},
            "required": ["tool"], "additionalProperties": false})
    );
    let strict = catalog.openai_responses_tools(OpenAiMode::Strict);
    assert_eq!(
        strict
            .iter()
            .map(|t| (t.name.as_str(), t.strict))
            .collect::<Vec<_>>(),
        [("surface_discover", false), ("surface_act", false)]
    );
    let chat = catalog.openai_chat_tools(OpenAiMode::Plain);
    assert_eq!(chat[1].function.name, "surface_act");
    let anthropic = catalog.anthropic_tools();
    assert_eq!(anthropic[0].input_schema, mcp[0]["inputSchema"]);
    // The capability tools are still the catalog's, for discovery.
    assert_eq!(catalog.tools().count(), 2);
}

#[test]
fn surface_act_becomes_the_named_tools_call_and_bad_meta_calls_are_refused() {
    use surface_runtime::export::{ResolvedCall, ToolCall, ToolCallError};
    let f = fixture();
    let _rename =
        f.registry
            .register_procedure(
                AgentProcedureBinding::new(procedure(f.registry.authority(), "devices.rename"))
                    .bind(|| RenameBinding {
                        device_id: "d1".into(),
                    }),
            )
            .unwrap();
    let catalog = meta_catalog(&f.registry);
    let act = ToolCall::new(
        "surface_act",
        "call-1",
        Some(json!({"tool": "devices__rename", "arguments": {"name": "Lobby"}})),
    );
    let ResolvedCall::Tool(inner) = catalog.resolve_call(act).unwrap() else {
        panic!("surface_act names a tool")
    };
    assert_eq!(
        inner,
        ToolCall::new("devices__rename", "call-1", Some(json!({"name": "Lobby"})))
    );
    let invocation = catalog.invocation(inner).unwrap();
    let result = now(f.registry.invoke(invocation, &consumer()));
    assert!(result.is_ok(), "{result:?}");
    assert_eq!(
        f.executor.calls()[0].input,
        json!({"deviceId": "d1", "name": "Lobby"})
    );

    let refused = |arguments: Value| {
        catalog
            .resolve_call(ToolCall::new("surface_act", "c", Some(arguments)))
            .unwrap_err()
    };
    assert_eq!(
        refused(json!({"tool": "devices__rename", "arguments": [1]})),
        ToolCallError::ArgumentsNotObject {
            name: "devices__rename".into(),
            found: "an array"
        }
    );
    assert_eq!(
        refused(json!({"arguments": {}})),
        ToolCallError::MetaArguments {
            tool: "surface_act"
        }
    );
    // The tool's arguments flattened into surface_act are not dropped.
    let flattened = refused(json!({"tool": "devices__rename", "name": "Lobby"}));
    assert_eq!(
        flattened,
        ToolCallError::MetaArguments {
            tool: "surface_act"
        }
    );
    assert_eq!(
        flattened.agent_error().message,
        "surface_act takes `tool`, the name of a tool surface_discover listed, and `arguments`, an object following that tool's input schema; nothing else. Put the tool's arguments inside `arguments`."
    );
    assert!(matches!(
        catalog.resolve_call(ToolCall::new("devices__rename", "c", None)),
        Err(ToolCallError::UnknownTool { .. })
    ));
    // Discovery answers from the catalog: a limit over 50 lists 50; a limit
    // of 0 does not follow the schema.
    assert_eq!(
        catalog
            .resolve_call(ToolCall::new(
                "surface_discover",
                "d",
                Some(json!({"limit": 0}))
            ))
            .unwrap_err(),
        ToolCallError::MetaArguments {
            tool: "surface_discover"
        }
    );
    let ResolvedCall::Discovered(found) = catalog
        .resolve_call(ToolCall::new(
            "surface_discover",
            "d",
            Some(json!({"limit": 500})),
        ))
        .unwrap()
    else {
        panic!("discovery is answered")
    };
    let found = Value::Object(found.structured_content.unwrap());
    assert_eq!(
        (
            &found["total"],
            &found["matched"],
            &found["more"],
            &found["surfaceVersion"]
        ),
        (&json!(1), &json!(1), &json!(0), &json!("1"))
    );
    assert_eq!(found["tools"][0]["name"], "devices__rename");
}
