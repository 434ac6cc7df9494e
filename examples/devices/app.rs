//! The devices console application: the code generated from the real
//! manifest, the bindings, the devices table (its rows, filter and
//! selection are UI state) and its registration with the surface registry.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use agent_surface::{
    agent_procedure, AgentConsumer, AgentProcedureBinding, ComponentDefinition, ConfirmationLevel,
    ErrorCode, ExecutionError, RegistrationError, RegistrationHandle, Retry, SurfaceRegistry,
    ViewCapability,
};
use serde::{Deserialize, Serialize};
use serde_json::json;

/// Everything `manifest!` generates from the backend's manifest: typed
/// references (`api::devices::disable()`), input/output types and the
/// authority the registry is created with. The manifest is the one the
/// real oRPC peer's zod contracts generate (`tests/orpc-peer`).
pub mod api {
    agent_surface::manifest!("tests/fixtures/devices.manifest.json");
}

/// What the devices table binds into `devices.disable`: the selected rows.
/// The field is locked (the agent never sees or sets `deviceIds`); `reason`
/// stays agent-settable.
#[agent_procedure(api, "devices.disable")]
pub struct DisableSelection {
    pub device_ids: Vec<String>,
}

/// The same selection bound into `devices.purge` (destructive).
#[agent_procedure(api, "devices.purge")]
pub struct PurgeSelection {
    pub device_ids: Vec<String>,
}

/// One row of the devices table, as `devices.list` returns it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Device {
    pub id: String,
    pub name: String,
    /// `active` or `disabled`.
    pub status: String,
}

/// The devices table's UI state. Cheap to clone: clones share the state
/// (as a UI framework's signals would).
#[derive(Clone, Default)]
pub struct DevicesView {
    rows: Arc<Mutex<Vec<Device>>>,
    filter: Arc<Mutex<Option<DeviceStatus>>>,
    selection: Arc<Mutex<Vec<String>>>,
    /// Bumped on every selection or filter change; the app's render loop
    /// compares it to tell the registry the surface changed.
    revision: Arc<AtomicU64>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl DevicesView {
    /// Replaces the rows (after the app loaded them from its backend); the
    /// selection keeps only ids still visible.
    pub fn set_rows(&self, rows: Vec<Device>) {
        *lock(&self.rows) = rows;
        self.prune_selection();
    }

    /// The rows the current filter shows.
    pub fn visible_rows(&self) -> Vec<Device> {
        let filter = *lock(&self.filter);
        lock(&self.rows)
            .iter()
            .filter(|d| filter.is_none_or(|f| d.status == f.as_str()))
            .cloned()
            .collect()
    }

    /// The selected device ids, in selection order.
    pub fn selection(&self) -> Vec<String> {
        lock(&self.selection).clone()
    }

    /// The change counter (see the field).
    pub fn revision(&self) -> u64 {
        self.revision.load(Ordering::SeqCst)
    }

    /// Selects exactly `ids` (a click in the table, or the agent's
    /// `view:devices.table.select`). Ids that are not visible rows are
    /// refused and nothing changes.
    pub fn select(&self, ids: Vec<String>) -> Result<(), Vec<String>> {
        let visible = self.visible_rows();
        let unknown: Vec<String> = ids
            .iter()
            .filter(|id| !visible.iter().any(|d| &&d.id == id))
            .cloned()
            .collect();
        if !unknown.is_empty() {
            return Err(unknown);
        }
        let mut deduped: Vec<String> = Vec::with_capacity(ids.len());
        for id in ids {
            if !deduped.contains(&id) {
                deduped.push(id);
            }
        }
        *lock(&self.selection) = deduped;
        self.revision.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }

    /// Shows only rows of `status` (or all); hidden rows leave the selection.
    pub fn set_filter(&self, status: Option<DeviceStatus>) {
        *lock(&self.filter) = status;
        self.revision.fetch_add(1, Ordering::SeqCst);
        self.prune_selection();
    }

    fn prune_selection(&self) {
        let visible = self.visible_rows();
        let mut selection = lock(&self.selection);
        let before = selection.len();
        selection.retain(|id| visible.iter().any(|d| &d.id == id));
        if selection.len() != before {
            self.revision.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// The table as the user sees it (`[x]` marks selected rows).
    pub fn render(&self) -> String {
        let selection = self.selection();
        let filter = *lock(&self.filter);
        let mut out = format!(
            "  devices table (filter: {}, selected: {:?})\n",
            filter.map_or("all", DeviceStatus::as_str),
            selection
        );
        for d in self.visible_rows() {
            let mark = if selection.contains(&d.id) {
                "[x]"
            } else {
                "[ ]"
            };
            out.push_str(&format!(
                "    {mark} {:<11} {:<13} {}\n",
                d.id, d.name, d.status
            ));
        }
        out
    }
}

/// A device status, as the table's filter knows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DeviceStatus {
    Active,
    Disabled,
}

impl DeviceStatus {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            DeviceStatus::Active => "active",
            DeviceStatus::Disabled => "disabled",
        }
    }
}

