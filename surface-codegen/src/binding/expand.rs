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
    let (serde, imp) = match input.request.role {
        Role::Bound => (TokenStream::new(), bound_impl(input, checked)),
        Role::Input => (serde_check(input), input_impl(input)),
    };
    quote! {
        #checks

        #serde

        #imp
    }
}

/// A full input type must be serde's: without this check a missing derive
/// is reported by rustc on the `ProcedureInput` impl as an unsatisfied
/// `serde::Deserialize`, suggesting `#[derive(serde::Deserialize)]` — a
/// crate the user may not have. The check names the procedure and says
/// where the derive goes (below the attribute, so that it is pointed at the
/// facade's serde).
fn serde_check(input: &ImplInput) -> TokenStream {
    let private = input.private_path();
    let name = &input.request.item.ident;
    let span = name.span();
    let message = format!(
        "`{}` is the full input of `{}`, so it must implement serde's `Serialize` and `Deserialize`",
        name.unraw(),
        input.facts.path
    );
    let label = "no `Serialize`/`Deserialize` for this type";
    let note = "add `#[derive(Serialize, Deserialize)]` (`use agent_surface::serde::{Deserialize, Serialize};`) \
                below `#[agent_procedure]`: derives written above it keep serde's default path, and rustc \
                then reports `can't find crate for serde`"
        .replace('{', "{{")
        .replace('}', "}}");
    quote_spanned! {span=>
        const _: () = {
            #[diagnostic::on_unimplemented(message = #message, label = #label, note = #note)]
            trait SerdeInput {}
            impl<T: #private::serde::Serialize + #private::serde::de::DeserializeOwned> SerdeInput for T {}
            #[allow(dead_code)]
            fn check<T: SerdeInput>() {}
            #[allow(dead_code)]
            fn input_is_serde() {
                check::<#name>();
            }
        };
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
