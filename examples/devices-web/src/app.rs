//! The page: header with the agent's connection status and the "ask the
//! agent" buttons, the devices table, the agent chat (when the host has an
//! AG-UI agent), the activity panel and the confirmation dialog.

use std::sync::Arc;

use agent_surface::browser::{new_tab_id, same_origin_socket_url, SessionSocketOptions};
use agent_surface::host::BrowserSurfaceIdentity;
use agent_surface::page::{AgentCallState, ConnectionState, PageSurface};
use agent_surface::webmcp::{WebMcpBridge, WebMcpOptions};
use agent_surface::{AgentConsumer, AgentProcedureBinding};
use agent_surface_leptos::{
    provide_agent_surface, use_agent_procedure, use_held_confirmations, AgentSurface, HeldCall,
};
use devices_api::api;
use leptos::prelude::*;
use leptos::task::spawn_local;

use crate::backend;
use crate::chat::AgentChat;
use crate::table::{DevicesTable, TableState};
use crate::words::{self, Tone};

/// The page.
#[component]
pub fn App() -> impl IntoView {
    let table = TableState::new();
    let load_error = RwSignal::new(None::<String>);
    let loaded = RwSignal::new(false);
    let turn_running = RwSignal::new(false);
    let report = RwSignal::new(None::<(Tone, String)>);
    let startup_error = RwSignal::new(None::<String>);
    // The host's AG-UI agent for the chat panel, once asked for.
    let agent_path = RwSignal::new(None::<Result<Option<String>, String>>);
    spawn_local(async move { agent_path.set(Some(backend::agent_path().await)) });
    // The MCP endpoint and a run's token, once asked for.
    let mcp = RwSignal::new(None::<Result<(String, String), String>>);
    // This page's tab, as it announces it (an MCP run is asked for it).
    let tab_id = StoredValue::new(new_tab_id());
    let connect_mcp = move |_| {
        let tab = tab_id.get_value();
        spawn_local(async move { mcp.set(Some(backend::mcp_run(&tab).await)) });
    };

    let reload = move || {
        spawn_local(async move {
            match backend::load_devices().await {
                Ok(rows) => {
                    table.rows.set(rows);
                    table.prune();
                    load_error.set(None);
                }
                Err(e) => load_error.set(Some(format!("Could not load the devices: {e}."))),
            }
            loaded.set(true);
        });
    };

    // The agent surface: registry + oRPC bridge; the session and its socket
    // once the host has told the page who it is.
    let surface = provide_agent_surface(PageSurface::orpc(
        api::authority(),
        Arc::new(backend::rpc_client()),
    ));
    // The same live surface for the browser's own agent (WebMCP), when the
    // browser has `document.modelContext`; kept for the page's lifetime.
    let webmcp = WebMcpBridge::start(&surface.page(), WebMcpOptions::default());
    let _webmcp = StoredValue::new_local(webmcp);
    if let Err(e) = use_agent_procedure(AgentProcedureBinding::new(api::devices::list())) {
        startup_error.set(Some(format!("The agent surface could not start: {e}.")));
    }
    spawn_local(async move {
        reload();
        let connected = match backend::session_info().await {
            Ok(info) => surface
                .connect(
                    surface.session_options(
                        BrowserSurfaceIdentity::new(
                            devices_api::APP_ID,
                            devices_api::build_id(),
                            info.session_id,
                            tab_id.get_value(),
                        ),
                        AgentConsumer::embedded(info.user_id),
                    ),
                    SessionSocketOptions::new(same_origin_socket_url(&info.socket_path)),
                    |_| {},
                )
                .map_err(|e| e.to_string()),
            Err(e) => Err(format!("No agent session: {e}")),
        };
        if let Err(e) = connected {
            startup_error.set(Some(format!("{e}.")));
        }
    });
    // A device procedure the agent ran successfully: reload the table.
    Effect::new(move |seen: Option<usize>| {
        let done = surface
            .activity()
            .get()
            .iter()
            .filter(|c| c.capability_id.starts_with("domain:"))
            .filter(|c| matches!(&c.state, AgentCallState::Answered(o) if words::succeeded(o)))
            .count();
        if seen.is_some_and(|seen| seen < done) {
            reload();
        }
        done
    });

    let start_turn = move |script: &'static str| {
        if turn_running.get_untracked() {
            return;
        }
        turn_running.set(true);
        report.set(None);
        spawn_local(async move {
            let outcome = backend::run_turn(script).await;
            turn_running.set(false);
            let waiting = match &outcome {
                Ok(r) if r.summary.starts_with("Waiting for approval") => Some(r.run_id.clone()),
                _ => None,
            };
            report.set(Some(match outcome {
                Ok(r) if r.summary.starts_with("Success") => (Tone::Ok, r.summary),
                Ok(r) if waiting.is_some() => (Tone::Pending, r.summary),
                Ok(r) => (Tone::Error, r.summary),
                Err(e) => (Tone::Error, format!("The agent turn failed: {e}.")),
            }));
            reload();
            if let Some(run_id) = waiting {
                // The run observes the approval's outcome: a person decides
                // on the approver page, the host resumes the held call.
                if let Some(summary) = await_approval_outcome(&run_id).await {
                    let tone = if summary.starts_with("Approved") && !summary.contains("not done") {
                        Tone::Ok
                    } else {
                        Tone::Error
                    };
                    report.set(Some((tone, summary)));
                    reload();
                }
            }
        });
    };

    view! {
        <ConfirmDialog selection=table.selection />
        <header>
            <div class="brand">
                <h1>"Devices console"</h1>
                <ConnectionLine surface=surface startup_error=startup_error />
            </div>
            <div class="actions">
                <button id="start-turn" class="primary"
                    disabled=move || turn_running.get()
                    on:click=move |_| start_turn("disable")>
                    "Ask the agent to disable the selection"
                </button>
                <button id="start-purge" class="secondary"
                    disabled=move || turn_running.get()
                    on:click=move |_| start_turn("purge")>
                    "Ask the agent to purge the selection"
                </button>
                <button id="mcp-connect" class="secondary" on:click=connect_mcp>
                    "Connect an MCP agent"
                </button>
            </div>
        </header>
        <Show when=move || mcp.get().is_some()>
            <div id="mcp-run" class=move || match mcp.get() { Some(Ok(_)) => "report info", _ => "report error" }>
                {move || match mcp.get() {
                    Some(Ok((url, token))) => view! {
                        <strong>"MCP agent: "</strong>
                        <span>"point an MCP client at "</span><code id="mcp-url">{url}</code>
                        <span>" with the header Authorization: Bearer "</span><code id="mcp-token">{token}</code>
                        <span>" — its calls act in this page, after your confirmation."</span>
                    }.into_any(),
                    Some(Err(e)) => view! { <span>{format!("No MCP run: {e}.")}</span> }.into_any(),
                    None => view! { <span></span> }.into_any(),
                }}
            </div>
        </Show>
        <Show when=move || report.get().is_some()>
            <div id="turn-report" class=move || format!("report {}", report.get().map(|r| r.0.class()).unwrap_or("info"))>
                <strong>"Agent turn: "</strong>
                <span>{move || report.get().map(|r| r.1).unwrap_or_default()}</span>
            </div>
        </Show>
        <main>
            <section class="card table-card">
                <Show when=move || load_error.get().is_some()>
                    <p class="load-error">{move || load_error.get().unwrap_or_default()}</p>
                </Show>
                <DevicesTable table=table loaded=loaded />
            </section>
            <Activity surface=surface />
            <ChatSlot agent_path=agent_path />
        </main>
    }
}

