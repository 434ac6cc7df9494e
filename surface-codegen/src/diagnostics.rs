//! Collected compile errors: every check records its error here and goes
//! on, so a user sees every mistake in one build (serde_derive's `Ctxt`).

use proc_macro2::{Span, TokenStream};

/// Errors collected so far, combined with [`syn::Error::combine`].
#[derive(Default)]
pub(crate) struct Errors(Option<syn::Error>);

impl Errors {
    /// Records `error` after the ones already collected.
    pub(crate) fn push(&mut self, error: syn::Error) {
        match &mut self.0 {
            Some(first) => first.combine(error),
            None => self.0 = Some(error),
        }
    }

    /// Records every error of `other` after the ones already collected.
    pub(crate) fn extend(&mut self, other: Errors) {
        if let Some(error) = other.0 {
            self.push(error);
        }
    }

    /// Records `message` at `span`.
    pub(crate) fn add(&mut self, span: Span, message: impl std::fmt::Display) {
        self.push(syn::Error::new(span, message));
    }

    /// Records the error of `result`, if any, and returns its value.
    pub(crate) fn take<T>(&mut self, result: syn::Result<T>) -> Option<T> {
        match result {
            Ok(value) => Some(value),
            Err(error) => {
                self.push(error);
                None
            }
        }
    }

    /// Whether nothing was recorded.
    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_none()
    }

    /// `Err` with every recorded error, `Ok` when there is none.
    pub(crate) fn finish(self) -> syn::Result<()> {
        match self.0 {
            Some(error) => Err(error),
            None => Ok(()),
        }
    }

    /// Every recorded error as `compile_error!` invocations (empty when
    /// there is none).
    pub(crate) fn to_compile_error(&self) -> TokenStream {
        self.0
            .as_ref()
            .map(syn::Error::to_compile_error)
            .unwrap_or_default()
    }
}
