//! The devices table, its selection and filter, and the details panel
//! shown for a single selection — with what the agent may do on them.

use agent_surface::{
    AgentProcedureBinding, ComponentDefinition, ConfirmationLevel, ErrorCode, ExecutionError,
    RegistrationError, Retry, ViewCapability,
};
use agent_surface_leptos::use_agent_component;
use devices_api::view::{FilterRows, SelectRows};
use devices_api::{api, DisableSelection, PurgeSelection, RenameShown};
use leptos::prelude::*;
use serde_json::{json, Value};

use crate::backend::Device;

/// The input types of the view actions this page defines itself (the
/// others are the shared ones of `devices_api::view`), generated with
/// their validators at compile time.
mod view {
    agent_surface::view_inputs!("view-inputs.json");
}
use view::ClearSelection;

/// The table's status filter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Active devices.
    Active,
    /// Disabled devices.
    Disabled,
}

impl Status {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Active => "active",
            Status::Disabled => "disabled",
        }
    }

    /// From the wire name (`None` for anything else: all devices).
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "active" => Some(Status::Active),
            "disabled" => Some(Status::Disabled),
            _ => None,
        }
    }
}

/// The table's UI state (Leptos signals: `Copy`, shared).
#[derive(Clone, Copy)]
pub struct TableState {
    /// Every row loaded.
    pub rows: RwSignal<Vec<Device>>,
    /// The status filter (`None`: all).
    pub filter: RwSignal<Option<Status>>,
    /// The selected ids, in selection order.
    pub selection: RwSignal<Vec<String>>,
}

impl TableState {
    /// Empty state.
    pub fn new() -> Self {
        Self {
            rows: RwSignal::new(Vec::new()),
            filter: RwSignal::new(None),
            selection: RwSignal::new(Vec::new()),
        }
    }

    /// The rows the filter shows (tracked).
    pub fn visible(&self) -> Vec<Device> {
        let filter = self.filter.get();
        let rows = self.rows.get();
        rows.into_iter()
            .filter(|d| filter.is_none_or(|f| d.status == f.as_str()))
            .collect()
    }

    fn visible_untracked(&self) -> Vec<Device> {
        untrack(|| self.visible())
    }

    /// Keeps only visible rows in the selection.
    pub fn prune(&self) {
        let visible = self.visible_untracked();
        self.selection
            .update(|s| s.retain(|id| visible.iter().any(|d| &d.id == id)));
    }

    /// Sets the filter and prunes the selection.
    pub fn set_filter(&self, filter: Option<Status>) {
        self.filter.set(filter);
        self.prune();
    }

    /// Selects exactly `ids` (deduplicated); unknown or hidden ids are
    /// refused and returned.
    pub fn select(&self, ids: Vec<String>) -> Result<(), Vec<String>> {
        let visible = self.visible_untracked();
        let unknown: Vec<String> = ids
            .iter()
            .filter(|id| !visible.iter().any(|d| &&d.id == id))
            .cloned()
            .collect();
        if !unknown.is_empty() {
            return Err(unknown);
        }
        let mut deduped = Vec::with_capacity(ids.len());
        for id in ids {
            if !deduped.contains(&id) {
                deduped.push(id);
            }
        }
        self.selection.set(deduped);
        Ok(())
    }

    /// Adds or removes one row (a click on its checkbox).
    pub fn toggle(&self, id: &str) {
        self.selection
            .update(|s| match s.iter().position(|x| x == id) {
                Some(i) => {
                    s.remove(i);
                }
                None => s.push(id.to_string()),
            });
    }

    /// The device shown in the details panel: the selection's only one.
    pub fn single(&self) -> Option<Device> {
        let selection = self.selection.get();
        let [id] = selection.as_slice() else {
            return None;
        };
        self.rows.get().into_iter().find(|d| &d.id == id)
    }
}

/// The contextual description of the selection-bound procedures: the
/// selection's size and the rows the table shows (so a filter change is a
/// new view for the agent, and a confirmation asked before it is stale).
fn applies_to(count: usize, filter: Option<Status>) -> String {
    let shown = match filter {
        None => "all devices",
        Some(Status::Active) => "active devices only",
        Some(Status::Disabled) => "disabled devices only",
    };
    match count {
        1 => format!("Applies to the device selected in the table (showing {shown})."),
        n => format!("Applies to the {n} devices selected in the table (showing {shown})."),
    }
}

