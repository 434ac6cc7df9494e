//! What is emitted when a binding cannot be checked in full, so that one
//! mistake gives one error instead of a cascade at every use of the struct
//! (thiserror's fallback habit).
//!
//! * The attribute's arguments are unusable (no `api` or no path literal)
//!   or the item is not a struct: the item alone, unchanged, with the
//!   errors.
//! * The fields cannot be mapped (a tuple struct, an enum, an input that is
//!   not an object with `properties`): the impl with no bound field, so
//!   `bound_fields()`, `to_bound_json()` and `typed_ref` still resolve.
//! * A generic struct: no impl (it would need bounds the user did not
//!   write); the error says so.
//!
//! When only some fields fail their checks, the regular expansion runs for
//! the fields that matched.

use proc_macro2::TokenStream;
use quote::{quote, ToTokens};

use super::expand::expand;
use super::valid::Checked;
use crate::diagnostics::Errors;
use crate::facts::ImplInput;

/// The item re-emitted as written, followed by the errors.
pub(crate) fn attribute(item: &dyn ToTokens, errors: &Errors) -> TokenStream {
    let errors = errors.to_compile_error();
    quote!(#item #errors)
}

/// The impl with no bound field.
pub(crate) fn unmappable(input: &ImplInput) -> TokenStream {
    expand(input, &Checked::none())
}

/// Nothing: a generic struct cannot carry the impl.
pub(crate) fn generic() -> TokenStream {
    TokenStream::new()
}
