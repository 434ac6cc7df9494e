//! Property tests: locked fields never reach the
//! executor; the executor never receives input that fails the full schema;
//! evidence never authorizes a different effective input; surfaceVersion
//! strictly increases.
//!
//! Case counts (`CASES`, or `PROPTEST_CASES`) are what runs in a few
//! seconds each in a debug build. The seed is random per run, printed by
//! a failing test, and `PROPTEST_RNG_SEED=<n>` replays it. Each test also
//! counts how often it reached its interesting branch (the executor ran,
//! the evidence matched) and fails if that was too rare to mean anything.

mod common;

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use common::*;
use proptest::prelude::*;
use proptest::test_runner::{RngSeed, TestRunner};
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

/// Agent inputs the schema accepts with a valid binding: no locked field,
/// no stranger, a `reason` within `maxLength`.
fn valid_agent_input() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(json!({})),
        "[a-z ]{0,40}".prop_map(|r| json!({ "reason": r })),
    ]
}

/// Cases per property (before `PROPTEST_CASES`).
const CASES: u32 = 2048;

/// The config of every property here: [`CASES`] cases unless
/// `PROPTEST_CASES` says otherwise, and a seed from `PROPTEST_RNG_SEED` or
/// the clock, printed (cargo test shows it when the test fails).
fn config() -> ProptestConfig {
    let mut config = ProptestConfig {
        cases: CASES,
        failure_persistence: None,
        ..ProptestConfig::default()
    };
    if std::env::var_os("PROPTEST_CASES").is_some() {
        config.cases = ProptestConfig::default().cases;
    }
    let seed = match config.rng_seed {
        RngSeed::Fixed(seed) => seed,
        RngSeed::Random => std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64),
    };
    config.rng_seed = RngSeed::Fixed(seed);
    eprintln!(
        "proptest: {} cases, PROPTEST_RNG_SEED={seed} replays this run",
        config.cases
    );
    config
}

/// Runs `test` on `strategy` under [`config`], panicking with proptest's
/// minimal failing case; returns the number of cases run.
fn check<S: Strategy>(strategy: S, test: impl Fn(S::Value) -> Result<(), TestCaseError>) -> u32 {
    let config = config();
    let cases = config.cases;
    let mut runner = TestRunner::new(config);
    if let Err(e) = runner.run(&strategy, test) {
        panic!("{e}");
    }
    cases
}

/// Fails unless `reached` is at least a tenth of `cases`: a property whose
/// interesting branch almost never runs checks almost nothing.
fn assert_reached(what: &str, reached: &AtomicU32, cases: u32) {
    let reached = reached.load(Ordering::SeqCst);
    eprintln!("proptest: {what} in {reached} of {cases} cases");
    assert!(
        reached >= cases / 10,
        "{what} in only {reached} of {cases} cases; the property checks almost nothing"
    );
}

/// Registers `devices.disable` with `deviceIds` bound (locked) to a
/// selection starting at `ids`; the selection and the handle.
fn bind_selection(
    f: &Fixture,
    ids: &[String],
) -> (Arc<Mutex<Vec<String>>>, surface_runtime::RegistrationHandle) {
    let sel = Arc::new(Mutex::new(ids.to_vec()));
    let s = sel.clone();
    let handle =
        f.registry
            .register_procedure(
                AgentProcedureBinding::new(procedure(f.registry.authority(), "devices.disable"))
                    .bind(move || DisableBinding {
                        device_ids: s.lock().unwrap().clone(),
                    }),
            )
            .unwrap();
    (sel, handle)
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
    inv.confirmation_id = Some(ev.confirmation_id);
    now(f
        .registry
        .invoke(at_current_version(&f.registry, inv), &consumer()))
}

#[test]
fn locked_fields_never_reach_the_executor() {
    let reached = AtomicU32::new(0);
    let inputs = prop::collection::vec(prop_oneof![agent_input(), valid_agent_input()], 1..5);
    let cases = check((bound_ids(), inputs), |(bound, inputs)| {
        let f = fixture();
        let (_sel, _h) = bind_selection(&f, &bound);
        let mut n = 0;
        for input in &inputs {
            let before = f.executor.calls().len();
            let r = invoke_confirming(&f, &mut n, input);
            if input.get("deviceIds").is_some() {
                prop_assert_eq!(
                    r.error().map(|e| e.code.clone()),
                    Some(ErrorCode::InvalidInput)
                );
                prop_assert_eq!(
                    &r.error().unwrap().details["lockedFields"],
                    &json!(["deviceIds"])
                );
                prop_assert_eq!(f.executor.calls().len(), before);
            } else if r.error().is_none() {
                prop_assert_eq!(f.executor.calls().len(), before + 1);
            }
        }
        let calls = f.executor.calls();
        if !calls.is_empty() {
            reached.fetch_add(1, Ordering::SeqCst);
        }
        for call in calls {
            prop_assert_eq!(&call.input["deviceIds"], &json!(bound));
        }
        Ok(())
    });
    assert_reached("the executor ran", &reached, cases);
}

