//! The page's components: header with the agent's connection status and
//! the "ask the agent" buttons, the devices table, the activity panel and
//! the confirmation dialog.

use std::rc::Rc;

use agent_surface::browser::{SessionSocket, SessionSocketOptions, SocketEvent, StopReason};
use agent_surface::host::{
    ConfirmationEvent, ConfirmationOutcome, HeldConfirmation, ProgressStage,
    SessionEventSubscription,
};
use leptos::prelude::*;
use leptos::task::spawn_local;
use serde_json::Value;

use crate::surface::{self, Status, Surface, TableState};
use crate::words::{self, Tone};

/// One line of the activity panel.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    /// Unique key.
    pub key: u64,
    /// The invocation id it belongs to, if any.
    pub invocation_id: Option<String>,
    /// What happened.
    pub title: String,
    /// The outcome, in words.
    pub detail: String,
    /// How it is drawn.
    pub tone: Tone,
}

/// The connection line in the header.
#[derive(Clone, Debug, PartialEq)]
pub enum Connection {
    /// Not started (loading the session).
    Starting,
    /// Opening a socket.
    Connecting(u32),
    /// Connected under this id.
    Connected(String),
    /// Lost; retrying after this many ms.
    Retrying(u64),
    /// Given up.
    Offline(String),
}

