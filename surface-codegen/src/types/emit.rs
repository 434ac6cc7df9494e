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
    // Reading is the hand-written `Deserialize` of `struct_tokens`; only
    // what `Serialize` needs stays here.
    let skip = (field.mode == FieldMode::Optional)
        .then(|| quote!(#[serde(skip_serializing_if = "Option::is_none")]));
    quote! {
        #doc
        #rename
        #skip
        pub #name: #ty,
    }
}

/// The reader's pieces for field `index`: its slot (`name: Option<T>`),
/// its `put` arm (converting the value as soon as it is read) and its
/// `finish` initializer (what an absent property gives).
fn field_read(field: &FieldDef, index: usize, p: &Paths) -> [TokenStream; 3] {
    let name = ident(&field.ident);
    let full = field.full_ty().tokens(&p.krate);
    let optional = field.mode == FieldMode::Optional;
    let slot_ty = if optional {
        full
    } else {
        quote!(Option<#full>)
    };
    let convert = if field.integers {
        quote!(integer_value)
    } else {
        quote!(value)
    };
    let index = Literal::usize_unsuffixed(index);
    let finish = match field.mode {
        FieldMode::Optional => quote!(#name: _s.#name,),
        FieldMode::Required if !field.integers => quote!(#name: _f.required(#index, _s.#name)?,),
        _ => quote!(#name: _f.present(#index, _s.#name)?,),
    };
    [
        quote!(#name: #slot_ty,),
        quote!(#index => _s.#name = ::core::option::Option::Some(H::#convert(_v)?),),
        finish,
    ]
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

/// The `#[serde(flatten)]` field of the properties not listed in
/// `properties` and its read in `finish` (nothing without one).
fn extras_tokens(p: &Paths, extras: Option<&(String, Ty)>) -> (TokenStream, TokenStream) {
    let Some((field, ty)) = extras else {
        return (TokenStream::new(), TokenStream::new());
    };
    let field = ident(field);
    let ty = Ty::map(ty.clone()).tokens(&p.krate);
    (
        quote! {
            /// Properties not listed in `properties` (`additionalProperties`).
            #[serde(flatten)]
            pub #field: #ty,
        },
        quote!(#field: _f.extras()?,),
    )
}

/// The `UnknownProperties` variant of a struct: kept in its extras field,
/// refused (`additionalProperties: false`) or ignored.
fn unknown_mode(has_extras: bool, deny_unknown_fields: bool) -> TokenStream {
    if has_extras {
        quote!(Keep)
    } else if deny_unknown_fields {
        quote!(Deny)
    } else {
        quote!(Ignore)
    }
}

fn struct_tokens(
    p: &Paths,
    (name, doc): (&str, &[DocText]),
    fields: &[FieldDef],
    deny_unknown_fields: bool,
    extras: Option<&(String, Ty)>,
) -> TokenStream {
    let type_name = name;
    let (doc, name) = head(name, doc);
    let k = &p.krate;
    let serde = quote!(#k::__private::serde);
    let h = quote!(#k::__private::serde_helpers);
    let serde_crate = &p.serde_crate;
    let field_defs = fields.iter().map(|f| field_tokens(f, p));
    let reads: Vec<[TokenStream; 3]> = fields
        .iter()
        .enumerate()
        .map(|(n, f)| field_read(f, n, p))
        .collect();
    let slots = reads.iter().map(|r| &r[0]);
    let puts = reads.iter().map(|r| &r[1]);
    let finishes = reads.iter().map(|r| &r[2]);
    let slot_names: Vec<Ident> = fields.iter().map(|f| ident(&f.ident)).collect();
    let json_names = fields.iter().map(|f| f.json_name.as_str());
    let (extras_def, extras_read) = extras_tokens(p, extras);
    let unknown = unknown_mode(extras.is_some(), deny_unknown_fields);
    // `Deserialize` is written by hand: a slot per field, a `put`
    // converting each property as it is read, a `finish`, and one call of
    // the runtime's generic `deserialize_struct`, instead of serde's derived
    // visitors (most of a big manifest's compile time; see docs/codegen.md,
    // "Compile time at scale"). Same values, messages and positions as the
    // derive. `put` and `finish` are generic over the deserializer only so
    // that, like the derive's code, they are compiled where a struct is
    // deserialized, not in the crate that holds the manifest.
    quote! {
        #doc
        #[derive(Debug, Clone, PartialEq, #serde::Serialize)]
        #[serde(crate = #serde_crate)]
        pub struct #name {
            #(#field_defs)*
            #extras_def
        }
        impl<'de> #serde::Deserialize<'de> for #name {
            fn deserialize<D: #serde::Deserializer<'de>>(deserializer: D) -> ::core::result::Result<Self, D::Error> {
                use #h as H;
                static SHAPE: H::StructShape = H::StructShape {
                    name: #type_name,
                    fields: &[#(#json_names),*],
                    unknown: H::UnknownProperties::#unknown,
                };
                struct Slots { #(#slots)* }
                fn put<X>(_s: &mut Slots, _i: usize, _v: H::Json) -> ::core::result::Result<(), H::StructError> {
                    match _i {
                        #(#puts)*
                        _ => {}
                    }
                    ::core::result::Result::Ok(())
                }
                fn finish<X>(_s: Slots, _f: &mut H::StructFields) -> ::core::result::Result<#name, H::StructError> {
                    ::core::result::Result::Ok(#name { #(#finishes)* #extras_read })
                }
                let slots = Slots { #(#slot_names: ::core::option::Option::None,)* };
                H::deserialize_struct(deserializer, &SHAPE, slots, put::<D>, finish::<D>)
            }
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
    let type_name = name;
    let (doc, name) = head(name, doc);
    let (sd, serde_crate) = (serde_derives(p), &p.serde_crate);
    let heads = variants.iter().map(|(variant, json)| {
        let head = variant_head(variant, json, format!("{json:?}"));
        quote!(#head,)
    });
    let Some(((last, _), rest)) = variants.split_last() else {
        return quote! {
            #doc
            #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, #sd)]
            #[serde(crate = #serde_crate)]
            pub enum #name {}
        };
    };
    let k = &p.krate;
    let serde = quote!(#k::__private::serde);
    let h = quote!(#k::__private::serde_helpers);
    let values = variants.iter().map(|(_, json)| json.as_str());
    let arms = rest.iter().enumerate().map(|(n, (variant, _))| {
        let (n, variant) = (Literal::usize_unsuffixed(n), ident(variant));
        quote!(#n => Self::#variant,)
    });
    let last = ident(last);
    // `Deserialize` by hand, as for structs: one runtime function that
    // reads the variant's index, then a `match` (docs/codegen.md,
    // "Compile time at scale"). `FromStr` reads the index the same way and
    // shares the `match`; `as_str` indexes the shape's strings by the
    // variant's discriminant (variant order).
    quote! {
        #doc
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, #serde::Serialize)]
        #[serde(crate = #serde_crate)]
        pub enum #name {
            #(#heads)*
        }
        impl #name {
            const SHAPE: #h::EnumShape = #h::EnumShape {
                name: #type_name,
                variants: &[#(#values),*],
            };
            /// The value's JSON string.
            pub fn as_str(self) -> &'static str {
                Self::SHAPE.variants[self as usize]
            }
            fn from_index(index: usize) -> Self {
                match index {
                    #(#arms)*
                    _ => Self::#last,
                }
            }
        }
        impl ::core::fmt::Display for #name {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                f.write_str(self.as_str())
            }
        }
        impl ::core::str::FromStr for #name {
            type Err = #h::UnknownEnumValue;
            fn from_str(value: &str) -> ::core::result::Result<Self, Self::Err> {
                #h::parse_string_enum(value, &Self::SHAPE).map(Self::from_index)
            }
        }
        impl<'de> #serde::Deserialize<'de> for #name {
            fn deserialize<D: #serde::Deserializer<'de>>(deserializer: D) -> ::core::result::Result<Self, D::Error> {
                #h::deserialize_string_enum(deserializer, &Self::SHAPE).map(Self::from_index)
            }
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
