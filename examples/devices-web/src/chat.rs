//! The "Agent chat" panel: a conversation with an AG-UI agent whose loop
//! runs on a server (the host forwards `/app/agent` to it). The agent
//! sees the page's live surface as its tools; its calls run in this page
//! through the pipeline, so `devices.disable` acts on the table's
//! selection and waits for the user's approval in the page's dialog,
//! exactly like the host's and the browser's agents.

use agent_surface::agui::{AgUiOptions, AgUiStatus, FetchAgUiTransport};
use agent_surface_leptos::{use_ag_ui_agent, AgUiHandle, ChatEntry};
use leptos::prelude::*;

/// The panel over the AG-UI agent at `url` (the host's `/app/agent`).
///
/// Plain closures rather than `<For>` and `<Show>`: the transcript is
/// drawn again as a whole when it changes (a few lines), which keeps the
/// page's WebAssembly smaller.
#[component]
pub fn AgentChat(url: String) -> impl IntoView {
    let agent = use_ag_ui_agent(FetchAgUiTransport::new(url), AgUiOptions::default());
    let input = NodeRef::<leptos::html::Input>::new();
    let busy = move || agent.status().get() != AgUiStatus::Idle;
    let send = move || {
        let Some(input) = input.get_untracked() else {
            return;
        };
        let text = input.value();
        if !text.trim().is_empty() && !busy() {
            agent.send(text.trim());
            input.set_value("");
        }
    };
    view! {
        <section id="agent-chat" class="card chat-card">
            <div class="card-head">
                <h2>"Agent chat"</h2>
                <span id="chat-status" class=move || status_class(agent.status().get())>
                    {move || status_words(agent.status().get())}
                </span>
            </div>
            <ol id="chat-messages">
                {move || agent.transcript().get().into_iter().map(chat_line).collect_view()}
            </ol>
            {move || streaming_line(agent)}
            {move || agent.error().get().map(|e| view! {
                <p id="chat-error" class="load-error">{format!("The agent turn failed: {e}.")}</p>
            })}
            <form class="chat-form" on:submit=move |ev| {
                ev.prevent_default();
                send();
            }>
                <input id="chat-input" node_ref=input autocomplete="off"
                    placeholder="Ask the agent, e.g. “disable the selected devices”" />
                <button id="chat-send" type="submit" class="primary" disabled=busy>"Send"</button>
                <button id="chat-stop" type="button" class="secondary"
                    disabled=move || !busy() on:click=move |_| agent.cancel()>
                    "Stop"
                </button>
            </form>
        </section>
    }
}

/// What the current run has streamed: its text so far and the tools it is
/// calling (nothing between runs).
fn streaming_line(agent: AgUiHandle) -> Option<impl IntoView> {
    let streaming = agent.streaming().get()?;
    let calls = match streaming.tool_calls.as_slice() {
        [] => String::new(),
        names => format!(" (calling {}…)", names.join(", ")),
    };
    let text = format!("{}{calls}", streaming.text);
    Some(view! { <p id="chat-streaming" class="chat-line assistant streaming">{text}</p> })
}

/// One entry: the user's text, the agent's, or a tool call with what the
/// page answered (the first line: the output, or the error in words). One
/// element shape for all three: less code in the page's WebAssembly.
fn chat_line(entry: ChatEntry) -> impl IntoView {
    let (class, text) = match entry {
        ChatEntry::User { text, .. } => ("chat-line user", text),
        ChatEntry::Assistant { text, .. } => ("chat-line assistant", text),
        ChatEntry::ToolCall {
            name,
            arguments,
            result,
            ..
        } => {
            let outcome = match &result {
                Some(text) => text.lines().next().unwrap_or_default(),
                None => "waiting for the page…",
            };
            let text = format!("called {name} {arguments}\n→ {outcome}");
            ("chat-line tool mono", text)
        }
        _ => ("chat-line", String::new()),
    };
    view! { <li class=class>{text}</li> }
}

fn status_class(status: AgUiStatus) -> &'static str {
    match status {
        AgUiStatus::Idle => "status connected",
        _ => "status connecting",
    }
}

fn status_words(status: AgUiStatus) -> &'static str {
    match status {
        AgUiStatus::Idle => "Ready",
        AgUiStatus::Streaming => "The agent is answering…",
        AgUiStatus::RunningTools => {
            "The agent's calls run in this page: approve or reject them in the dialog."
        }
        _ => "Working…",
    }
}