/// The chat panel when the host has an AG-UI agent; otherwise a line
/// saying how to get one.
#[component]
fn ChatSlot(agent_path: RwSignal<Option<Result<Option<String>, String>>>) -> impl IntoView {
    move || {
        match agent_path.get() {
        Some(Ok(Some(path))) => view! { <AgentChat url=path /> }.into_any(),
        Some(Ok(None)) => view! {
            <p id="chat-unavailable" class="hint chat-card">
                "Agent chat: no AG-UI agent is configured (start the host with --ag-ui-agent)."
            </p>
        }
        .into_any(),
        Some(Err(e)) => view! {
            <p id="chat-unavailable" class="hint chat-card">{format!("Agent chat unavailable: {e}.")}</p>
        }
        .into_any(),
        None => ().into_any(),
    }
    }
}

/// The agent's calls, newest first, each with its outcome in words.
#[component]
fn Activity(surface: AgentSurface) -> impl IntoView {
    let entries = move || {
        let calls = surface.activity().get();
        calls
            .iter()
            .rev()
            .map(|call| (call.invocation_id.clone(), words::call_words(call)))
            .collect::<Vec<_>>()
    };
    view! {
        <section class="card activity-card">
            <h2>"Agent activity"</h2>
            <ol id="activity">
                <For each=entries key=|e| e.clone() let:entry>
                    <li class=format!("entry {}", (entry.1).1.class()) data-invocation=entry.0.clone()>
                        <div class="entry-title">{(entry.1).0.clone()}</div>
                        <div class="entry-detail">{(entry.1).2.clone()}</div>
                    </li>
                </For>
            </ol>
            <Show when=move || surface.activity().get().is_empty()>
                <p class="hint">"Nothing yet. The agent's calls and their results appear here."</p>
            </Show>
        </section>
    }
}