/// The table's state as the agent reads it (`readState`): the rows the
/// filter shows, the selection, the filter.
fn table_state(table: &TableState) -> Value {
    let rows: Vec<Value> = table
        .visible_untracked()
        .into_iter()
        .map(|d| json!({ "id": d.id, "name": d.name, "status": d.status }))
        .collect();
    let filter = table
        .filter
        .get_untracked()
        .map_or("all", |status| status.as_str());
    json!({
        "visibleRows": rows,
        "selectedIds": table.selection.get_untracked(),
        "filter": filter,
    })
}

/// The output schema of `readState`. The schemas are JSON text parsed at
/// registration: smaller in the page's WebAssembly than `json!` literals.
const READ_STATE_OUTPUT: &str = r#"{"type":"object","properties":{
  "visibleRows":{"type":"array","items":{"type":"object","properties":{
    "id":{"type":"string"},"name":{"type":"string"},"status":{"type":"string"}},
    "required":["id","name","status"],"additionalProperties":false}},
  "selectedIds":{"type":"array","items":{"type":"string"}},
  "filter":{"type":"string","enum":["all","active","disabled"]}},
 "required":["visibleRows","selectedIds","filter"],"additionalProperties":false}"#;

/// The output schema of `select`.
const SELECT_OUTPUT: &str = r#"{"type":"object","properties":{
  "selected":{"type":"array","items":{"type":"string"}}},
 "required":["selected"],"additionalProperties":false}"#;

/// The output schema of `filter`.
const FILTER_OUTPUT: &str = r#"{"type":"object","properties":{
  "visible":{"type":"array","items":{"type":"string"}},
  "selected":{"type":"array","items":{"type":"string"}}},
 "required":["visible","selected"],"additionalProperties":false}"#;

/// A schema constant above as JSON (`null` if it were not JSON, which the
/// e2e test's exact descriptors would catch).
fn schema(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or(Value::Null)
}

/// `readState`: an observation (read-only, no input) of what the table
/// shows — what the original's table example offers the agent instead of
/// letting it guess the rows.
fn read_state(table: TableState) -> ViewCapability {
    ViewCapability::observation(
        "readState",
        "The rows the devices table shows, the selection and the status filter",
        schema(READ_STATE_OUTPUT),
        move || {
            let state = table_state(&table);
            async move { Ok(state) }
        },
    )
}

/// `select`: replaces the selection. Idempotent (the same ids twice leave
/// the same selection) and reversible (select again, or clear).
fn select_rows(table: TableState) -> ViewCapability {
    ViewCapability::new::<SelectRows, _, _>(
        "select",
        "Select rows of the devices table (replaces the selection)",
        move |input: SelectRows| {
            let outcome = table.select(input.device_ids);
            let selected = table.selection.get_untracked();
            async move {
                outcome
                    .map(|()| json!({ "selected": selected }))
                    .map_err(|unknown| {
                        ExecutionError::new(
                            ErrorCode::InvalidInput,
                            "Some ids are not visible rows of the table; nothing was selected.",
                            Retry::WithChanges,
                        )
                        .with_detail("unknownIds", unknown)
                    })
            }
        },
    )
    .idempotent(true)
    .reversible(true)
    .output_schema(schema(SELECT_OUTPUT))
}

/// `clearSelection`: empties the selection; no output (a void action).
/// Idempotent and reversible; unavailable while nothing is selected.
fn clear_selection(table: TableState) -> ViewCapability {
    ViewCapability::new::<ClearSelection, _, _>(
        "clearSelection",
        "Clear the selection of the devices table",
        move |_: ClearSelection| {
            table.selection.set(Vec::new());
            async move { Ok(Value::Null) }
        },
    )
    .idempotent(true)
    .reversible(true)
    .when(move || !table.selection.get().is_empty())
    .unavailable_reason("No device is selected")
}

/// `filter`: shows one status (or all). Idempotent, but not reversible:
/// the rows it hides leave the selection, and showing them again does not
/// select them again.
fn filter_rows(table: TableState) -> ViewCapability {
    ViewCapability::new::<FilterRows, _, _>(
        "filter",
        "Filter the devices table by status; hidden rows leave the selection",
        move |input: FilterRows| {
            table.set_filter(input.status.and_then(|s| Status::parse(s.as_str())));
            let visible: Vec<String> = table
                .visible_untracked()
                .into_iter()
                .map(|d| d.id)
                .collect();
            let selected = table.selection.get_untracked();
            async move { Ok(json!({ "visible": visible, "selected": selected })) }
        },
    )
    .idempotent(true)
    .reversible(false)
    .output_schema(schema(FILTER_OUTPUT))
}

