//! The intermediate model between a schema and tokens: a Rust type
//! expression ([`Ty`]) and the items a procedure module defines
//! ([`ItemDef`]).

use proc_macro2::TokenStream;
use quote::quote;

use super::names::ident;
use crate::doc::DocText;

/// A Rust type expression.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Ty {
    /// `serde_json::Value`: any JSON, or the fallback.
    Value,
    /// `()`: JSON `null`.
    Unit,
    Bool,
    I64,
    /// Integers bounded below by 0 and above `i64::MAX`.
    U64,
    /// `serde_json::Number`: `type: number`, written back in the form it
    /// was read (`42` stays `42`, `1.5` stays `1.5`).
    Number,
    String,
    /// A `format`ted string read as a typed value ([`super::TypedFormats`]).
    Typed(TypedFormat),
    Vec(Box<Ty>),
    /// `BTreeMap<String, T>`.
    Map(Box<Ty>),
    Tuple(Vec<Ty>),
    /// `serde_helpers::TupleWithRest<(prefix…), rest>`.
    TupleWithRest(Vec<Ty>, Box<Ty>),
    Option(Box<Ty>),
    Boxed(Box<Ty>),
    /// A type item of the module.
    Named(String),
}

impl Ty {
    /// `Vec<T>`; the vector already gives indirection, so a `Box` around a
    /// recursive reference is dropped.
    pub(crate) fn vec(item: Ty) -> Ty {
        Ty::Vec(Box::new(item.unboxed()))
    }

    /// `BTreeMap<String, T>`, dropping a `Box` as [`Ty::vec`] does.
    pub(crate) fn map(value: Ty) -> Ty {
        Ty::Map(Box::new(value.unboxed()))
    }

    /// Whether this is an integer, or integers reached only through
    /// `Option`, `Vec`, `Box` and maps (aliases followed by `resolve`): the
    /// types `serde_helpers::Integers` reads with `2.0` as `2`.
    pub(crate) fn is_integers(&self, resolve: &dyn Fn(&Ty) -> Ty) -> bool {
        let mut ty = resolve(self);
        for _ in 0..64 {
            ty = match ty {
                Ty::I64 | Ty::U64 => return true,
                Ty::Option(inner) | Ty::Vec(inner) | Ty::Map(inner) | Ty::Boxed(inner) => {
                    resolve(&inner)
                }
                _ => return false,
            };
        }
        false
    }

    pub(crate) fn unboxed(self) -> Ty {
        match self {
            Ty::Boxed(inner) => *inner,
            other => other,
        }
    }

