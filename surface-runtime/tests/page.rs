//! `page::PageSurface`, the framework-neutral layer of the UI adapters
//! (docs/frameworks.md): held confirmations mirrored from the attached
//! session and decided through it, the activity of agent calls and where
//! they stand, `track` re-announcing only when what the agent sees
//! changed, and `on_change` naming what changed.

mod host_support;

use std::sync::{Arc, Mutex};

use host_support::*;
use serde_json::json;
use surface_runtime::host::{
    BrowserSurfaceCall, BrowserSurfaceOutcome, BrowserSurfaceSessionOptions, ConfirmationOutcome,
};
use surface_runtime::page::{AgentCallState, PageChange, PageSurface, DEFAULT_ACTIVITY_ENTRIES};
use surface_runtime::{
    AgentConsumer, AgentInvocation, AgentInvocationResult, AgentProcedureBinding,
    ConfirmationLevel, ErrorCode, SurfaceRegistry,
};

struct Page {
    page: PageSurface,
    registry: SurfaceRegistry,
    executor: Arc<CountingExecutor>,
    selection: Arc<Mutex<Vec<String>>>,
    changes: Arc<Mutex<Vec<PageChange>>>,
    _subscription: surface_runtime::page::ChangeSubscription,
    _disable: surface_runtime::RegistrationHandle,
}

fn page() -> Page {
    let authority = authority();
    let registry = SurfaceRegistry::new(authority.clone());
    let executor = Arc::new(CountingExecutor::default());
    registry.set_procedure_executor(executor.clone());
    let selection = Arc::new(Mutex::new(vec!["dev-1".to_string()]));
    let (bound, seen, described) = (selection.clone(), selection.clone(), selection.clone());
    let disable = registry
        .register_procedure(
            AgentProcedureBinding::new(procedure(&authority, "devices.disable"))
                .bind(move || DisableSelection(bound.lock().unwrap().clone()))
                .when(move || !seen.lock().unwrap().is_empty())
                .describe(move || format!("{} selected", described.lock().unwrap().len()))
                .confirmation(ConfirmationLevel::Required),
        )
        .unwrap();
    let page = PageSurface::new(registry.clone());
    let changes = Arc::new(Mutex::new(Vec::new()));
    let recorded = changes.clone();
    let subscription = page.on_change(move |c| recorded.lock().unwrap().push(c));
    Page {
        page,
        registry,
        executor,
        selection,
        changes,
        _subscription: subscription,
        _disable: disable,
    }
}

impl Page {
    fn call(&self, invocation_id: &str) -> BrowserSurfaceCall {
        let snapshot = self.registry.snapshot(&AgentConsumer::embedded("u1"));
        let mut invocation = AgentInvocation::new(invocation_id, "domain:devices.disable");
        invocation.registration_id = Some(snapshot.procedures[0].registration_id.clone());
        invocation.surface_version = Some(snapshot.surface_version);
        invocation.input = json!({});
        BrowserSurfaceCall::new(
            identity(),
            "conn-1",
            "run-1",
            format!("tc-{invocation_id}"),
            invocation,
        )
    }

    fn changes(&self) -> Vec<PageChange> {
        std::mem::take(&mut *self.changes.lock().unwrap())
    }
}

#[tokio::test]
async fn a_held_call_is_mirrored_decided_through_the_page_and_tracked_in_the_activity() {
    let p = page();
    let session = p
        .page
        .attach(BrowserSurfaceSessionOptions::new(
            p.registry.clone(),
            identity(),
            AgentConsumer::embedded("u1"),
        ))
        .unwrap();
    // `attach` holds confirmations whatever the options said.
    assert_eq!(
        session.confirmation_mode(),
        surface_runtime::host::ConfirmationMode::Hold
    );
    session.connect("conn-1").unwrap();
    let call = p.call("inv-1");
    p.page.record_call(&call);
    assert_eq!(p.changes(), [PageChange::Activity]);
    let running = tokio::spawn({
        let session = session.clone();
        async move { session.invoke(call).await }
    });
    for _ in 0..1_000 {
        if !p.page.held_confirmations().is_empty() {
            break;
        }
        tokio::task::yield_now().await;
    }
    let held = p.page.held_confirmations();
    assert_eq!(held.len(), 1);
    assert_eq!(held[0].invocation_id, "inv-1");
    assert_eq!(held[0].input, json!({"deviceIds": ["dev-1"]}));
    assert_eq!(p.changes(), [PageChange::Activity, PageChange::Held]);
    assert_eq!(
        p.page.activity()[0].state,
        AgentCallState::AwaitingConfirmation
    );

    p.page.approve(&held[0].confirmation_id).unwrap();
    let result = running.await.unwrap();
    assert!(p.page.held_confirmations().is_empty());
    assert_eq!(p.executor.count(), 1);
    p.page.record_answer(&result);
    let activity = p.page.activity();
    assert_eq!(activity.len(), 1);
    assert_eq!(activity[0].invocation_id, "inv-1");
    assert_eq!(activity[0].capability_id, "domain:devices.disable");
    assert!(
        matches!(
            &activity[0].state,
            AgentCallState::Answered(BrowserSurfaceOutcome::Invocation(
                AgentInvocationResult::Ok { .. }
            ))
        ),
        "{activity:?}"
    );
    assert_eq!(
        p.changes(),
        [
            PageChange::Activity, // Confirmation(Approved)
            PageChange::Held,
            PageChange::Activity, // Answered
        ]
    );
    // An answer is final: a late confirmation event does not overwrite it.
    assert!(p.page.approve(&held[0].confirmation_id).is_err());
}

