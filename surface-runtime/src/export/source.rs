//! The tools a [`ToolCatalog`](super::ToolCatalog) is built from: each one
//! a descriptor (what the snapshot says about it), a route (where its calls
//! go) and the surface version it was described at.
//!
//! A snapshot gives one [`ToolSource`] per procedure and per view
//! capability ([`ToolSource::from_snapshot`]); an agent host gives its own
//! (the browser tools of a run's tab, its server tools) without building a
//! snapshot first.

use std::collections::HashMap;

use crate::snapshot::{
    AgentProcedureDescriptor, ComponentContext, SurfaceSnapshot, ViewCapabilityDescriptor,
};

/// What a tool is, as a snapshot describes it: a procedure reference, or a
/// view capability of one component instance.
#[derive(Clone, Debug, PartialEq)]
pub enum ToolDescriptor {
    /// A procedure reference (an entry of [`SurfaceSnapshot::procedures`]):
    /// id, description and contextual note, input and output schemas,
    /// effect, confirmation, availability, bound fields, registration id
    /// and component context all come from it.
    Procedure(AgentProcedureDescriptor),
    /// An observation or action of a component instance (an entry of a
    /// [`ComponentDescriptor`](crate::snapshot::ComponentDescriptor)'s
    /// `observations` or `actions`).
    View {
        /// The component instance's registration id (what calls carry).
        registration_id: String,
        /// The component type and instance id.
        component: ComponentContext,
        /// The capability: id, description, schemas, availability.
        capability: ViewCapabilityDescriptor,
    },
}

impl ToolDescriptor {
    /// The capability id an invocation names: a procedure's id
    /// (`domain:…`), a view capability's (`view:…`).
    pub fn capability_id(&self) -> &str {
        match self {
            ToolDescriptor::Procedure(p) => &p.procedure_id,
            ToolDescriptor::View { capability, .. } => capability.capability_id(),
        }
    }

    /// The registration id calls carry (the procedure binding's, or the
    /// component instance's).
    pub fn registration_id(&self) -> &str {
        match self {
            ToolDescriptor::Procedure(p) => &p.registration_id,
            ToolDescriptor::View {
                registration_id, ..
            } => registration_id,
        }
    }
}

/// Where the calls of a tool go. The catalog does not dispatch; it keeps
/// the route for whoever does ([`CatalogTool::route`](super::CatalogTool::route)).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ToolRoute {
    /// The registry whose snapshot described the tool: run the invocation
    /// with its `invoke` (every tool of
    /// [`ToolCatalog::new`](super::ToolCatalog::new); an agent host's
    /// server tools, in the host's server registry).
    Registry,
    /// The live surface of a browser tab, reached through an agent host
    /// (`AgentHost::dispatch`).
    Browser {
        /// The tab serving the tool.
        tab_id: String,
    },
}

/// One tool to catalog: its descriptor, its route, and the surface version
/// of the snapshot or announcement that described it (every invocation of
/// the tool carries it, so the registry that serves it detects a stale
/// call).
///
/// ```
/// use surface_runtime::export::{ToolDescriptor, ToolRoute, ToolSource};
/// use surface_runtime::snapshot::{ActionDescriptor, ComponentContext, ViewCapabilityDescriptor};
/// use surface_runtime::{ConfirmationLevel, ViewEffect};
/// use std::sync::Arc;
///
/// let select = ToolSource {
///     descriptor: ToolDescriptor::View {
///         registration_id: "r1".into(),
///         component: ComponentContext {
///             component_type: "devices.table".into(),
///             instance_id: "main".into(),
///         },
///         capability: ViewCapabilityDescriptor::Action(ActionDescriptor {
///             capability_id: "view:devices.table.select".into(),
///             name: "select".into(),
///             description: "Select devices".into(),
///             input_schema: Arc::new(serde_json::json!({"type": "object"})),
///             output_schema: None,
///             effect: ViewEffect::LocalState,
///             idempotent: false,
///             reversible: true,
///             confirmation: ConfirmationLevel::Never,
///             available: true,
///             unavailable_reason: None,
///             meta: None,
///         }),
///     },
///     route: ToolRoute::Browser { tab_id: "tab-1".into() },
///     surface_version: 7,
/// };
/// assert_eq!(select.descriptor.capability_id(), "view:devices.table.select");
/// assert_eq!(select.descriptor.registration_id(), "r1");
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct ToolSource {
    /// What the tool is.
    pub descriptor: ToolDescriptor,
    /// Where its calls go.
    pub route: ToolRoute,
    /// The surface version it was described at.
    pub surface_version: u64,
}

impl ToolSource {
    /// The tools of a snapshot, in snapshot order: every procedure, then
    /// every view capability of every component; each routed
    /// [`ToolRoute::Registry`] at the snapshot's surface version.
    pub fn from_snapshot(snapshot: &SurfaceSnapshot) -> Vec<ToolSource> {
        let at = |descriptor| ToolSource {
            descriptor,
            route: ToolRoute::Registry,
            surface_version: snapshot.surface_version,
        };
        let procedures = snapshot
            .procedures
            .iter()
            .map(|p| at(ToolDescriptor::Procedure(p.clone())));
        let views = snapshot.components.iter().flat_map(|c| {
            c.capabilities().map(move |v| {
                at(ToolDescriptor::View {
                    registration_id: c.registration_id.clone(),
                    component: ComponentContext {
                        component_type: c.component_type.clone(),
                        instance_id: c.instance_id.clone(),
                    },
                    capability: v,
                })
            })
        });
        procedures.chain(views).collect()
    }
}

/// Tools in catalog order: procedures first, in the given order; then view
/// capabilities grouped by component registration (components in order of
/// first appearance), each group in the given order. The order of a
/// snapshot's tools ([`ToolSource::from_snapshot`]) is kept.
pub(super) fn catalog_order(tools: Vec<ToolSource>) -> Vec<ToolSource> {
    let (mut out, views): (Vec<ToolSource>, Vec<ToolSource>) = tools
        .into_iter()
        .partition(|t| matches!(t.descriptor, ToolDescriptor::Procedure(_)));
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut groups: Vec<Vec<ToolSource>> = Vec::new();
    for view in views {
        let registration = view.descriptor.registration_id().to_string();
        let group = *index.entry(registration).or_insert_with(|| {
            groups.push(Vec::new());
            groups.len() - 1
        });
        groups[group].push(view);
    }
    out.extend(groups.into_iter().flatten());
    out
}
