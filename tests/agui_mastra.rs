//! The AG-UI client against a real agent framework: the official
//! `@ag-ui/mastra` adapter over `@mastra/core` with a scripted model
//! (`tests/agui-agent`), the devices console's real registrations
//! (`examples/devices/app.rs`) on a page surface with a fake server.
//! Needs Node.js (`CI=true`: a failure, not a skip, without it).

#[path = "../examples/devices/app.rs"]
#[allow(dead_code)]
mod app;
mod support;

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_surface::agui::{
    AgUiAgent, AgUiCallOutcome, AgUiChange, AgUiError, AgUiMessage, AgUiOptions, HttpAgUiTransport,
};
use agent_surface::export::ExportOptions;
use agent_surface::page::PageSurface;
use agent_surface::testing::{FakeExecutor, TestSurface};
use agent_surface::{AgentInvocationResult, ErrorCode, ExecutionError, Retry};
use app::{Device, DevicesView};
use serde_json::{json, Value};
use support::agui::AguiAgent;

/// The console over a fake server: three rows, nothing selected.
struct Console {
    surface: TestSurface,
    page: PageSurface,
    view: DevicesView,
    /// The console's registrations (a test may remount them).
    registrations: Arc<Mutex<Option<app::Registrations>>>,
}

fn console() -> Console {
    let surface = TestSurface::new(app::api::authority());
    let view = DevicesView::default();
    view.set_rows(
        [
            ("dev-1", "active"),
            ("dev-2", "active"),
            ("dev-3", "disabled"),
        ]
        .into_iter()
        .map(|(id, status)| Device {
            id: id.into(),
            name: format!("Device {id}"),
            status: status.into(),
        })
        .collect(),
    );
    let registrations = app::register(surface.registry(), &view).expect("the console registers");
    let page = PageSurface::new(surface.registry().clone());
    Console {
        surface,
        page,
        view,
        registrations: Arc::new(Mutex::new(Some(registrations))),
    }
}

impl Console {
    fn executor(&self) -> &FakeExecutor {
        self.surface.executor()
    }

    fn agent(&self, server: &AguiAgent, options: AgUiOptions) -> AgUiAgent {
        AgUiAgent::new(&self.page, HttpAgUiTransport::new(server.url()), options)
    }

