//! The pipeline asserts JSON Schema `format` with zod's acceptance
//! (docs/formats.md): the input schemas here are what oRPC's converter
//! writes for `z.uuid()` and `z.iso.datetime()` (a bare `format`, no
//! `pattern`), so before formats were enforced these values reached the
//! server and came back as an unactionable `EXECUTION_FAILED`.

mod common;

use std::sync::{Arc, Mutex};

use common::{consumer, now, RecordingExecutor};
use serde_json::{json, Map, Value};
use surface_runtime::{
    AgentInvocation, AgentInvocationResult, AgentManifest, AgentProcedureBinding,
    AgentProcedureRef, Authority, BoundField, BoundInput, ManualClock, Retry, SurfaceRegistry,
};

const MANIFEST: &str = r#"{"tools": {
  "tickets.schedule": {
    "description": "Schedule a ticket",
    "inputSchema": {"type": "object",
      "properties": {
        "ticketId": {"type": "string", "format": "uuid"},
        "dueAt": {"type": "string", "format": "date-time"},
        "assignee": {"type": "string", "format": "email"},
        "ref": {"type": "string", "format": "uri-reference"}
      },
      "required": ["ticketId", "dueAt"], "additionalProperties": false},
    "effect": "server-mutation"
  }
}}"#;

/// `tickets.schedule` with `ticketId` bound from the view and locked.
struct TicketBinding {
    ticket_id: String,
}

impl BoundInput for TicketBinding {
    type Input = Value;
    const PROCEDURE: &'static str = "tickets.schedule";
    fn bound_fields() -> &'static [BoundField] {
        &[BoundField {
            name: "ticketId",
            locked: true,
        }]
    }
    fn to_bound_json(&self) -> Result<Map<String, Value>, serde_json::Error> {
        let mut m = Map::new();
        m.insert("ticketId".into(), json!(self.ticket_id));
        Ok(m)
    }
}

struct Setup {
    registry: SurfaceRegistry,
    executor: Arc<RecordingExecutor>,
    selected: Arc<Mutex<String>>,
    _handle: surface_runtime::RegistrationHandle,
}

fn setup(ticket_id: &str) -> Setup {
    let authority =
        Authority::from_manifest(AgentManifest::from_json_str(MANIFEST).expect("manifest"));
    let registry = SurfaceRegistry::builder(authority.clone())
        .clock(Arc::new(ManualClock::new(1_000_000)))
        .secret([7; 32])
        .build();
    let executor = Arc::new(RecordingExecutor::default());
    registry.set_procedure_executor(executor.clone());
    let selected = Arc::new(Mutex::new(ticket_id.to_string()));
    let sel = selected.clone();
    let procedure: AgentProcedureRef<Value, Value> =
        AgentProcedureRef::from_authority(&authority, "tickets.schedule").expect("path");
    let handle = registry
        .register_procedure(
            AgentProcedureBinding::new(procedure).bind(move || TicketBinding {
                ticket_id: sel.lock().unwrap().clone(),
            }),
        )
        .expect("registers");
    Setup {
        registry,
        executor,
        selected,
        _handle: handle,
    }
}

fn call(setup: &Setup, id: &str, input: Value) -> AgentInvocationResult {
    let mut invocation = AgentInvocation::new(id, "domain:tickets.schedule");
    invocation.input = input;
    now(setup.registry.invoke(invocation, &consumer()))
}

fn error(result: &AgentInvocationResult) -> &surface_runtime::AgentError {
    result.error().expect("an error")
}

#[test]
fn bound_value_violating_a_format_is_precondition_failed_binding_failed() {
    let s = setup("not-a-uuid");
    let r = call(&s, "i1", json!({"dueAt": "2026-11-29T19:00:00Z"}));
    let e = error(&r);
    assert_eq!(e.code.as_str(), "PRECONDITION_FAILED");
    assert_eq!(e.details["reason"], json!("binding-failed"));
    assert_eq!(e.retry, Retry::AfterRefresh);
    assert!(!serde_json::to_string(&r).unwrap().contains("not-a-uuid"));
    assert!(s.executor.calls().is_empty());

    // The same call with a valid bound uuid runs (any version nibble: the
    // oRPC schema cannot tell z.guid() from z.uuid()).
    *s.selected.lock().unwrap() = "123e4567-e89b-02d3-a456-426614174000".into();
    let r = call(&s, "i2", json!({"dueAt": "2026-11-29T19:00:00Z"}));
    assert!(r.error().is_none(), "{r:?}");
    assert_eq!(
        s.executor.calls()[0].input,
        json!({"ticketId": "123e4567-e89b-02d3-a456-426614174000", "dueAt": "2026-11-29T19:00:00Z"})
    );
}

#[test]
fn agent_value_violating_a_format_is_invalid_input_at_its_path() {
    let s = setup("123e4567-e89b-12d3-a456-426614174000");
    let r = call(&s, "i1", json!({"dueAt": "tomorrow"}));
    let e = error(&r);
    assert_eq!(e.code.as_str(), "INVALID_INPUT");
    assert_eq!(e.retry, Retry::WithChanges);
    let errors = e.details["issues"].as_array().expect("details.issues");
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0]["path"], json!("dueAt"));
    assert_eq!(errors[0]["keyword"], json!("format"));
    // The message names the format and never echoes the value.
    assert_eq!(errors[0]["message"], json!("must be a valid date-time"));
    assert!(s.executor.calls().is_empty());
}

#[test]
fn every_format_error_is_reported_with_its_path() {
    let s = setup("123e4567-e89b-12d3-a456-426614174000");
    let r = call(
        &s,
        "i1",
        json!({"dueAt": "2026-02-30T10:00:00Z", "assignee": "a@localhost"}),
    );
    let mut pairs: Vec<(String, String)> = error(&r).details["issues"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                format!("/{}", e["path"].as_str().unwrap()),
                e["keyword"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    pairs.sort();
    assert_eq!(
        pairs,
        vec![
            ("/assignee".to_string(), "format".to_string()),
            ("/dueAt".to_string(), "format".to_string())
        ]
    );
}

#[test]
fn zod_shapes_pass_and_unknown_formats_stay_annotations() {
    let s = setup("123e4567-e89b-12d3-a456-426614174000");
    // Offsets, local times and minute precision are all z.iso.datetime()
    // shapes; `uri-reference` is not asserted.
    for (i, due) in [
        "2026-11-29T19:00:00+02:00",
        "2026-11-29T19:00",
        "2026-11-29T19:00Z",
    ]
    .iter()
    .enumerate()
    {
        let r = call(
            &s,
            &format!("ok-{i}"),
            json!({"dueAt": due, "assignee": "first.last@example.org", "ref": "not a ref \\ at all"}),
        );
        assert!(r.error().is_none(), "{due}: {r:?}");
    }
    assert_eq!(s.executor.calls().len(), 3);
}