    /// Tokens naming this type inside the procedure module.
    pub(crate) fn tokens(&self, krate: &TokenStream) -> TokenStream {
        match self {
            Ty::Value => quote!(#krate::__private::serde_json::Value),
            Ty::Unit => quote!(()),
            Ty::Bool => quote!(bool),
            Ty::I64 => quote!(i64),
            Ty::U64 => quote!(u64),
            Ty::Number => quote!(#krate::__private::serde_json::Number),
            Ty::String => quote!(String),
            Ty::Typed(TypedFormat::Uuid) => quote!(#krate::__private::uuid::Uuid),
            Ty::Typed(TypedFormat::DateTime) => quote!(
                #krate::__private::chrono::DateTime<#krate::__private::chrono::FixedOffset>
            ),
            Ty::Typed(TypedFormat::Date) => quote!(#krate::__private::chrono::NaiveDate),
            Ty::Typed(TypedFormat::Url) => quote!(#krate::__private::url::Url),
            Ty::Vec(t) => {
                let t = t.tokens(krate);
                quote!(Vec<#t>)
            }
            Ty::Map(t) => {
                let t = t.tokens(krate);
                quote!(::std::collections::BTreeMap<String, #t>)
            }
            Ty::Tuple(items) => {
                let items: Vec<_> = items.iter().map(|t| t.tokens(krate)).collect();
                if items.len() == 1 {
                    let t = &items[0];
                    quote!((#t,))
                } else {
                    quote!((#(#items),*))
                }
            }
            Ty::TupleWithRest(prefix, rest) => {
                let prefix = Ty::Tuple(prefix.clone()).tokens(krate);
                let rest = rest.tokens(krate);
                quote!(#krate::__private::serde_helpers::TupleWithRest<#prefix, #rest>)
            }
            Ty::Option(t) => {
                let t = t.tokens(krate);
                quote!(Option<#t>)
            }
            Ty::Boxed(t) => {
                let t = t.tokens(krate);
                quote!(Box<#t>)
            }
            Ty::Named(name) => {
                let name = ident(name);
                quote!(#name)
            }
        }
    }
}

/// A typed string format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TypedFormat {
    /// `uuid::Uuid`.
    Uuid,
    /// `chrono::DateTime<chrono::FixedOffset>`.
    DateTime,
    /// `chrono::NaiveDate`.
    Date,
    /// `url::Url`.
    Url,
}

impl TypedFormat {
    /// The Rust type as the docs name it.
    pub(crate) fn rust_name(self) -> &'static str {
        match self {
            TypedFormat::Uuid => "uuid::Uuid",
            TypedFormat::DateTime => "chrono::DateTime<chrono::FixedOffset>",
            TypedFormat::Date => "chrono::NaiveDate",
            TypedFormat::Url => "url::Url",
        }
    }
}

/// How an optional or nullable field is (de)serialized.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FieldMode {
    /// Required; the type carries nullability if any.
    Required,
    /// Required and the type is an `Option`: must be present, `null` ⇒ None.
    RequiredNullable,
    /// Not required: `Option<value type>`, absent ⇒ None.
    Optional,
}

/// One struct field.
#[derive(Clone, Debug)]
pub(crate) struct FieldDef {
    pub(crate) json_name: String,
    pub(crate) ident: String,
    /// Type of a present value.
    pub(crate) value_ty: Ty,
    pub(crate) mode: FieldMode,
    pub(crate) doc: Vec<DocText>,
    /// The value type is [`Ty::is_integers`] (read with
    /// `serde_helpers::integer`).
    pub(crate) integers: bool,
}

impl FieldDef {
    /// The field's declared type.
    pub(crate) fn full_ty(&self) -> Ty {
        match self.mode {
            FieldMode::Optional => Ty::Option(Box::new(self.value_ty.clone())),
            _ => self.value_ty.clone(),
        }
    }
}

/// The value of a number/boolean `const`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum ConstLit {
    Bool(bool),
    I64(i64),
    U64(u64),
    F64(f64),
}

/// One item of the procedure module.
#[derive(Clone, Debug)]
pub(crate) enum ItemDef {
    Struct {
        name: String,
        doc: Vec<DocText>,
        fields: Vec<FieldDef>,
        deny_unknown_fields: bool,
        /// `(field ident, value type)` of a flattened map of extra
        /// properties.
        extras: Option<(String, Ty)>,
    },
    /// `#[serde(transparent)] struct Name(pub T)`, for recursive aliases.
    Newtype {
        name: String,
        doc: Vec<DocText>,
        ty: Ty,
        /// `ty` is [`Ty::is_integers`].
        integers: bool,
    },
    Alias {
        name: String,
        doc: Vec<DocText>,
        ty: Ty,
    },
    /// `(variant ident, JSON string, doc)`.
    StringEnum {
        name: String,
        doc: Vec<DocText>,
        variants: Vec<(String, String)>,
    },
    /// `(variant ident, payload, payload is [`Ty::is_integers`])`.
    Untagged {
        name: String,
        doc: Vec<DocText>,
        variants: Vec<(String, Ty, bool)>,
    },
    /// An open string enum: `(variant ident, JSON string)` for each known
    /// value, and `other`, the variant holding any other string.
    OpenEnum {
        name: String,
        doc: Vec<DocText>,
        variants: Vec<(String, String)>,
        other: String,
    },
    /// `(variant ident, tag value, payload)`.
    Tagged {
        name: String,
        doc: Vec<DocText>,
        tag: String,
        variants: Vec<(String, String, Ty)>,
    },
    Const {
        name: String,
        doc: Vec<DocText>,
        value: ConstLit,
    },
}