#[test]
fn executor_never_receives_input_that_fails_the_full_schema() {
    let reached = AtomicU32::new(0);
    let validator = full_validator();
    let strategy = (
        bound_ids(),
        prop_oneof!["[a-z ]{0,10}", "[a-z]{38,45}"],
        prop::collection::vec(prop_oneof![agent_input(), valid_agent_input()], 1..5),
    );
    let cases = check(strategy, |(bound, reason, inputs)| {
        let f = fixture();
        let b = bound.clone();
        let _h = f
            .registry
            .register_procedure(
                AgentProcedureBinding::new(procedure(f.registry.authority(), "devices.disable"))
                    .bind(move || DisableWithReason {
                        device_ids: b.clone(),
                        reason: reason.clone(),
                    }),
            )
            .unwrap();
        let mut n = 0;
        for input in &inputs {
            let before = f.executor.calls().len();
            let r = invoke_confirming(&f, &mut n, input);
            match r.error() {
                Some(e) => prop_assert!(
                    matches!(
                        e.code,
                        ErrorCode::InvalidInput | ErrorCode::PreconditionFailed
                    ),
                    "{:?}",
                    e
                ),
                None => prop_assert_eq!(f.executor.calls().len(), before + 1),
            }
        }
        let calls = f.executor.calls();
        if !calls.is_empty() {
            reached.fetch_add(1, Ordering::SeqCst);
        }
        for call in calls {
            prop_assert!(
                validator.is_valid(&call.input),
                "executor got {}",
                call.input
            );
        }
        Ok(())
    });
    assert_reached("the executor ran", &reached, cases);
}

#[test]
fn evidence_never_authorizes_a_different_effective_input() {
    let matched = AtomicU32::new(0);
    let ids = || prop::collection::vec("[a-c]{1,2}", 1..3);
    // Half the cases retry with exactly the approved input: the branch
    // where the evidence must authorize is reached by construction.
    let strategy = (ids(), ids(), "[a-c]{0,2}", "[a-c]{0,2}", any::<bool>());
    let cases = check(strategy, |(ids_a, ids_b, reason_a, reason_b, same)| {
        let (ids_b, reason_b) = if same {
            (ids_a.clone(), reason_a.clone())
        } else {
            (ids_b, reason_b)
        };
        let f = fixture();
        let (sel, _h) = bind_selection(&f, &ids_a);
        let mut inv = AgentInvocation::new("ask", "domain:devices.disable");
        inv.input = json!({ "reason": reason_a });
        let r = now(f
            .registry
            .invoke(at_current_version(&f.registry, inv), &consumer()));
        prop_assert_eq!(
            r.error().map(|e| e.code.clone()),
            Some(ErrorCode::ConfirmationRequired)
        );
        let cid = r.error().unwrap().details["confirmationId"]
            .as_str()
            .unwrap()
            .to_string();
        let approved = f.registry.pending_confirmation(&cid).unwrap().input;
        prop_assert_eq!(&approved, &json!({"deviceIds": ids_a, "reason": reason_a}));
        let ev = f.registry.confirm(&cid).unwrap();

        *sel.lock().unwrap() = ids_b.clone();
        let mut retry = AgentInvocation::new("retry", "domain:devices.disable");
        retry.input = json!({ "reason": reason_b });
        retry.confirmation_id = Some(ev.confirmation_id);
        let r = now(f
            .registry
            .invoke(at_current_version(&f.registry, retry), &consumer()));
        let effective = json!({"deviceIds": ids_b, "reason": reason_b});
        let calls = f.executor.calls();
        if effective == approved {
            matched.fetch_add(1, Ordering::SeqCst);
            prop_assert!(r.error().is_none(), "{:?}", r);
            prop_assert_eq!(calls.len(), 1);
            prop_assert_eq!(&calls[0].input, &approved);
        } else {
            prop_assert_eq!(
                r.error().map(|e| e.code.clone()),
                Some(ErrorCode::ConfirmationInvalid)
            );
            prop_assert!(calls.is_empty());
        }
        Ok(())
    });
    assert_reached("the evidence matched", &matched, cases);
    // The other branch, a different input, is the common one: at least a
    // tenth of the cases too.
    let differed = AtomicU32::new(cases - matched.load(Ordering::SeqCst));
    assert_reached("the input differed", &differed, cases);
}

#[test]
fn surface_version_strictly_increases() {
    let bumped = AtomicU32::new(0);
    let cases = check(prop::collection::vec(0u8..7, 1..40), |ops| {
        let f = fixture();
        let versions: Arc<Mutex<Vec<u64>>> = Arc::default();
        let sink = versions.clone();
        let _sub = f
            .registry
            .subscribe(move |c| sink.lock().unwrap().push(c.surface_version));
        let flag = Arc::new(AtomicBool::new(true));
        let mut handles = Vec::new();
        let mut n = 0u32;
        for op in ops {
            let before = f.registry.surface_version();
            let must_bump = match op {
                0 => {
                    let fl = flag.clone();
                    handles.push(
                        f.registry
                            .register_procedure(
                                AgentProcedureBinding::new(procedure(
                                    f.registry.authority(),
                                    "devices.list",
                                ))
                                .when(move || fl.load(Ordering::SeqCst)),
                            )
                            .unwrap(),
                    );
                    true
                }
                1 => handles.pop().is_some(),
                2 => {
                    flag.fetch_xor(true, Ordering::SeqCst);
                    false
                }
                3 => {
                    let s = f.registry.snapshot(&consumer());
                    prop_assert!(s.surface_version >= before);
                    false
                }
                4 => {
                    f.registry.refresh_availability();
                    false
                }
                5 => {
                    f.registry.notify_changed();
                    true
                }
                _ => {
                    n += 1;
                    call(
                        &f.registry,
                        &format!("i{n}"),
                        "domain:devices.list",
                        json!({}),
                    );
                    false
                }
            };
            let after = f.registry.surface_version();
            prop_assert!(after >= before);
            if must_bump {
                prop_assert!(after > before);
            }
        }
        let v = versions.lock().unwrap();
        if v.len() >= 2 {
            bumped.fetch_add(1, Ordering::SeqCst);
        }
        prop_assert!(v.windows(2).all(|w| w[0] < w[1]), "{:?}", v);
        prop_assert_eq!(v.last().copied().unwrap_or(0), f.registry.surface_version());
        Ok(())
    });
    assert_reached("two or more changes were seen", &bumped, cases);
}
