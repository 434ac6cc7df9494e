//! The `manifest!`, `#[agent_procedure]` and `view_inputs!` macros. Thin
//! entry points: the work lives in `surface-codegen` (`manifest_macro`,
//! `binding` and `view_inputs`); the
//! documentation users read is on the re-exports in the `agent-surface`
//! facade crate.
#![forbid(unsafe_code)]

use proc_macro::TokenStream;

/// Reads the agent manifest at compile time and emits, in the
/// invoking module, typed procedure refs mirroring the router, the input and
/// output types, and the compiler-generated authority.
///
/// ```ignore
/// mod api {
///     agent_surface::manifest!("agent.manifest.json");
/// }
/// let disable = api::devices::disable(); // AgentProcedureRef<api::devices::disable::Input, _>
/// let authority = api::authority();
/// assert_eq!(api::devices::disable::Field::DeviceIds.as_str(), "deviceIds");
/// ```
///
/// | argument | type | meaning |
/// |---|---|---|
/// | first | string literal | manifest path relative to the including crate's root (`CARGO_MANIFEST_DIR`); absolute paths are rejected |
/// | `crate = path` | path, optional | how generated code names the facade; default `::agent_surface` |
///
/// Emits `MANIFEST_JSON` (`include_str!` of the canonical path, so editing
/// the JSON rebuilds the crate), `MANIFEST_DIGEST`, `fn authority()`, one
/// module per path segment with `Input`, `Output`, `Field`, `PATH`, and a
/// function of the same name returning the `AgentProcedureRef`.
///
/// Segment → identifier mapping: `-` → `_`, snake_case (`listAll` →
/// `list_all`), keywords as raw identifiers (`type` → `r#type`), `self`,
/// `super`, `crate`, `Self` with a trailing `_`; prototype names
/// (`__proto__`, `prototype`, `constructor`) and segments that cannot become
/// identifiers are compile errors, as are duplicates, prefix conflicts, two
/// paths mapping to one Rust path, and a root-level `authority`.
///
/// Full guide: `docs/codegen.md`.
#[proc_macro]
pub fn manifest(input: TokenStream) -> TokenStream {
    surface_codegen::manifest_macro::expand_manifest(input.into()).into()
}

/// Binds the app's own struct to a manifest procedure, checked against
/// the manifest at compile time (`docs/codegen.md`, "`#[agent_procedure]`").
///
/// ```ignore
/// #[agent_procedure(api, "devices.disable", overridable(reason))]
/// struct DisableSelection { device_ids: Vec<String>, reason: Option<String> }
///
/// #[agent_procedure(api, "devices.rename", input)]
/// #[derive(serde::Serialize, serde::Deserialize)]
/// #[serde(rename_all = "camelCase")]
/// struct RenameDevice { device_id: String, name: String }
/// ```
///
/// | argument | type | meaning |
/// |---|---|---|
/// | first | path | the module where `manifest!` was invoked |
/// | second | string literal | the procedure's dotted path; unknown paths suggest the nearest |
/// | `input` | flag | the struct is the full input (`ProcedureInput`); default: the UI-bound subset (`BoundInput`) |
/// | `overridable(f, …)` | field idents | bound fields the agent may override; the rest are locked |
///
/// Field attribute (bound subset): `#[agent_procedure(rename = "deviceIds")]`
/// names the property explicitly; otherwise a field matches the property
/// whose generated ident (`device_ids`) or JSON name equals its ident. A full
/// input matches by serde name (`rename`, `rename_all`). Field types are
/// checked by rustc on the user's tokens; an optional property may be bound
/// as `T` or `Option<T>`.
///
/// Full guide: `docs/codegen.md`.
#[proc_macro_attribute]
pub fn agent_procedure(attr: TokenStream, item: TokenStream) -> TokenStream {
    surface_codegen::binding::expand_attribute(attr.into(), item.into()).into()
}

/// (The entry point in `surface-macros`; the expansion is
/// `surface_codegen::view_inputs`.)
#[proc_macro]
pub fn view_inputs(input: TokenStream) -> TokenStream {
    surface_codegen::view_inputs::expand_view_inputs(input.into()).into()
}

/// Internal: checks a struct against one procedure's facts, forwarded by the
/// lookup macro `manifest!` emits. Not public API.
#[doc(hidden)]
#[proc_macro]
pub fn __agent_procedure_impl(input: TokenStream) -> TokenStream {
    surface_codegen::binding::expand_procedure_impl(input.into()).into()
}

/// Internal: the "unknown procedure path" error of the lookup macro. Not
/// public API.
#[doc(hidden)]
#[proc_macro]
pub fn __agent_procedure_unknown(input: TokenStream) -> TokenStream {
    surface_codegen::binding::expand_unknown_procedure(input.into()).into()
}
