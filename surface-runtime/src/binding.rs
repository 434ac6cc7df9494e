//! What `#[agent_procedure]` emits for the app's own types (SPEC §5,
//! seed 000 "Binding semantics").
//!
//! * [`BoundInput`] — the struct is the UI-bound subset of a procedure's
//!   input (the seed's `TBound`): its fields are bound from UI state at
//!   execution time, locked unless declared `overridable(...)`.
//! * [`ProcedureInput`] — the struct is the procedure's full input type.

use serde_json::{Map, Value};

use crate::procedure::AgentProcedureRef;

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

/// The app's own full input type of a procedure, implemented by
/// `#[agent_procedure(...)]` after checking it against the manifest schema
/// (every required property present, no forbidden property, compatible
/// field types).
pub trait ProcedureInput: serde::Serialize + serde::de::DeserializeOwned {
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
