//! The items of a procedure module that name the input's top-level
//! properties: the `Field` enum (`Field::DeviceIds.as_str()` is
//! `"deviceIds"`) and the hidden `__fields` type aliases the binding's
//! type checks name.

use proc_macro2::{Ident, Span, TokenStream};
use quote::quote;

use crate::doc::{doc_attrs, DocText};
use crate::tokens::ident_from_source;
use crate::types::names::{snake_to_pascal, NameSet};
use crate::types::{FieldInfo, InputObject};

/// The `Field` enum of a procedure module: one variant per top-level input
/// property, `as_str()` giving the JSON name.
pub(crate) fn emit_field_enum(object: Option<&InputObject>, path: &str) -> TokenStream {
    let fields: &[FieldInfo] = object.map(|o| o.fields.as_slice()).unwrap_or(&[]);
    let mut used = NameSet::default();
    let variants: Vec<Ident> = fields
        .iter()
        .map(|f| {
            Ident::new(
                &used.unique(&variant_name(&f.ident), false),
                Span::call_site(),
            )
        })
        .collect();
    let docs = fields.iter().map(|f| {
        let mut d = DocText::new()
            .code(f.json_name.as_str())
            .ours(if f.required {
                " (required"
            } else {
                " (optional"
            })
            .ours(if f.nullable { ", nullable)" } else { ")" });
        if let Some(desc) = &f.description {
            d = d.ours(": ").append(DocText::description(desc));
        }
        doc_attrs(&[d])
    });
    let names = fields.iter().map(|f| f.json_name.as_str());
    let enum_doc = doc_attrs(&[DocText::new()
        .ours("The top-level properties of ")
        .code(path)
        .ours("'s input, for naming bound fields. `as_str()` gives the JSON property name.")]);
    let arms = variants
        .iter()
        .zip(names)
        .map(|(v, n)| quote!(Field::#v => #n));
    quote! {
        #enum_doc
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Field {
            #(#docs #variants,)*
        }

        impl Field {
            /// Every property, in the order of the generated `Input` fields
            /// (sorted by property name).
            pub const ALL: &'static [Field] = &[#(Field::#variants),*];

            /// The JSON property name (`"deviceIds"`).
            pub const fn as_str(self) -> &'static str {
                match self {
                    #(#arms,)*
                }
            }
        }

        impl ::core::fmt::Display for Field {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    }
}

fn variant_name(field_ident: &str) -> String {
    let raw = field_ident.strip_prefix("r#").unwrap_or(field_ident);
    let mut out = snake_to_pascal(raw);
    if out.is_empty() || out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, 'F');
    }
    if out == "Self" {
        out.push('_');
    }
    out
}

/// `__fields`: one type alias per property naming its present-value type,
/// so `#[agent_procedure]` can name the type from another module.
pub(crate) fn emit_field_aliases(object: Option<&InputObject>) -> TokenStream {
    let Some(object) = object else {
        return TokenStream::new();
    };
    // An alias is named after its property, so a property called `i64`
    // would shadow the primitive for every alias of this module (`pub type
    // i64 = i64;` is a cycle, and `pub type count = i64;` would name the
    // wrong type): primitives are written `::core::primitive::…` here.
    let aliases = object.fields.iter().map(|f| {
        let ident = ident_from_source(&f.ident, Span::call_site());
        let ty = qualify_primitives(f.value_ty.clone());
        quote!(pub type #ident = #ty;)
    });
    quote! {
        /// Present-value types of the input's properties, for the checks of
        /// `#[agent_procedure]`. Not public API.
        #[doc(hidden)]
        #[allow(non_camel_case_types, unused_imports)]
        pub mod __fields {
            use super::*;
            #(#aliases)*
        }
    }
}

/// The primitive types generated code names.
const PRIMITIVES: [&str; 4] = ["bool", "i64", "u64", "f64"];

/// `tokens` with each primitive type that is not a path segment (not after
/// `::`) written as `::core::primitive::…`.
fn qualify_primitives(tokens: TokenStream) -> TokenStream {
    use proc_macro2::TokenTree;
    let mut out = TokenStream::new();
    let mut after_colons = false;
    for tree in tokens {
        let next_after_colons = matches!(&tree, TokenTree::Punct(p) if p.as_char() == ':');
        match tree {
            TokenTree::Ident(ident) if !after_colons && PRIMITIVES.iter().any(|p| ident == p) => {
                out.extend(quote!(::core::primitive::#ident));
            }
            TokenTree::Group(group) => {
                let mut inner =
                    proc_macro2::Group::new(group.delimiter(), qualify_primitives(group.stream()));
                inner.set_span(group.span());
                out.extend(std::iter::once(TokenTree::Group(inner)));
            }
            other => out.extend(std::iter::once(other)),
        }
        after_colons = next_after_colons;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_aliases_name_primitives_by_their_full_path() {
        assert_eq!(
            qualify_primitives(quote!(Option<Vec<(i64, ::k::bool, bool)>>)).to_string(),
            quote!(Option<Vec<(::core::primitive::i64, ::k::bool, ::core::primitive::bool)>>)
                .to_string()
        );
    }

    #[test]
    fn field_variant_names() {
        assert_eq!(variant_name("device_ids"), "DeviceIds");
        assert_eq!(variant_name("r#type"), "Type");
        assert_eq!(variant_name("self_"), "Self_");
        assert_eq!(variant_name("_1a"), "F1a");
    }
}
