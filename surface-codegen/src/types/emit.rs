//! [`ItemDef`] → tokens.

use proc_macro2::{Ident, Literal, TokenStream};
use quote::quote;

use super::model::{ConstLit, FieldDef, FieldMode, ItemDef, Ty};
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
        FieldMode::Required | FieldMode::RequiredNullable if field.integers => {
            let with = format!("{}::integer", p.helpers);
            Some(quote!(#[serde(deserialize_with = #with)]))
        }
        FieldMode::Optional if field.integers => {
            let with = format!("{}::optional_integer", p.helpers);
            Some(
                quote!(#[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = #with)]),
            )
        }
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
    match item {
        ItemDef::Struct {
            name,
            doc,
            fields,
            deny_unknown_fields,
            extras,
        } => struct_tokens(
            p,
            (name, doc),
            fields,
            *deny_unknown_fields,
            extras.as_ref(),
        ),
        ItemDef::Newtype {
            name,
            doc,
            ty,
            integers,
        } => {
            let (doc, name) = head(name, doc);
            let ty = ty.tokens(&p.krate);
            let (sd, serde_crate) = (serde_derives(p), &p.serde_crate);
            let with = integers_attr(*integers, p);
            quote! {
                #doc
                #[derive(Debug, Clone, PartialEq, #sd)]
                #[serde(crate = #serde_crate, transparent)]
                pub struct #name(#with pub #ty);
            }
        }
        ItemDef::Alias { name, doc, ty } => {
            let (doc, name) = head(name, doc);
            let ty = ty.tokens(&p.krate);
            quote! {
                #doc
                pub type #name = #ty;
            }
        }
        ItemDef::StringEnum {
            name,
            doc,
            variants,
        } => string_enum_tokens(p, (name, doc), variants),
        ItemDef::Untagged {
            name,
            doc,
            variants,
        } => {
            let variants = variants.iter().map(|(variant, ty, integers)| {
                let variant = ident(variant);
                let ty = ty.tokens(&p.krate);
                let with = integers_attr(*integers, p);
                quote!(#variant(#with #ty),)
            });
            data_enum_tokens(p, (name, doc), quote!(untagged), variants)
        }
        ItemDef::Tagged {
            name,
            doc,
            tag,
            variants,
        } => {
            let variants = variants.iter().map(|(variant, value, ty)| {
                let head = variant_head(variant, value, format!("{tag}: {value:?}"));
                let ty = ty.tokens(&p.krate);
                quote!(#head(#ty),)
            });
            data_enum_tokens(p, (name, doc), quote!(tag = #tag), variants)
        }
        ItemDef::Const { name, doc, value } => const_tokens(p, (name, doc), *value),
        ItemDef::OpenEnum {
            name,
            doc,
            variants,
            other,
        } => open_enum_tokens(p, (name, doc), variants, other),
    }
}

/// `#[serde(deserialize_with = "…::integer")]` when `integers`.
fn integers_attr(integers: bool, p: &Paths) -> Option<TokenStream> {
    integers.then(|| {
        let with = format!("{}::integer", p.helpers);
        quote!(#[serde(deserialize_with = #with)])
    })
}

/// An item's doc attributes and name.
fn head(name: &str, doc: &[DocText]) -> (TokenStream, Ident) {
    (doc_attrs(doc), ident(name))
}

fn struct_tokens(
    p: &Paths,
    (name, doc): (&str, &[DocText]),
    fields: &[FieldDef],
    deny_unknown_fields: bool,
    extras: Option<&(String, Ty)>,
) -> TokenStream {
    let (doc, name) = head(name, doc);
    let (sd, serde_crate) = (serde_derives(p), &p.serde_crate);
    let deny = deny_unknown_fields.then(|| quote!(#[serde(deny_unknown_fields)]));
    let fields = fields.iter().map(|f| field_tokens(f, p));
    let extras = extras.map(|(field, ty)| {
        let field = ident(field);
        let ty = Ty::map(ty.clone()).tokens(&p.krate);
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

/// A variant's doc line (`doc`, as code), its `#[serde(rename)]` when the
/// wire value differs from the name, and its name.
fn variant_head(variant: &str, wire: &str, doc: String) -> TokenStream {
    let variant_ident = ident(variant);
    let rename = (variant != wire).then(|| quote!(#[serde(rename = #wire)]));
    let vdoc = doc_attrs(&[DocText::new().code(doc)]);
    quote! {
        #vdoc
        #rename
        #variant_ident
    }
}

fn string_enum_tokens(
    p: &Paths,
    (name, doc): (&str, &[DocText]),
    variants: &[(String, String)],
) -> TokenStream {
    let (doc, name) = head(name, doc);
    let (sd, serde_crate) = (serde_derives(p), &p.serde_crate);
    let variants = variants.iter().map(|(variant, json)| {
        let head = variant_head(variant, json, format!("{json:?}"));
        quote!(#head,)
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

/// An enum whose variants carry data, with the serde representation
/// `repr` (`untagged`, `tag = "…"`).
fn data_enum_tokens(
    p: &Paths,
    (name, doc): (&str, &[DocText]),
    repr: TokenStream,
    variants: impl Iterator<Item = TokenStream>,
) -> TokenStream {
    let (doc, name) = head(name, doc);
    let (sd, serde_crate) = (serde_derives(p), &p.serde_crate);
    quote! {
        #doc
        #[derive(Debug, Clone, PartialEq, #sd)]
        #[serde(crate = #serde_crate, #repr)]
        pub enum #name {
            #(#variants)*
        }
    }
}

/// A unit struct standing for one JSON number or boolean.
fn const_tokens(p: &Paths, (name, doc): (&str, &[DocText]), value: ConstLit) -> TokenStream {
    let (doc, name) = head(name, doc);
    let k = &p.krate;
    let value = const_value(value, p);
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

/// An open string enum: unit variants for the known values and
/// `Other(String)` for the rest, written and read as the bare string.
fn open_enum_tokens(
    p: &Paths,
    (name, doc): (&str, &[DocText]),
    variants: &[(String, String)],
    other: &str,
) -> TokenStream {
    let (doc, name) = head(name, doc);
    let k = &p.krate;
    let serde = quote!(#k::__private::serde);
    let other = ident(other);
    let idents: Vec<Ident> = variants.iter().map(|(v, _)| ident(v)).collect();
    let values: Vec<&String> = variants.iter().map(|(_, json)| json).collect();
    let docs = values
        .iter()
        .map(|json| doc_attrs(&[DocText::new().code(format!("{json:?}"))]));
    quote! {
        #doc
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum #name {
            #(#docs #idents,)*
            /// Any other string.
            #other(String),
        }
        impl #name {
            /// The JSON string this value is written as.
            pub fn as_str(&self) -> &str {
                match self {
                    #(Self::#idents => #values,)*
                    Self::#other(other) => other,
                }
            }
        }
        impl #serde::Serialize for #name {
            fn serialize<S: #serde::Serializer>(&self, serializer: S) -> ::core::result::Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }
        impl<'de> #serde::Deserialize<'de> for #name {
            fn deserialize<D: #serde::Deserializer<'de>>(deserializer: D) -> ::core::result::Result<Self, D::Error> {
                let text = <String as #serde::Deserialize<'de>>::deserialize(deserializer)?;
                let known = match text.as_str() {
                    #(#values => ::core::option::Option::Some(Self::#idents),)*
                    _ => ::core::option::Option::None,
                };
                ::core::result::Result::Ok(match known {
                    ::core::option::Option::Some(known) => known,
                    ::core::option::Option::None => Self::#other(text),
                })
            }
        }
    }
}