#[tokio::test]
async fn a_rejected_call_ends_in_the_activity_as_rejected() {
    let p = page();
    let session = p
        .page
        .attach(BrowserSurfaceSessionOptions::new(
            p.registry.clone(),
            identity(),
            AgentConsumer::embedded("u1"),
        ))
        .unwrap();
    session.connect("conn-1").unwrap();
    let call = p.call("inv-2");
    p.page.record_call(&call);
    let running = tokio::spawn({
        let session = session.clone();
        async move { session.invoke(call).await }
    });
    for _ in 0..1_000 {
        if !p.page.held_confirmations().is_empty() {
            break;
        }
        tokio::task::yield_now().await;
    }
    let id = p.page.held_confirmations()[0].confirmation_id.clone();
    p.page.reject(&id).unwrap();
    assert_eq!(
        p.page.activity()[0].state,
        AgentCallState::Confirmation(ConfirmationOutcome::Rejected)
    );
    let result = running.await.unwrap();
    p.page.record_answer(&result);
    match &p.page.activity()[0].state {
        AgentCallState::Answered(BrowserSurfaceOutcome::Invocation(r)) => {
            assert_eq!(r.error().unwrap().code, ErrorCode::ConfirmationInvalid);
            assert_eq!(r.error().unwrap().details["reason"], "denied");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(p.executor.count(), 0);
}

#[test]
fn without_a_session_decisions_are_refused_and_the_activity_is_bounded() {
    let p = page();
    assert!(matches!(
        p.page.approve("conf-1"),
        Err(surface_runtime::host::ConfirmationDecisionError::Unknown(id)) if id == "conf-1"
    ));
    for i in 0..(DEFAULT_ACTIVITY_ENTRIES + 5) {
        p.page.record_call(&p.call(&format!("inv-{i}")));
    }
    let activity = p.page.activity();
    assert_eq!(activity.len(), DEFAULT_ACTIVITY_ENTRIES);
    assert_eq!(activity[0].invocation_id, "inv-5");
    assert_eq!(
        activity.last().unwrap().invocation_id,
        format!("inv-{}", DEFAULT_ACTIVITY_ENTRIES + 4)
    );
    let small = PageSurface::new(p.registry.clone());
    // The bound applies to clones made before it was set too.
    let shared = small.clone();
    let small = small.max_activity(2);
    for i in 0..3 {
        shared.record_call(&p.call(&format!("small-{i}")));
    }
    let ids: Vec<String> = small
        .activity()
        .into_iter()
        .map(|c| c.invocation_id)
        .collect();
    assert_eq!(ids, ["small-1", "small-2"]);
}

#[test]
fn track_re_announces_once_and_only_when_what_the_agent_sees_changed() {
    let p = page();
    let handle = &p._disable;
    let first = p.page.track(handle, None).unwrap();
    assert_eq!(first.items().len(), 1);
    assert!(first.items()[0].available);
    assert_eq!(first.items()[0].description.as_deref(), Some("1 selected"));
    let version = p.registry.surface_version();
    // Same view: nothing announced.
    let same = p.page.track(handle, Some(&first)).unwrap();
    assert_eq!(same, first);
    assert_eq!(p.registry.surface_version(), version);
    // A description-only change: one bump.
    p.selection.lock().unwrap().push("dev-2".into());
    let two = p.page.track(handle, Some(&same)).unwrap();
    assert_eq!(two.items()[0].description.as_deref(), Some("2 selected"));
    assert_eq!(p.registry.surface_version(), version + 1);
    // Availability changes: one bump, and the next snapshot does not bump
    // again (the observation was recorded).
    p.selection.lock().unwrap().clear();
    let none = p.page.track(handle, Some(&two)).unwrap();
    assert!(!none.items()[0].available);
    assert_eq!(p.registry.surface_version(), version + 2);
    let snapshot = p.registry.snapshot(&AgentConsumer::embedded("u1"));
    assert_eq!(snapshot.surface_version, version + 2);
    // A handle of another registry observes nothing.
    let other = PageSurface::new(SurfaceRegistry::new(authority()));
    assert_eq!(other.track(handle, None), None);
}

/// A host call and an in-page agent's call (`invoke_in_page`, what the
/// WebMCP bridge runs) held at the same time on one page: one list, each
/// decided on its own, each run at most once under its own invocation id.
#[tokio::test]
async fn in_page_calls_are_held_beside_host_calls_and_decided_on_their_own() {
    let p = page();
    let session = p
        .page
        .attach(BrowserSurfaceSessionOptions::new(
            p.registry.clone(),
            identity(),
            AgentConsumer::embedded("u1"),
        ))
        .unwrap();
    session.connect("conn-1").unwrap();
    let host_call = p.call("host-1");
    let host = tokio::spawn({
        let session = session.clone();
        async move { session.invoke(host_call).await }
    });
    let in_page_call = p.call("page-1").invocation;
    let in_page = tokio::spawn(p.page.invoke_in_page(
        in_page_call,
        AgentConsumer::embedded("webmcp"),
        surface_runtime::Cancellation::new(),
    ));
    for _ in 0..1_000 {
        if p.page.held_confirmations().len() == 2 {
            break;
        }
        tokio::task::yield_now().await;
    }
    let held = p.page.held_confirmations();
    assert_eq!(held.len(), 2, "{held:?}");
    let local = held.iter().find(|h| h.invocation_id == "page-1").unwrap();
    assert_eq!(
        local.connection_id,
        surface_runtime::page::IN_PAGE_CONNECTION_ID
    );
    assert_eq!(local.run_id, "webmcp");
    let remote = held.iter().find(|h| h.invocation_id == "host-1").unwrap();
    assert_eq!(remote.connection_id, "conn-1");

    p.page.approve(&local.confirmation_id).unwrap();
    let result = in_page.await.unwrap();
    assert!(result.error().is_none(), "{result:?}");
    assert_eq!(result.invocation_id(), "page-1");
    assert_eq!(p.executor.count(), 1);
    assert_eq!(p.page.held_confirmations().len(), 1);

    p.page.reject(&remote.confirmation_id).unwrap();
    let answer = host.await.unwrap();
    let BrowserSurfaceOutcome::Invocation(result) = answer.result else {
        panic!("{answer:?}");
    };
    assert_eq!(result.error().unwrap().code, ErrorCode::ConfirmationInvalid);
    assert_eq!(p.executor.count(), 1, "the rejected host call never ran");
    let activity = p.page.activity();
    let entry = activity
        .iter()
        .find(|c| c.invocation_id == "page-1")
        .unwrap();
    assert!(
        matches!(entry.state, AgentCallState::Answered(_)),
        "{entry:?}"
    );
}

/// A new session attached while an in-page call waits keeps that call's
/// confirmation in the list.
#[tokio::test]
async fn attaching_a_session_keeps_in_page_held_calls() {
    let p = page();
    let call = p.call("page-2").invocation;
    let cancellation = surface_runtime::Cancellation::new();
    let waiting = tokio::spawn(p.page.invoke_in_page(
        call,
        AgentConsumer::embedded("webmcp"),
        cancellation.clone(),
    ));
    for _ in 0..1_000 {
        if !p.page.held_confirmations().is_empty() {
            break;
        }
        tokio::task::yield_now().await;
    }
    let options = || {
        BrowserSurfaceSessionOptions::new(
            p.registry.clone(),
            identity(),
            AgentConsumer::embedded("u1"),
        )
    };
    p.page.attach(options()).unwrap();
    p.page.attach(options()).unwrap();
    assert_eq!(p.page.held_confirmations().len(), 1);
    cancellation.cancel();
    let result = waiting.await.unwrap();
    assert_eq!(result.error().unwrap().code, ErrorCode::Cancelled);
    assert!(p.page.held_confirmations().is_empty());
    assert_eq!(p.executor.count(), 0);
}