/// What the agent may do on the table while it is on the page: read it
/// (`readState`), select, clear and filter rows (local actions), disable
/// and purge the selection (bound, locked). `when`/`describe` read the
/// selection tracked: the surface follows it with no notify.
fn register(table: TableState) -> Result<(), RegistrationError> {
    let selected = move || table.selection.get().len();
    let component = use_agent_component(
        ComponentDefinition::new("devices.table", "main")
            .description("The devices table; its selection feeds devices.disable and devices.purge")
            .capability(read_state(table))
            .capability(select_rows(table))
            .capability(clear_selection(table))
            .capability(filter_rows(table)),
    )?;
    component.use_procedure(
        AgentProcedureBinding::new(api::devices::disable())
            .bind(move || DisableSelection {
                device_ids: table.selection.get_untracked(),
            })
            .when(move || selected() > 0)
            .unavailable_reason("Select at least one device in the table first")
            .confirmation(ConfirmationLevel::Required)
            .describe(move || applies_to(selected(), table.filter.get())),
    )?;
    component.use_procedure(
        AgentProcedureBinding::new(api::devices::purge())
            .bind(move || PurgeSelection {
                device_ids: table.selection.get_untracked(),
            })
            .when(move || selected() > 0)
            .unavailable_reason("Select at least one device in the table first")
            .describe(move || applies_to(selected(), table.filter.get())),
    )?;
    Ok(())
}

/// The devices table with its filter and selection line.
#[component]
pub fn DevicesTable(table: TableState, loaded: RwSignal<bool>) -> impl IntoView {
    let problem = register(table)
        .err()
        .map(|e| format!("The agent cannot act on this table: {e}."));
    view! {
        {problem.map(|p| view! { <p id="surface-error" class="load-error">{p}</p> })}
        <div class="card-head">
            <h2>"Devices"</h2>
            <label class="filter">
                "Show "
                <select id="filter" on:change=move |ev| table.set_filter(Status::parse(&event_target_value(&ev)))>
                    <option value="all">"all devices"</option>
                    <option value="active">"active only"</option>
                    <option value="disabled">"disabled only"</option>
                </select>
            </label>
        </div>
        <table id="devices">
            <thead><tr><th></th><th>"Id"</th><th>"Name"</th><th>"Status"</th></tr></thead>
            <tbody>
                <For each=move || table.visible() key=|d| (d.id.clone(), d.status.clone(), d.name.clone()) let:device>
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
        <Show when=move || table.single().is_some()>
            <DetailsPanel table=table />
        </Show>
    }
}

/// The details of the single selected device. While it is mounted the
/// agent may rename that device (`devices.rename`, the id bound and
/// locked); it unmounts — and the tool goes away — when the selection is
/// not exactly one device.
#[component]
fn DetailsPanel(table: TableState) -> impl IntoView {
    let shown = Memo::new(move |_| table.single());
    let shown_id = move || shown.get_untracked().map(|d| d.id).unwrap_or_default();
    let problem = use_agent_component(
        ComponentDefinition::new("devices.details", "main")
            .description("The details panel of the one selected device"),
    )
    .and_then(|details| {
        details.use_procedure(
            AgentProcedureBinding::new(api::devices::rename())
                .bind(move || RenameShown {
                    device_id: shown_id(),
                })
                .describe(move || {
                    let name = shown.get().map(|d| d.name).unwrap_or_default();
                    format!("Renames the device shown in the details panel (now “{name}”).")
                }),
        )
    })
    .err()
    .map(|e| format!("The agent cannot rename from this panel: {e}."));
    view! {
        <aside id="details" class="details">
            {problem.map(|p| view! { <p class="load-error">{p}</p> })}
            <h3>"Details"</h3>
            <dl>
                <dt>"Id"</dt><dd id="details-id" class="mono">{move || shown.get().map(|d| d.id).unwrap_or_default()}</dd>
                <dt>"Name"</dt><dd id="details-name">{move || shown.get().map(|d| d.name).unwrap_or_default()}</dd>
                <dt>"Status"</dt><dd>{move || shown.get().map(|d| d.status).unwrap_or_default()}</dd>
            </dl>
            <p class="hint">"While this panel is open the agent may rename this device."</p>
        </aside>
    }
}

#[component]
fn DeviceRow(device: Device, table: TableState) -> impl IntoView {
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
