//! The expansion: the type checks on the user's tokens and the
//! `BoundInput` or `ProcedureInput` impl, for the fields the checks
//! accepted.
//!
//! Field types are checked by rustc on the user's own tokens, with a
//! message naming the procedure, the property and the manifest's type
//! ([`super::type_check`]).

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::ext::IdentExt;

use super::type_check::type_checks;
use super::valid::{Checked, Matched};
use crate::facts::{ImplInput, Role};

/// The checks and the impl for `checked` (empty when nothing matched:
/// the impl alone then keeps uses of the trait from failing too).
pub(crate) fn expand(input: &ImplInput, checked: &Checked<'_>) -> TokenStream {
    let checks = type_checks(input, &module_path(input), &checked.matched);
    let imp = match input.request.role {
        Role::Bound => bound_impl(input, checked),
        Role::Input => input_impl(input),
    };
    quote! {
        #checks

        #imp
    }
}

/// `module` path of the procedure as the user's crate names it:
/// `api::devices::disable`.
fn module_path(input: &ImplInput) -> TokenStream {
    let api = &input.api;
    let module = &input.facts.module;
    quote!(#api::#(#module)::*)
}

fn bound_impl(input: &ImplInput, checked: &Checked<'_>) -> TokenStream {
    let private = input.private_path();
    let module = module_path(input);
    let name = &input.request.item.ident;
    let path = &input.facts.path;
    let bound = checked.matched.iter().map(|m| {
        let json = &m.prop.json;
        let locked = !checked.unlocked.iter().any(|u| m.ident.unraw() == u);
        quote!(#private::BoundField { name: #json, locked: #locked })
    });
    let inserts = checked.matched.iter().map(|m| insert(&private, m));
    let header = quote_spanned!(name.span()=> impl #private::BoundInput for #name);
    quote! {
        #header {
            type Input = #module::Input;
            const PROCEDURE: &'static str = #path;

            fn bound_fields() -> &'static [#private::BoundField] {
                const FIELDS: &[#private::BoundField] = &[#(#bound),*];
                FIELDS
            }

            fn to_bound_json(
                &self,
            ) -> ::core::result::Result<
                #private::serde_json::Map<
                    ::std::string::String,
                    #private::serde_json::Value,
                >,
                #private::serde_json::Error,
            > {
                #[allow(unused_mut)]
                let mut map = #private::serde_json::Map::new();
                #(#inserts)*
                ::core::result::Result::Ok(map)
            }
        }
    }
}

/// The statement of `to_bound_json` that writes one bound field; an
/// `Option` around an optional property writes nothing for `None`.
fn insert(private: &TokenStream, m: &Matched<'_>) -> TokenStream {
    let json = &m.prop.json;
    let ident = m.ident;
    let (value, optional) = if m.wraps_option {
        (quote!(value), true)
    } else {
        (quote!(&self.#ident), false)
    };
    let statement = quote! {
        map.insert(
            ::std::string::String::from(#json),
            #private::serde_json::to_value(#value)?,
        );
    };
    if optional {
        quote! {
            if let ::core::option::Option::Some(value) = &self.#ident {
                #statement
            }
        }
    } else {
        statement
    }
}

fn input_impl(input: &ImplInput) -> TokenStream {
    let private = input.private_path();
    let module = module_path(input);
    let name = &input.request.item.ident;
    let path = &input.facts.path;
    let header = quote_spanned!(name.span()=> impl #private::ProcedureInput for #name);
    quote! {
        #header {
            type Generated = #module::Input;
            type Output = #module::Output;
            const PROCEDURE: &'static str = #path;
        }
    }
}