    /// Approves the first confirmation the page holds, once one appears
    /// (within 10 s); returns what it showed.
    async fn approve_when_held(&self) -> agent_surface::host::HeldConfirmation {
        for _ in 0..1000 {
            if let Some(held) = self.page.held_confirmations().into_iter().next() {
                self.page.approve(&held.confirmation_id).expect("approve");
                return held;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("no confirmation was held within 10 s");
    }
}

fn output_of(outcome: &AgUiCallOutcome) -> Option<&Value> {
    match outcome {
        AgUiCallOutcome::Ran(result) => result.output(),
        _ => None,
    }
}

fn error_of(outcome: &AgUiCallOutcome) -> &agent_surface::AgentError {
    outcome
        .result()
        .and_then(AgentInvocationResult::error)
        .unwrap_or_else(|| panic!("not an error: {outcome:?}"))
}

fn roles(messages: &[AgUiMessage]) -> Vec<&'static str> {
    messages
        .iter()
        .map(|m| match m {
            AgUiMessage::User { .. } => "user",
            AgUiMessage::Assistant { .. } => "assistant",
            AgUiMessage::Tool { .. } => "tool",
            AgUiMessage::Developer { .. } => "developer",
            AgUiMessage::System { .. } => "system",
            _ => "other",
        })
        .collect()
}

const SELECT_FIRST: &str = "Select at least one device in the table first";

fn select_two(console: &Console) {
    console
        .view
        .select(vec!["dev-1".into(), "dev-2".into()])
        .unwrap();
}

#[tokio::test]
async fn a_turn_disables_the_selection_after_the_user_confirms_and_the_agent_sees_the_result() {
    let Some(server) = AguiAgent::start("agui full turn") else {
        return;
    };
    let console = console();
    select_two(&console);
    console
        .executor()
        .respond("devices.disable", json!({"disabled": ["dev-1", "dev-2"]}));
    let agent = console.agent(&server, AgUiOptions::default());

    let watch = agent.clone();
    let user = async {
        let page = &console.page;
        for _ in 0..1000 {
            if let Some(held) = page.held_confirmations().into_iter().next() {
                // While the user decides, a panel can say what is called.
                assert_eq!(
                    watch.status(),
                    agent_surface::agui::AgUiStatus::RunningTools
                );
                let streaming = watch.streaming().expect("the run's calls are shown");
                assert_eq!(streaming.tool_calls, ["devices__disable"]);
                page.approve(&held.confirmation_id).expect("approve");
                return held;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("no confirmation was held within 10 s");
    };
    let (turn, held) = tokio::join!(agent.send("disable the selected devices"), user);
    let turn = turn.expect("the turn completes");
    assert_eq!(agent.streaming(), None);

    // The agent sent no ids: the page bound the selection, and the user saw it.
    assert_eq!(held.capability_id, "domain:devices.disable");
    assert_eq!(
        held.input,
        json!({"deviceIds": ["dev-1", "dev-2"], "reason": "maintenance"})
    );
    assert_eq!(turn.runs, 2);
    assert_eq!(turn.calls.len(), 1);
    assert_eq!(turn.calls[0].tool_call_id, "call-disable-1");
    assert_eq!(turn.calls[0].tool_name, "devices__disable");
    assert_eq!(turn.calls[0].arguments, r#"{"reason":"maintenance"}"#);
    assert_eq!(
        output_of(&turn.calls[0].outcome),
        Some(&json!({"disabled": ["dev-1", "dev-2"]}))
    );
    assert_eq!(
        turn.text,
        r#"The tool answered devices__disable: {"disabled":["dev-1","dev-2"]}"#
    );
    let executed = console.executor().calls_of("devices.disable");
    assert_eq!(executed.len(), 1);
    assert_eq!(
        executed[0].input,
        json!({"deviceIds": ["dev-1", "dev-2"], "reason": "maintenance"})
    );
    assert!(executed[0].confirmed);
    let messages = agent.messages();
    assert_eq!(roles(&messages), ["user", "assistant", "tool", "assistant"]);
    let AgUiMessage::Tool {
        content,
        tool_call_id,
        ..
    } = &messages[2]
    else {
        panic!("not a tool message: {:?}", messages[2]);
    };
    assert_eq!(content, r#"{"disabled":["dev-1","dev-2"]}"#);
    assert_eq!(tool_call_id, "call-disable-1");
    assert_eq!(agent.status(), agent_surface::agui::AgUiStatus::Idle);
    assert!(console.page.held_confirmations().is_empty());
}

#[tokio::test]
async fn an_agent_that_sets_a_bound_field_is_refused_and_nothing_runs() {
    let Some(server) = AguiAgent::start("agui locked field") else {
        return;
    };
    let console = console();
    select_two(&console);
    let agent = console.agent(&server, AgUiOptions::default());
    let turn = agent
        .send("locked: disable dev-9")
        .await
        .expect("the turn completes");
    assert_eq!(turn.calls[0].arguments, r#"{"deviceIds":["dev-9"]}"#);
    let error = error_of(&turn.calls[0].outcome);
    assert_eq!(error.code, ErrorCode::InvalidInput);
    assert_eq!(error.retry, Retry::WithChanges);
    assert_eq!(error.details["lockedFields"], json!(["deviceIds"]));
    assert!(console.executor().calls().is_empty());
    assert!(console.page.held_confirmations().is_empty());
    // The agent was told, in the next run.
    assert_eq!(turn.runs, 2);
    assert!(
        turn.text
            .starts_with("The tool answered devices__disable: INVALID_INPUT: "),
        "{}",
        turn.text
    );
}

#[tokio::test]
async fn an_unavailable_tool_is_not_declared_and_a_call_of_it_is_refused() {
    let Some(server) = AguiAgent::start("agui unavailable tool") else {
        return;
    };
    let console = console();
    let agent = console.agent(&server, AgUiOptions::default());
    // Nothing selected: disable is unavailable, so it is not declared; the
    // scripted model calls it anyway.
    let turn = agent
        .send("disable everything")
        .await
        .expect("the turn completes");
    assert_eq!(turn.calls.len(), 1);
    assert_eq!(turn.calls[0].tool_name, "devices__disable");
    let AgUiCallOutcome::Refused(result) = &turn.calls[0].outcome else {
        panic!("not refused: {:?}", turn.calls[0].outcome);
    };
    let error = result.error().expect("an error");
    assert_eq!(error.code, ErrorCode::CapabilityNotFound);
    assert_eq!(error.retry, Retry::AfterRefresh);
    assert!(console.executor().calls().is_empty());
    // Mastra answered the undeclared call itself in the same run; the page
    // does not start another run for a tool it never offered.
    assert_eq!(turn.runs, 1);
    assert_eq!(
        roles(&agent.messages()),
        ["user", "assistant", "tool", "assistant"]
    );
}

#[tokio::test]
async fn declared_while_unavailable_the_pipeline_answers_with_the_reason() {
    let Some(server) = AguiAgent::start("agui unavailable declared") else {
        return;
    };
    let console = console();
    let options = AgUiOptions::default().with_export(ExportOptions {
        include_unavailable: true,
        ..ExportOptions::default()
    });
    let agent = console.agent(&server, options);
    let turn = agent
        .send("disable everything")
        .await
        .expect("the turn completes");
    let error = error_of(&turn.calls[0].outcome);
    assert!(matches!(turn.calls[0].outcome, AgUiCallOutcome::Ran(_)));
    assert_eq!(error.code, ErrorCode::CapabilityNotAvailable);
    assert_eq!(error.details["reason"], json!(SELECT_FIRST));
    assert!(console.executor().calls().is_empty());
    assert_eq!(turn.runs, 2);
}

#[tokio::test]
async fn a_call_described_by_a_surface_that_changed_meanwhile_is_stale() {
    let Some(server) = AguiAgent::start("agui stale surface") else {
        return;
    };
    let console = console();
    select_two(&console);
    let agent = console.agent(&server, AgUiOptions::default());
    // While the agent streams its call, the table remounts: the binding the
    // run declared is gone, a new one serves devices.disable.
    let (watch, registry, view, mounted) = (
        agent.clone(),
        console.surface.registry().clone(),
        console.view.clone(),
        console.registrations.clone(),
    );
    let remounted = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let once = remounted.clone();
    let _subscription = agent.on_change(move |change| {
        let calling = watch.streaming().is_some_and(|s| !s.tool_calls.is_empty());
        if change == AgUiChange::Streaming && calling && !once.swap(true, Ordering::SeqCst) {
            let mut mounted = mounted.lock().unwrap();
            drop(mounted.take());
            *mounted = Some(app::register(&registry, &view).expect("the remount registers"));
        }
    });
    let turn = agent
        .send("disable the selected devices")
        .await
        .expect("the turn completes");
    let error = error_of(&turn.calls[0].outcome);
    assert_eq!(error.code, ErrorCode::StaleCapability, "{error:?}");
    assert_eq!(error.retry, Retry::AfterRefresh);
    assert!(console.executor().calls().is_empty());
    assert!(console.page.held_confirmations().is_empty());
    assert!(remounted.load(Ordering::SeqCst));
}

#[tokio::test]
async fn parallel_calls_all_run_and_come_back_in_order() {
    let Some(server) = AguiAgent::start("agui parallel") else {
        return;
    };
    let console = console();
    select_two(&console);
    console
        .executor()
        .respond("devices.list", json!({"devices": ["dev-1", "dev-2"]}));
    console
        .executor()
        .respond("devices.disable", json!({"disabled": ["dev-1", "dev-2"]}));
    let agent = console.agent(&server, AgUiOptions::default());
    let (turn, _held) = tokio::join!(
        agent.send("parallel: list and disable"),
        console.approve_when_held()
    );
    let turn = turn.expect("the turn completes");
    let names: Vec<&str> = turn.calls.iter().map(|c| c.tool_name.as_str()).collect();
    assert_eq!(names, ["devices__list", "devices__disable"]);
    assert_eq!(
        output_of(&turn.calls[0].outcome),
        Some(&json!({"devices": ["dev-1", "dev-2"]}))
    );
    assert_eq!(
        output_of(&turn.calls[1].outcome),
        Some(&json!({"disabled": ["dev-1", "dev-2"]}))
    );
    assert_eq!(
        turn.text,
        r#"The tool answered devices__list: {"devices":["dev-1","dev-2"]}; devices__disable: {"disabled":["dev-1","dev-2"]}"#
    );
    assert_eq!(
        roles(&agent.messages()),
        ["user", "assistant", "tool", "tool", "assistant"]
    );
}

#[tokio::test]
async fn a_run_error_fails_the_turn_and_leaves_only_the_users_message() {
    let Some(server) = AguiAgent::start("agui run error") else {
        return;
    };
    let console = console();
    let agent = console.agent(&server, AgUiOptions::default());
    let error = agent.send("error please").await.unwrap_err();
    assert_eq!(
        error,
        AgUiError::Agent {
            message: "Error: scripted model failure".into(),
            code: Some("AGENT_ERROR".into()),
        }
    );
    assert_eq!(roles(&agent.messages()), ["user"]);
    assert_eq!(agent.status(), agent_surface::agui::AgUiStatus::Idle);
}

#[tokio::test]
async fn a_stream_dropped_mid_call_runs_nothing_and_the_agent_can_go_on() {
    let Some(server) = AguiAgent::start("agui dropped stream") else {
        return;
    };
    let console = console();
    select_two(&console);
    let agent = console.agent(&server, AgUiOptions::default());
    let error = agent.send("drop: disable").await.unwrap_err();
    // RUN_STARTED, TOOL_CALL_START and half the arguments arrived.
    let AgUiError::StreamBroken { events, message } = &error else {
        panic!("not a broken stream: {error:?}");
    };
    assert_eq!(*events, 3);
    assert!(
        message.starts_with("error decoding response body"),
        "{message}"
    );
    assert!(console.executor().calls().is_empty());
    assert!(console.page.held_confirmations().is_empty());
    assert_eq!(roles(&agent.messages()), ["user"]);
    // Not wedged: the next turn runs.
    agent.set_forwarded_props(json!({"script": "text"}));
    let turn = agent.run(Default::default()).await.expect("the next run");
    assert_eq!(turn.text, "Hello from the scripted agent.");
}

#[tokio::test]
async fn a_server_held_approval_is_delivered_later_and_never_run_again() {
    let Some(server) = AguiAgent::start("agui domain approval") else {
        return;
    };
    let console = console();
    select_two(&console);
    console.executor().fail(
        "devices.disable",
        ExecutionError::new(
            ErrorCode::DomainApprovalRequired,
            "The server holds this call for approval",
            Retry::No,
        )
        .with_detail("approvalId", "appr-1"),
    );
    let agent = console.agent(&server, AgUiOptions::default());
    let (turn, _held) = tokio::join!(
        agent.send("disable the selected devices"),
        console.approve_when_held()
    );
    let turn = turn.expect("the turn completes");
    assert_eq!(
        error_of(&turn.calls[0].outcome).code,
        ErrorCode::DomainApprovalRequired
    );
    let pending = agent.pending_approvals();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].approval_id, "appr-1");
    assert_eq!(pending[0].tool_call_id, "call-disable-1");
    assert_eq!(pending[0].capability_id, "domain:devices.disable");
    assert!(turn
        .text
        .starts_with("The tool answered devices__disable: DOMAIN_APPROVAL_REQUIRED: "));

    // A person approved at the backend and the application resumed it.
    let resumed = AgentInvocationResult::ok(
        pending[0].invocation_id.clone(),
        "domain:devices.disable",
        json!({"disabled": ["dev-1", "dev-2"]}),
        7,
    );
    agent
        .deliver_approval("appr-1", &resumed)
        .expect("delivered");
    assert_eq!(
        agent.deliver_approval("appr-1", &resumed),
        Err(agent_surface::agui::ApprovalDeliveryError::Unknown(
            "appr-1".into()
        ))
    );
    assert!(agent.pending_approvals().is_empty());
    let messages = agent.messages();
    let Some(AgUiMessage::User { content, .. }) = messages.last() else {
        panic!("no delivered message: {messages:?}");
    };
    assert_eq!(
        content,
        "[application] The call of tool `devices__disable` (tool call call-disable-1) that the \
         server held for approval was decided and has finished; do not make it again. Its \
         result: {\"disabled\":[\"dev-1\",\"dev-2\"]}"
    );
    agent.set_forwarded_props(json!({"script": "text"}));
    let next = agent.run(Default::default()).await.expect("the next run");
    assert_eq!(next.text, "Hello from the scripted agent.");
    assert_eq!(console.executor().calls_of("devices.disable").len(), 1);
}

#[tokio::test]
async fn cancelling_while_the_user_decides_withdraws_the_confirmation() {
    let Some(server) = AguiAgent::start("agui cancel") else {
        return;
    };
    let console = console();
    select_two(&console);
    let agent = console.agent(&server, AgUiOptions::default());
    let canceller = agent.clone();
    let page = console.page.clone();
    let cancel = async move {
        for _ in 0..1000 {
            if !page.held_confirmations().is_empty() {
                // A second turn is refused while this one runs.
                assert_eq!(canceller.send("again").await.unwrap_err(), AgUiError::Busy);
                canceller.cancel();
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("no confirmation was held");
    };
    let (turn, ()) = tokio::join!(agent.send("disable the selected devices"), cancel);
    assert_eq!(turn.unwrap_err(), AgUiError::Cancelled);
    assert!(console.page.held_confirmations().is_empty());
    assert!(console.executor().calls().is_empty());
    let messages = agent.messages();
    assert_eq!(roles(&messages), ["user", "assistant", "tool"]);
    let AgUiMessage::Tool { content, .. } = &messages[2] else {
        unreachable!()
    };
    assert!(content.starts_with("CANCELLED: "), "{content}");
    assert_eq!(agent.status(), agent_surface::agui::AgUiStatus::Idle);
}
