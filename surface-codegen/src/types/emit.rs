//! [`ItemDef`] → tokens.

use proc_macro2::{Literal, TokenStream};
use quote::quote;

use super::model::{ConstLit, FieldDef, FieldMode, ItemDef};
use super::names::ident;
use crate::doc::{doc_attrs, DocText};

/// Paths generated code uses, derived from the facade crate path.
pub(crate) struct Paths {
    pub(crate) krate: TokenStream,
    /// `"::agent_surface::__private::serde"` for `#[serde(crate = …)]`.
    serde_crate: String,
    /// `"::agent_surface::__private::serde_helpers"`.
    helpers: String,
}

impl Paths {
    pub(crate) fn new(krate: &TokenStream) -> Paths {
        let text: String = krate
            .to_string()
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect();
        Paths {
            krate: krate.clone(),
            serde_crate: format!("{text}::__private::serde"),
            helpers: format!("{text}::__private::serde_helpers"),
        }
    }
}

fn serde_derives(p: &Paths) -> TokenStream {
    let k = &p.krate;
    quote!(#k::__private::serde::Serialize, #k::__private::serde::Deserialize)
}

fn field_tokens(field: &FieldDef, p: &Paths) -> TokenStream {
    let doc = doc_attrs(&field.doc);
    let name = ident(&field.ident);
    let ty = field.full_ty().tokens(&p.krate);
    let unraw = field.ident.trim_start_matches("r#");
    let rename = (unraw != field.json_name).then(|| {
        let json = &field.json_name;
        quote!(#[serde(rename = #json)])
    });
    let mode = match field.mode {
        FieldMode::Required => None,
        FieldMode::RequiredNullable => {
            let with = format!("{}::required_nullable", p.helpers);
            Some(quote!(#[serde(deserialize_with = #with)]))
        }
        FieldMode::Optional => {
            let with = format!("{}::optional", p.helpers);
            Some(
                quote!(#[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = #with)]),
            )
        }
    };
    quote! {
        #doc
        #rename
        #mode
        pub #name: #ty,
    }
}

fn const_value(value: ConstLit, p: &Paths) -> TokenStream {
    let k = &p.krate;
    let path = quote!(#k::__private::serde_helpers::ConstValue);
    match value {
        ConstLit::Bool(b) => quote!(#path::Bool(#b)),
        ConstLit::I64(n) => {
            let lit = Literal::i64_unsuffixed(n);
            quote!(#path::I64(#lit))
        }
        ConstLit::U64(n) => {
            let lit = Literal::u64_unsuffixed(n);
            quote!(#path::U64(#lit))
        }
        ConstLit::F64(x) => {
            let lit = Literal::f64_unsuffixed(x);
            quote!(#path::F64(#lit))
        }
    }
}

/// Tokens of one item.
pub(crate) fn item_tokens(item: &ItemDef, p: &Paths) -> TokenStream {
    let serde_crate = &p.serde_crate;
    let k = &p.krate;
    let sd = serde_derives(p);
    match item {
        ItemDef::Struct {
            name,
            doc,
            fields,
            deny_unknown_fields,
            extras,
        } => {
            let doc = doc_attrs(doc);
            let name = ident(name);
            let deny = deny_unknown_fields.then(|| quote!(#[serde(deny_unknown_fields)]));
            let fields = fields.iter().map(|f| field_tokens(f, p));
            let extras = extras.as_ref().map(|(field, ty)| {
                let field = ident(field);
                let ty = super::model::Ty::map(ty.clone()).tokens(k);
                quote! {
                    /// Properties not listed in `properties` (`additionalProperties`).
                    #[serde(flatten)]
                    pub #field: #ty,
                }
            });
            quote! {
                #doc
                #[derive(Debug, Clone, PartialEq, #sd)]
                #[serde(crate = #serde_crate)]
                #deny
                pub struct #name {
                    #(#fields)*
                    #extras
                }
            }
        }
        ItemDef::Newtype { name, doc, ty } => {
            let doc = doc_attrs(doc);
            let name = ident(name);
            let ty = ty.tokens(k);
            quote! {
                #doc
                #[derive(Debug, Clone, PartialEq, #sd)]
                #[serde(crate = #serde_crate, transparent)]
                pub struct #name(pub #ty);
            }
        }
        ItemDef::Alias { name, doc, ty } => {
            let doc = doc_attrs(doc);
            let name = ident(name);
            let ty = ty.tokens(k);
            quote! {
                #doc
                pub type #name = #ty;
            }
        }
        ItemDef::StringEnum {
            name,
            doc,
            variants,
        } => {
            let doc = doc_attrs(doc);
            let name = ident(name);
            let variants = variants.iter().map(|(variant, json)| {
                let variant_ident = ident(variant);
                let rename = (variant != json).then(|| quote!(#[serde(rename = #json)]));
                let vdoc = doc_attrs(&[DocText::new().code(format!("{json:?}"))]);
                quote! {
                    #vdoc
                    #rename
                    #variant_ident,
                }
            });
            quote! {
                #doc
                #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, #sd)]
                #[serde(crate = #serde_crate)]
                pub enum #name {
                    #(#variants)*
                }
            }
        }
        ItemDef::Untagged {
            name,
            doc,
            variants,
        } => {
            let doc = doc_attrs(doc);
            let name = ident(name);
            let variants = variants.iter().map(|(variant, ty)| {
                let variant = ident(variant);
                let ty = ty.tokens(k);
                quote!(#variant(#ty),)
            });
            quote! {
                #doc
                #[derive(Debug, Clone, PartialEq, #sd)]
                #[serde(crate = #serde_crate, untagged)]
                pub enum #name {
                    #(#variants)*
                }
            }
        }
        ItemDef::Tagged {
            name,
            doc,
            tag,
            variants,
        } => {
            let doc = doc_attrs(doc);
            let name = ident(name);
            let variants = variants.iter().map(|(variant, value, ty)| {
                let variant_ident = ident(variant);
                let rename = (variant != value).then(|| quote!(#[serde(rename = #value)]));
                let ty = ty.tokens(k);
                let vdoc = doc_attrs(&[DocText::new().code(format!("{tag}: {value:?}"))]);
                quote! {
                    #vdoc
                    #rename
                    #variant_ident(#ty),
                }
            });
            quote! {
                #doc
                #[derive(Debug, Clone, PartialEq, #sd)]
                #[serde(crate = #serde_crate, tag = #tag)]
                pub enum #name {
                    #(#variants)*
                }
            }
        }
        ItemDef::Const { name, doc, value } => {
            let doc = doc_attrs(doc);
            let name = ident(name);
            let value = const_value(*value, p);
            let serde = quote!(#k::__private::serde);
            let helpers = quote!(#k::__private::serde_helpers);
            quote! {
                #doc
                #[derive(Debug, Clone, Copy, PartialEq, Default)]
                pub struct #name;
                impl #serde::Serialize for #name {
                    fn serialize<S: #serde::Serializer>(&self, serializer: S) -> ::core::result::Result<S::Ok, S::Error> {
                        #helpers::serialize_const(&#value, serializer)
                    }
                }
                impl<'de> #serde::Deserialize<'de> for #name {
                    fn deserialize<D: #serde::Deserializer<'de>>(deserializer: D) -> ::core::result::Result<Self, D::Error> {
                        #helpers::deserialize_const(deserializer, &#value).map(|()| #name)
                    }
                }
            }
        }
    }
}