/// The view capabilities' inputs (`SelectRows`, `FilterRows`), typed and
/// validated at compile time from `view-inputs.json`: no `dynamic` needed.
pub mod view {
    agent_surface::view_inputs!("examples/devices/view-inputs.json");
}
use view::{FilterRows, SelectRows};

/// The live registrations of the console. Dropping it unregisters them.
pub struct Registrations {
    pub table: RegistrationHandle,
    pub list: RegistrationHandle,
    pub disable: RegistrationHandle,
    pub purge: RegistrationHandle,
}

/// The consumer the scripted agent runs as: an embedded agent (it sees the
/// view capabilities).
pub fn consumer() -> AgentConsumer {
    AgentConsumer::embedded("devices-console-agent")
}

/// The manifest procedures [`register`] registers, in catalog order.
pub const REGISTERED: [&str; 3] = ["devices.list", "devices.disable", "devices.purge"];

/// Registers the devices table (with its view capabilities) and the three
/// procedure bindings: `devices.list` unbound, `devices.disable` and
/// `devices.purge` bound to the selection.
pub fn register(
    registry: &SurfaceRegistry,
    view: &DevicesView,
) -> Result<Registrations, RegistrationError> {
    let select_view = view.clone();
    let filter_view = view.clone();
    let table = registry.register_component(
        ComponentDefinition::new("devices.table", "main")
            .description("The devices table; its selection feeds devices.disable and devices.purge")
            .capability(ViewCapability::new::<SelectRows, _, _>(
                "select",
                "Select rows of the devices table (replaces the selection)",
                move |input: SelectRows| {
                    let outcome = select_view.select(input.device_ids);
                    let selected = select_view.selection();
                    async move {
                        match outcome {
                            Ok(()) => Ok(json!({ "selected": selected })),
                            Err(unknown) => Err(ExecutionError::new(
                                ErrorCode::InvalidInput,
                                "Some ids are not rows of the table; nothing was selected.",
                                Retry::WithChanges,
                            )
                            .with_detail("unknownIds", unknown)),
                        }
                    }
                },
            ))
            .capability(ViewCapability::new::<FilterRows, _, _>(
                "filter",
                "Filter the devices table by status; hidden rows leave the selection",
                move |input: FilterRows| {
                    filter_view.set_filter(input.status.map(|s| match s {
                        view::filter_rows::InputStatus::Active => DeviceStatus::Active,
                        view::filter_rows::InputStatus::Disabled => DeviceStatus::Disabled,
                    }));
                    let visible: Vec<String> = filter_view
                        .visible_rows()
                        .into_iter()
                        .map(|d| d.id)
                        .collect();
                    let selected = filter_view.selection();
                    async move { Ok(json!({ "visible": visible, "selected": selected })) }
                },
            )),
    )?;

    let list = registry.register_procedure(AgentProcedureBinding::new(api::devices::list()))?;

    let (bind_view, when_view, describe_view) = (view.clone(), view.clone(), view.clone());
    let disable = registry.register_procedure(
        AgentProcedureBinding::new(api::devices::disable())
            .bind(move || DisableSelection {
                device_ids: bind_view.selection(),
            })
            .when(move || !when_view.selection().is_empty())
            .unavailable_reason("Select at least one device in the table first")
            .confirmation(ConfirmationLevel::Required)
            .describe(move || {
                format!(
                    "Applies to the {} device(s) selected in the table",
                    describe_view.selection().len()
                )
            })
            .context(&table),
    )?;

    let (bind_view, when_view, describe_view) = (view.clone(), view.clone(), view.clone());
    let purge = registry.register_procedure(
        AgentProcedureBinding::new(api::devices::purge())
            .bind(move || PurgeSelection {
                device_ids: bind_view.selection(),
            })
            .when(move || !when_view.selection().is_empty())
            .unavailable_reason("Select at least one device in the table first")
            .describe(move || {
                format!(
                    "Applies to the {} device(s) selected in the table",
                    describe_view.selection().len()
                )
            })
            .context(&table),
    )?;

    Ok(Registrations {
        table,
        list,
        disable,
        purge,
    })
}