/// The in-page confirmation: what the agent asked for and the effective
/// input the server will receive, with Approve and Reject. Not modal: the
/// table stays usable (changing the selection invalidates the approval).
#[component]
fn ConfirmDialog(selection: RwSignal<Vec<String>>) -> impl IntoView {
    let held = use_held_confirmations();
    let current = move || held.get().into_iter().next();
    let error = RwSignal::new(None::<String>);
    let decide = move |approve: bool| {
        if let Some(call) = current() {
            let outcome = if approve {
                call.approve()
            } else {
                call.reject()
            };
            error.set(
                outcome
                    .err()
                    .map(|e| format!("It could not be applied: {e}.")),
            );
        }
    };
    let field =
        move |f: fn(&HeldCall) -> String| move || current().map(|c| f(&c)).unwrap_or_default();
    let ids = move || {
        current()
            .and_then(|c| c.effective_input()["deviceIds"].as_array().cloned())
            .unwrap_or_default()
            .into_iter()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect::<Vec<_>>()
    };
    // The selection no longer equals the ids the agent's call carries:
    // approving now is refused as a different call, so say so up front.
    let drifted = move || current().is_some() && selection.get() != ids();
    view! {
        <Show when=move || current().is_some()>
            <aside id="confirm-dialog" class="dialog" role="dialog" aria-labelledby="confirm-title">
                <h2 id="confirm-title">{field(|c| format!("The agent wants to run {}", words::short_name(c.capability_id())))}</h2>
                <p id="confirm-description" class="description">{field(|c| c.description().to_string())}</p>
                <div class="label">"Devices it applies to"</div>
                <div class="ids">
                    <For each=ids key=|id| id.clone() let:id>
                        <span class="mono">{id}</span>
                    </For>
                </div>
                <div class="label">"Exactly what the server will receive"</div>
                <pre id="confirm-input" class="mono">{field(|c| serde_json::to_string_pretty(c.effective_input()).unwrap_or_default())}</pre>
                <Show
                    when=drifted
                    fallback=|| view! { <p class="note">"Changing the selection now makes this approval invalid."</p> }
                >
                    <p id="confirm-drift" class="note warn">
                        "The selection changed after the agent asked: approving will not run this call. Reject it, or restore the selection."
                    </p>
                </Show>
                <Show when=move || error.get().is_some()>
                    <p class="note warn">{move || error.get().unwrap_or_default()}</p>
                </Show>
                <div class="buttons">
                    <button id="reject" class="reject" on:click=move |_| decide(false)>"Reject"</button>
                    <button id="approve" class="approve" on:click=move |_| decide(true)>"Approve"</button>
                </div>
            </aside>
        </Show>
    }
}

#[component]
fn ConnectionLine(surface: AgentSurface, startup_error: RwSignal<Option<String>>) -> impl IntoView {
    let text = move || {
        if let Some(e) = startup_error.get() {
            return ("offline", e);
        }
        match surface.connection().get() {
            ConnectionState::Connecting { attempt: 1 } => {
                ("connecting", "Connecting to the agent host…".to_string())
            }
            ConnectionState::Connecting { attempt } => {
                ("connecting", format!("Reconnecting (attempt {attempt})…"))
            }
            ConnectionState::Connected { .. } => ("connected", "Agent connected".to_string()),
            ConnectionState::Retrying {
                retry_in,
                aborted_calls,
            } => (
                "retrying",
                format!(
                    "Connection lost — retrying in {:.1} s{}",
                    retry_in.as_secs_f64(),
                    match aborted_calls {
                        0 => String::new(),
                        n => format!(
                            " ({n} agent call(s) aborted; they may or may not have taken effect)"
                        ),
                    }
                ),
            ),
            ConnectionState::Stopped { reason } => ("offline", format!("Offline: {reason}.")),
            _ => ("starting", "Starting the agent session…".to_string()),
        }
    };
    view! {
        <span id="agent-status" class=move || format!("status {}", text().0)>{move || text().1}</span>
    }
}

/// Asks the host once a second (for at most an hour) whether the run's
/// approval was decided and resumed; the outcome's summary, or `None` when
/// the host no longer knows the run (it restarted: the outcome is still
/// recorded for the run in its store).
async fn await_approval_outcome(run_id: &str) -> Option<String> {
    use agent_surface::Timer;
    for _ in 0..3_600 {
        agent_surface::browser::BrowserTimer
            .sleep(std::time::Duration::from_secs(1))
            .await;
        match backend::run_status(run_id).await {
            Ok(status) => {
                if let Some(summary) = status
                    .approvals
                    .iter()
                    .rev()
                    .find_map(|a| a.summary.clone())
                {
                    return Some(summary);
                }
            }
            Err(_) => return None,
        }
    }
    None
}
