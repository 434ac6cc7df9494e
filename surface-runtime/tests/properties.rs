//! Property tests: locked fields never reach the
//! executor; the executor never receives input that fails the full schema;
//! evidence never authorizes a different effective input; surfaceVersion
//! strictly increases.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use common::*;
use proptest::prelude::*;
use serde_json::{json, Map, Value};
use surface_runtime::{AgentInvocation, AgentInvocationResult, AgentProcedureBinding, ErrorCode};

fn json_leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        "[a-z0-9]{0,6}".prop_map(Value::String),
        any::<i64>().prop_map(|n| json!(n)),
        any::<bool>().prop_map(Value::Bool),
        Just(Value::Null),
        prop::collection::vec("[a-z0-9]{0,4}", 0..3).prop_map(|v| json!(v)),
        "[a-z]{30,50}".prop_map(Value::String),
    ]
}

/// Agent inputs: any subset of the schema's fields plus strangers, with
/// arbitrary values (often invalid).
fn agent_input() -> impl Strategy<Value = Value> {
    prop::collection::btree_map(
        prop_oneof![
            Just("deviceIds".to_string()),
            Just("reason".to_string()),
            Just("extra".to_string()),
            "[a-z]{1,5}",
        ],
        json_leaf(),
        0..4,
    )
    .prop_map(|m| Value::Object(m.into_iter().collect::<Map<_, _>>()))
}

fn bound_ids() -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec("[a-z0-9]{0,3}", 0..4)
}

fn full_validator() -> jsonschema::Validator {
    let auth = authority();
    jsonschema::validator_for(
        &auth
            .manifest()
            .tool("devices.disable")
            .unwrap()
            .input_schema,
    )
    .unwrap()
}