/// The page.
#[component]
pub fn App() -> impl IntoView {
    let table = TableState {
        rows: RwSignal::new(Vec::new()),
        filter: RwSignal::new(None),
        selection: RwSignal::new(Vec::new()),
    };
    let load_error = RwSignal::new(None::<String>);
    let loaded = RwSignal::new(false);
    let connection = RwSignal::new(Connection::Starting);
    let activity = RwSignal::new(Vec::<Entry>::new());
    let next_key = StoredValue::new(0u64);
    let turn_running = RwSignal::new(false);
    let report = RwSignal::new(None::<(Tone, String)>);
    let surface_cell: StoredValue<Option<Rc<Surface>>, LocalStorage> = StoredValue::new_local(None);
    let socket_cell: StoredValue<Option<SessionSocket>, LocalStorage> =
        StoredValue::new_local(None);
    let confirmations_cell: StoredValue<Option<SessionEventSubscription>, LocalStorage> =
        StoredValue::new_local(None);
    let dialog = RwSignal::new(None::<HeldConfirmation>);

    let push = move |invocation_id: Option<String>, title: String, detail: String, tone: Tone| {
        let key = next_key.get_value();
        next_key.set_value(key + 1);
        activity.update(|a| {
            a.insert(
                0,
                Entry {
                    key,
                    invocation_id,
                    title,
                    detail,
                    tone,
                },
            );
            a.truncate(50);
        });
    };
    let settle = move |invocation_id: &str, detail: String, tone: Tone| {
        activity.update(|a| {
            if let Some(e) = a
                .iter_mut()
                .find(|e| e.invocation_id.as_deref() == Some(invocation_id))
            {
                e.detail = detail;
                e.tone = tone;
            }
        });
    };
    let reload = move || {
        spawn_local(async move {
            match surface::load_devices().await {
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

    // Every UI change the surface shows re-announces it.
    Effect::new(move |_| {
        table.selection.track();
        table.filter.track();
        table.rows.track();
        surface_cell.with_value(|s| {
            if let Some(s) = s {
                surface::surface_changed(&s.registry);
            }
        });
    });

    // Start: the session the host issued, the table, the surface, the socket.
    spawn_local(async move {
        reload();
        let info = match surface::session_info().await {
            Ok(info) => info,
            Err(e) => {
                connection.set(Connection::Offline(format!("No agent session: {e}.")));
                return;
            }
        };
        let surface = match surface::create(&info, table) {
            Ok(s) => Rc::new(s),
            Err(e) => {
                connection.set(Connection::Offline(format!(
                    "The agent surface could not start: {e}."
                )));
                return;
            }
        };
        surface_cell.set_value(Some(surface.clone()));
        // The dialog: shown for each call the session holds, taken down when
        // it is settled (decided, expired, aborted).
        let subscription = surface.session.on_confirmation(move |event| match event {
            ConfirmationEvent::Requested(held) => {
                settle(
                    &held.invocation_id,
                    "Waiting for your confirmation…".to_string(),
                    Tone::Pending,
                );
                dialog.set(Some(held.clone()));
            }
            ConfirmationEvent::Settled {
                confirmation_id,
                invocation_id,
                outcome,
            } => {
                if dialog
                    .get_untracked()
                    .is_some_and(|d| &d.confirmation_id == confirmation_id)
                {
                    dialog.set(None);
                }
                let words = match outcome {
                    ConfirmationOutcome::Approved => "You approved; running it…",
                    ConfirmationOutcome::Rejected => "You rejected it.",
                    ConfirmationOutcome::Expired => "The confirmation expired.",
                    ConfirmationOutcome::Aborted => {
                        "The confirmation was withdrawn (connection lost)."
                    }
                };
                settle(invocation_id, words.to_string(), Tone::Pending);
            }
        });
        match subscription {
            Ok(subscription) => confirmations_cell.set_value(Some(subscription)),
            Err(e) => {
                connection.set(Connection::Offline(format!(
                    "The agent session could not start: {e}."
                )));
                return;
            }
        }
        let url = socket_url(&info.socket_path);
        let on_event = move |event: &SocketEvent| match event {
            SocketEvent::Connecting { attempt } => connection.set(Connection::Connecting(*attempt)),
            SocketEvent::Connected { connection_id, .. } => {
                connection.set(Connection::Connected(connection_id.clone()));
            }
            SocketEvent::Call(call) => {
                let name = words::short_name(&call.invocation.capability_id).to_string();
                push(
                    Some(call.invocation.invocation_id.clone()),
                    format!(
                        "Agent → {name}, {}",
                        words::input_words(&call.invocation.input)
                    ),
                    "Running…".to_string(),
                    Tone::Pending,
                );
            }
            SocketEvent::Answered { result, .. } => {
                let capability = activity
                    .get_untracked()
                    .iter()
                    .find(|e| e.invocation_id.as_deref() == Some(result.invocation_id.as_str()))
                    .map(|e| e.title.clone())
                    .unwrap_or_default();
                let capability = capability
                    .strip_prefix("Agent → ")
                    .and_then(|t| t.split(',').next())
                    .unwrap_or("")
                    .to_string();
                let (tone, detail) = words::outcome_words(&capability, &result.result);
                settle(&result.invocation_id, detail, tone);
                if tone == Tone::Ok
                    && capability.starts_with("devices.")
                    && !capability.starts_with("devices.table")
                {
                    reload();
                }
            }
            SocketEvent::Disconnected {
                aborted_calls,
                retry_in,
                ..
            } => {
                if *aborted_calls > 0 {
                    push(
                        None,
                        "Connection to the agent lost".to_string(),
                        format!(
                            "{aborted_calls} agent call(s) were aborted; they may or may not have taken effect."
                        ),
                        Tone::Error,
                    );
                }
                connection.set(match retry_in {
                    Some(d) => Connection::Retrying(d.as_millis() as u64),
                    None => Connection::Offline("The agent session is closed.".to_string()),
                });
            }
            SocketEvent::Progress(progress) if progress.stage == ProgressStage::Confirmed => {
                settle(
                    &progress.invocation_id,
                    "You approved; running it…".to_string(),
                    Tone::Pending,
                );
            }
            SocketEvent::Stopped(reason) => connection.set(Connection::Offline(match reason {
                StopReason::GaveUp { attempts } => {
                    format!("The agent host could not be reached after {attempts} attempts.")
                }
                StopReason::Session(e) => format!("The agent session ended: {e}."),
                _ => "The agent session is closed.".to_string(),
            })),
            _ => {}
        };
        match SessionSocket::open(
            surface.session.clone(),
            SessionSocketOptions::new(url),
            on_event,
        ) {
            Ok(socket) => socket_cell.set_value(Some(socket)),
            Err(e) => connection.set(Connection::Offline(e.to_string())),
        }
    });

    let start_turn = move |script: &'static str| {
        if turn_running.get_untracked() {
            return;
        }
        turn_running.set(true);
        report.set(None);
        spawn_local(async move {
            let outcome = surface::run_turn(script).await;
            turn_running.set(false);
            match outcome {
                Ok(r) => {
                    let tone = if r.summary.starts_with("Success") {
                        Tone::Ok
                    } else {
                        Tone::Error
                    };
                    report.set(Some((tone, r.summary)));
                }
                Err(e) => report.set(Some((Tone::Error, format!("The agent turn failed: {e}.")))),
            }
            reload();
        });
    };

    let decide = move |approve: bool| {
        let Some(held) = dialog.get_untracked() else {
            return;
        };
        let outcome = surface_cell.with_value(|s| {
            s.as_ref().map(|s| {
                if approve {
                    s.session.approve(&held.confirmation_id)
                } else {
                    s.session.reject(&held.confirmation_id)
                }
            })
        });
        if let Some(Err(e)) = outcome {
            dialog.set(None);
            push(
                None,
                "Confirmation".to_string(),
                format!("It could not be applied: {e}."),
                Tone::Error,
            );
        }
    };

    view! {
        <ConfirmDialog dialog=dialog selection=table.selection on_decide=decide />
        <header>
            <div class="brand">
                <h1>"Devices console"</h1>
                <ConnectionLine connection=connection />
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
            </div>
        </header>
        <Show when=move || report.get().is_some()>
            <div id="turn-report" class=move || format!("report {}", report.get().map(|r| r.0.class()).unwrap_or("info"))>
                <strong>"Agent turn: "</strong>
                <span>{move || report.get().map(|r| r.1).unwrap_or_default()}</span>
            </div>
        </Show>
        <main>
            <section class="card table-card">
                <div class="card-head">
                    <h2>"Devices"</h2>
                    <label class="filter">
                        "Show "
                        <select id="filter" on:change=move |ev| {
                            let value = event_target_value(&ev);
                            table.filter.set(match value.as_str() {
                                "active" => Some(Status::Active),
                                "disabled" => Some(Status::Disabled),
                                _ => None,
                            });
                            table.prune();
                        }>
                            <option value="all">"all devices"</option>
                            <option value="active">"active only"</option>
                            <option value="disabled">"disabled only"</option>
                        </select>
                    </label>
                </div>
                <Show when=move || load_error.get().is_some()>
                    <p class="load-error">{move || load_error.get().unwrap_or_default()}</p>
                </Show>
                <table id="devices">
                    <thead><tr><th></th><th>"Id"</th><th>"Name"</th><th>"Status"</th></tr></thead>
                    <tbody>
                        <For each=move || table.visible() key=|d| (d.id.clone(), d.status.clone()) let:device>
                            <DeviceRow device=device table=table />
                        </For>
                    </tbody>
                </table>
                <p id="selection" class="hint">
                    {move || {
                        let s = table.selection.get();
                        if !loaded.get() {
                            "Loading devices…".to_string()
                        } else if s.is_empty() {
                            "No device selected: the agent's device actions are unavailable.".to_string()
                        } else {
                            format!("Selected: {} — the agent acts on exactly these.", s.join(", "))
                        }
                    }}
                </p>
            </section>
            <section class="card activity-card">
                <h2>"Agent activity"</h2>
                <ol id="activity">
                    <For each=move || activity.get() key=|e| (e.key, e.detail.clone()) let:entry>
                        <li class=format!("entry {}", entry.tone.class()) data-invocation=entry.invocation_id.clone().unwrap_or_default()>
                            <div class="entry-title">{entry.title.clone()}</div>
                            <div class="entry-detail">{entry.detail.clone()}</div>
                        </li>
                    </For>
                </ol>
                <Show when=move || activity.get().is_empty()>
                    <p class="hint">"Nothing yet. The agent's calls and their results appear here."</p>
                </Show>
            </section>
        </main>
    }
}

/// The in-page confirmation: what the agent asked for and the effective
/// input the server will receive, with Approve and Reject. Not modal: the
/// table stays usable (changing the selection invalidates the approval).
#[component]
fn ConfirmDialog(
    dialog: RwSignal<Option<HeldConfirmation>>,
    selection: RwSignal<Vec<String>>,
    on_decide: impl Fn(bool) + Clone + Send + Sync + 'static,
) -> impl IntoView {
    let approve = {
        let on_decide = on_decide.clone();
        move |_| on_decide(true)
    };
    let reject = move |_| on_decide(false);
    let field = move |f: fn(&HeldConfirmation) -> String| {
        move || dialog.get().map(|d| f(&d)).unwrap_or_default()
    };
    let ids = move || {
        dialog
            .get()
            .and_then(|d| d.summary["input"]["deviceIds"].as_array().cloned())
            .unwrap_or_default()
            .into_iter()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect::<Vec<_>>()
    };
    // The selection no longer equals the ids the agent's call carries:
    // approving now is refused as a different call, so say so up front.
    let drifted = move || dialog.get().is_some() && selection.get() != ids();
    view! {
        <Show when=move || dialog.get().is_some()>
            <aside id="confirm-dialog" class="dialog" role="dialog" aria-labelledby="confirm-title">
                <h2 id="confirm-title">{field(|d| format!("The agent wants to run {}", words::short_name(&d.capability_id)))}</h2>
                <p class="description">{field(|d| d.summary["description"].as_str().unwrap_or("").to_string())}</p>
                <div class="label">"Devices it applies to"</div>
                <div class="ids">
                    <For each=ids key=|id| id.clone() let:id>
                        <span class="mono">{id}</span>
                    </For>
                </div>
                <div class="label">"Exactly what the server will receive"</div>
                <pre id="confirm-input" class="mono">{field(|d| pretty(&d.summary["input"]))}</pre>
                <Show
                    when=drifted
                    fallback=|| view! { <p class="note">"Changing the selection now makes this approval invalid."</p> }
                >
                    <p id="confirm-drift" class="note warn">
                        "The selection changed after the agent asked: approving will not run this call. Reject it, or restore the selection."
                    </p>
                </Show>
                <div class="buttons">
                    <button id="reject" class="reject" on:click=reject.clone()>"Reject"</button>
                    <button id="approve" class="approve" on:click=approve.clone()>"Approve"</button>
                </div>
            </aside>
        </Show>
    }
}

#[component]
fn ConnectionLine(connection: RwSignal<Connection>) -> impl IntoView {
    let text = move || match connection.get() {
        Connection::Starting => ("starting", "Starting the agent session…".to_string()),
        Connection::Connecting(1) => ("connecting", "Connecting to the agent host…".to_string()),
        Connection::Connecting(n) => ("connecting", format!("Reconnecting (attempt {n})…")),
        Connection::Connected(_) => ("connected", "Agent connected".to_string()),
        Connection::Retrying(ms) => (
            "retrying",
            format!("Connection lost — retrying in {:.1} s", ms as f64 / 1000.0),
        ),
        Connection::Offline(why) => ("offline", why),
    };
    view! {
        <span id="agent-status" class=move || format!("status {}", text().0)>{move || text().1}</span>
    }
}

#[component]
fn DeviceRow(device: surface::Device, table: TableState) -> impl IntoView {
    let id = device.id.clone();
    let is_selected = {
        let id = id.clone();
        move || table.selection.get().contains(&id)
    };
    let checked = is_selected.clone();
    let toggle = {
        let id = id.clone();
        move |_| table.toggle(&id)
    };
    let status_class = format!("badge {}", device.status);
    view! {
        <tr class:selected=is_selected data-id=id.clone()>
            <td><input type="checkbox" id=format!("select-{id}") prop:checked=checked on:change=toggle /></td>
            <td class="mono">{id.clone()}</td>
            <td>{device.name.clone()}</td>
            <td><span id=format!("status-{id}") class=status_class>{device.status.clone()}</span></td>
        </tr>
    }
}

fn socket_url(path: &str) -> String {
    let location = web_sys::window().map(|w| w.location());
    let host = location
        .as_ref()
        .and_then(|l| l.host().ok())
        .unwrap_or_else(|| "127.0.0.1".to_string());
    let scheme = match location.and_then(|l| l.protocol().ok()).as_deref() {
        Some("https:") => "wss",
        _ => "ws",
    };
    format!("{scheme}://{host}{path}")
}

fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_default()
}
