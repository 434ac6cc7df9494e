//! Bindings: how a procedure is made relevant to the current view, with
//! inputs bound from UI state (`docs/bindings.md`).
//!
//! * [`AgentProcedureBinding`] — what the application registers
//!   (`SurfaceRegistry::register_procedure`): a typed
//!   [`AgentProcedureRef`] plus availability, bound inputs, confirmation,
//!   policies, description and metadata.
//! * [`BoundInput`] — what `#[agent_procedure]` implements for the UI-bound
//!   subset of a procedure's input: its fields are bound from UI state at
//!   execution time, locked unless declared `overridable(...)`.
//! * [`ProcedureInput`] — what `#[agent_procedure(…, input)]` implements
//!   for the app's own full input type of a procedure.
//! * The binding rules, written once for the registry and the agent host:
//!   the agent-facing input schema ([`agent_input_schema`], rule 1) and the
//!   bound-field checks.
//!
//! | rule | where it is enforced |
//! |---|---|
//! | 1. the agent-facing schema is the manifest schema minus the locked bound fields | [`agent_input_schema`], at registration; re-checked by the agent host on announcements |
//! | 2. bound fields are locked by default; agent values for them are `INVALID_INPUT` (`details.lockedFields`), checked before merging | the pipeline's effective-input phase |
//! | 3. overridable fields stay in the agent schema, annotated with [`OVERRIDABLE_NOTE`]; an agent value wins | [`agent_input_schema`]; the merge |
//! | 4. `bind()` runs at execution time on live UI state; the snapshot carries [`BoundFieldDescriptor`]s, never values | the pipeline; the snapshot |
//! | 5. the merged input is validated against the full manifest schema; a bad binding is `PRECONDITION_FAILED` (`binding-failed`) | the pipeline's effective-input phase |
//! | 6. confirmation and policies on a binding only tighten | `ConfirmationLevel::floor` at registration; the pipeline |

mod procedure_binding;
mod rules;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::procedure::AgentProcedureRef;

pub use procedure_binding::AgentProcedureBinding;
pub(crate) use procedure_binding::{BindingSpec, ContextLink};
pub use rules::{agent_input_schema, OVERRIDABLE_NOTE};
pub(crate) use rules::{reduced_input_schema, unknown_bound_field};

/// Where a bound value comes from. Only `"ui-state"` today.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BindingSource {
    /// Live UI state read by `bind()` at execution time.
    UiState,
}

/// Binding metadata of one top-level input field (never its value), as the
/// snapshot's `boundFields` reports it (re-exported as
/// `snapshot::BoundFieldDescriptor`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BoundFieldDescriptor {
    /// Property name in the input schema.
    pub path: String,
    /// Locked fields are absent from the agent schema; agent values for them
    /// are `INVALID_INPUT`.
    pub locked: bool,
    /// Always `ui-state`.
    pub source: BindingSource,
}

/// One bound top-level input field, as the snapshot reports it (never its
/// value).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BoundField {
    /// The JSON property name in the procedure's input schema
    /// (`"deviceIds"`).
    pub name: &'static str,
    /// `true` unless the field was declared overridable: locked fields are
    /// removed from the agent-facing schema and agent values for them are
    /// `INVALID_INPUT`.
    pub locked: bool,
}

/// The UI-bound subset of a procedure's input (`TBound extends
/// Partial<TIn>`), implemented by `#[agent_procedure(...)]`.
pub trait BoundInput {
    /// The generated input type of the procedure this binds (ties the
    /// binding to its `AgentProcedureRef<Input, _>` at compile time).
    type Input;
    /// Dotted router path of the procedure.
    const PROCEDURE: &'static str;
    /// The bound fields, in declaration order.
    fn bound_fields() -> &'static [BoundField];
    /// The bound values as a JSON object keyed by schema property names.
    /// `None` optional fields are omitted (oRPC wants absent, not `null`).
    ///
    /// # Errors
    /// The serde_json error when a field fails to serialize; the registry
    /// reports it as `PRECONDITION_FAILED` (`binding-failed`).
    fn to_bound_json(&self) -> Result<Map<String, Value>, serde_json::Error>;
}

/// "`Self`, the input of the procedure binding type `B` binds, is the
/// input `I` of the procedure it is used for": what
/// [`AgentProcedureBinding::bind`] requires (`B::Input: BindsProcedure<I,
/// B>`), so that a binding type declared for one procedure and used for
/// another is a compile error naming the binding type and both procedures'
/// input types — `api::devices::disable::Input` is the input of
/// `devices.disable` — instead of rustc's bare E0271 on
/// `BoundInput::Input`. It holds exactly when `Self` is `I`.
#[diagnostic::on_unimplemented(
    message = "`{B}` is a binding of another procedure: it binds the procedure whose input is `{Self}`, and this binding's procedure takes `{I}`",
    label = "`{B}` binds another procedure",
    note = "`#[agent_procedure(api, \"…\")]` ties a binding struct to one procedure (a procedure's input type is in the module of its path: `api::devices::disable::Input` is `devices.disable`'s); bind this procedure with a struct declared for it"
)]
pub trait BindsProcedure<I, B> {}

impl<I, B> BindsProcedure<I, B> for I {}

/// The app's own full input type of a procedure, implemented by
/// `#[agent_procedure(..., input)]` after checking it against the manifest
/// schema (every required property present, no forbidden property,
/// compatible field types) and checking that it is serde's `Serialize` and
/// `Deserialize` (docs/codegen.md, "`#[agent_procedure]`").
///
/// The serde traits are checked by the attribute, not required here as
/// supertraits: a supertrait's failure is reported by rustc on the impl
/// with serde's own hint (`#[derive(serde::Deserialize)]`, a crate the
/// application may not depend on), before the attribute's message that
/// names the procedure and says where the derive goes.
pub trait ProcedureInput: Sized {
    /// The generated input type it stands for.
    type Generated;
    /// The generated output type of the procedure.
    type Output;
    /// Dotted router path of the procedure.
    const PROCEDURE: &'static str;

    /// The procedure's reference typed with this struct as its input:
    /// `MyInput::typed_ref(api::devices::rename())`. Only the reference of
    /// the procedure this type was declared for type-checks (its input type
    /// must be [`Self::Generated`]).
    fn typed_ref(
        generated: AgentProcedureRef<Self::Generated, Self::Output>,
    ) -> AgentProcedureRef<Self, Self::Output> {
        generated.retype()
    }
}