/// Invokes; when a confirmation is required, the app approves and the
/// agent retries once with a fresh id and the evidence.
fn invoke_confirming(f: &Fixture, n: &mut u32, input: &Value) -> AgentInvocationResult {
    *n += 1;
    let mut inv = AgentInvocation::new(format!("i{n}"), "domain:devices.disable");
    inv.input = input.clone();
    let r = now(f
        .registry
        .invoke(at_current_version(&f.registry, inv.clone()), &consumer()));
    let Some(err) = r.error() else { return r };
    if err.code != ErrorCode::ConfirmationRequired {
        return r;
    }
    let ev = f
        .registry
        .confirm(err.details["confirmationId"].as_str().unwrap())
        .unwrap();
    *n += 1;
    inv.invocation_id = format!("i{n}");
    inv.confirmation = Some(ev);
    now(f
        .registry
        .invoke(at_current_version(&f.registry, inv), &consumer()))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn locked_fields_never_reach_the_executor(bound in bound_ids(), inputs in prop::collection::vec(agent_input(), 1..5)) {
        let f = fixture();
        let sel = Arc::new(Mutex::new(bound.clone()));
        let s = sel.clone();
        let _h = f.registry.register_procedure(
            AgentProcedureBinding::new(procedure(f.registry.authority(), "devices.disable"))
                .bind(move || DisableBinding { device_ids: s.lock().unwrap().clone() }),
        ).unwrap();
        let mut n = 0;
        for input in &inputs {
            let before = f.executor.calls().len();
            let r = invoke_confirming(&f, &mut n, input);
            if input.get("deviceIds").is_some() {
                prop_assert_eq!(r.error().map(|e| e.code), Some(ErrorCode::InvalidInput));
                prop_assert_eq!(&r.error().unwrap().details["lockedFields"], &json!(["deviceIds"]));
                prop_assert_eq!(f.executor.calls().len(), before);
            }
        }
        for call in f.executor.calls() {
            prop_assert_eq!(&call.input["deviceIds"], &json!(bound));
        }
    }

    #[test]
    fn executor_never_receives_input_that_fails_the_full_schema(
        bound in bound_ids(),
        reason in prop_oneof!["[a-z ]{0,10}", "[a-z]{38,45}"],
        inputs in prop::collection::vec(agent_input(), 1..5),
    ) {
        let f = fixture();
        let b = bound.clone();
        let _h = f.registry.register_procedure(
            AgentProcedureBinding::new(procedure(f.registry.authority(), "devices.disable"))
                .bind(move || DisableWithReason { device_ids: b.clone(), reason: reason.clone() }),
        ).unwrap();
        let validator = full_validator();
        let mut n = 0;
        for input in &inputs {
            let r = invoke_confirming(&f, &mut n, input);
            if let Some(e) = r.error() {
                prop_assert!(matches!(e.code,
                    ErrorCode::InvalidInput | ErrorCode::PreconditionFailed), "{:?}", e);
            }
        }
        for call in f.executor.calls() {
            prop_assert!(validator.is_valid(&call.input), "executor got {}", call.input);
        }
    }

    #[test]
    fn evidence_never_authorizes_a_different_effective_input(
        ids_a in prop::collection::vec("[a-c]{1,2}", 1..3),
        ids_b in prop::collection::vec("[a-c]{1,2}", 1..3),
        reason_a in "[a-c]{0,2}",
        reason_b in "[a-c]{0,2}",
    ) {
        let f = fixture();
        let sel = Arc::new(Mutex::new(ids_a.clone()));
        let s = sel.clone();
        let _h = f.registry.register_procedure(
            AgentProcedureBinding::new(procedure(f.registry.authority(), "devices.disable"))
                .bind(move || DisableBinding { device_ids: s.lock().unwrap().clone() }),
        ).unwrap();
        let mut inv = AgentInvocation::new("ask", "domain:devices.disable");
        inv.input = json!({"reason": reason_a});
        let r = now(f.registry.invoke(at_current_version(&f.registry, inv), &consumer()));
        let cid = r.error().unwrap().details["confirmationId"].as_str().unwrap().to_string();
        let approved = f.registry.pending_confirmation(&cid).unwrap().input;
        let ev = f.registry.confirm(&cid).unwrap();

        *sel.lock().unwrap() = ids_b.clone();
        let mut retry = AgentInvocation::new("retry", "domain:devices.disable");
        retry.input = json!({"reason": reason_b});
        retry.confirmation = Some(ev);
        let r = now(f.registry.invoke(at_current_version(&f.registry, retry), &consumer()));
        let effective = json!({"deviceIds": ids_b, "reason": reason_b});
        let calls = f.executor.calls();
        if effective == approved {
            prop_assert!(r.error().is_none(), "{:?}", r);
            prop_assert_eq!(calls.len(), 1);
            prop_assert_eq!(&calls[0].input, &approved);
        } else {
            prop_assert_eq!(r.error().map(|e| e.code), Some(ErrorCode::ConfirmationInvalid));
            prop_assert!(calls.is_empty());
        }
    }

    #[test]
    fn surface_version_strictly_increases(ops in prop::collection::vec(0u8..7, 1..40)) {
        let f = fixture();
        let versions: Arc<Mutex<Vec<u64>>> = Arc::default();
        let sink = versions.clone();
        let _sub = f.registry.subscribe(move |c| sink.lock().unwrap().push(c.surface_version));
        let flag = Arc::new(AtomicBool::new(true));
        let mut handles = Vec::new();
        let mut n = 0u32;
        for op in ops {
            let before = f.registry.surface_version();
            let must_bump = match op {
                0 => {
                    let fl = flag.clone();
                    handles.push(f.registry.register_procedure(
                        AgentProcedureBinding::new(procedure(f.registry.authority(), "devices.list"))
                            .when(move || fl.load(Ordering::SeqCst)),
                    ).unwrap());
                    true
                }
                1 => handles.pop().is_some(),
                2 => { flag.fetch_xor(true, Ordering::SeqCst); false }
                3 => { let s = f.registry.snapshot(&consumer()); prop_assert!(s.surface_version >= before); false }
                4 => { f.registry.refresh_availability(); false }
                5 => { f.registry.notify_changed(); true }
                _ => { n += 1; call(&f.registry, &format!("i{n}"), "domain:devices.list", json!({})); false }
            };
            let after = f.registry.surface_version();
            prop_assert!(after >= before);
            if must_bump { prop_assert!(after > before); }
        }
        let v = versions.lock().unwrap();
        prop_assert!(v.windows(2).all(|w| w[0] < w[1]), "{:?}", v);
        prop_assert_eq!(v.last().copied().unwrap_or(0), f.registry.surface_version());
    }
}
