//! The field type checks: does each matched field have the type the
//! manifest gives its property?
//!
//! rustc does the check, on the user's own type tokens. For each matched
//! field the expansion holds, inside a `const _: () = { … };`, a trait of
//! its own carrying `#[diagnostic::on_unimplemented]` with a message
//! written for that field, implemented only for the property's
//! present-value type (`api::…::__fields::prop`, or `Option` of it when
//! the field wraps an optional property), and a function whose parameter
//! is the projection `<UserTy as Trait>::Is`. A wrong type is then
//! reported at the user's type as
//!
//! ```text
//! error[E0277]: field `device_ids` binds property `deviceIds` of `devices.disable`, which the agent manifest types `Vec<String>`; the field is `Vec<u32>`
//! ```
//!
//! with the expected type as the label and the fix as a note — never
//! rustc's "mismatched types … because of return type" or a `.to_string()`
//! suggestion, which an identity function's body would produce. Every
//! generated token carries the span of the user's type, so nothing points
//! into generated code.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::ext::IdentExt;
use syn::spanned::Spanned;

use super::valid::Matched;
use crate::facts::{FactField, ImplInput};
use crate::tokens::{ident_with_span, respan};

/// Names of the standard types generated field types are written with;
/// any other identifier in a type's text is a type `manifest!` generated
/// in the procedure's module.
const STANDARD_NAMES: &[&str] = &[
    "Vec",
    "Option",
    "String",
    "Box",
    "BTreeMap",
    "bool",
    "i64",
    "u64",
    "f64",
    "std",
    "core",
    "alloc",
    "collections",
    "boxed",
    "string",
    "vec",
    "option",
    "serde_json",
    "Value",
    "Number",
    "Map",
    "agent_surface",
    "__private",
    "serde_helpers",
    "TupleWithRest",
    "uuid",
    "Uuid",
    "chrono",
    "DateTime",
    "FixedOffset",
    "NaiveDate",
    "url",
    "Url",
];

/// The `const _: () = { … };` holding one check per matched field.
pub(crate) fn type_checks(
    input: &ImplInput,
    module: &TokenStream,
    matched: &[Matched<'_>],
) -> TokenStream {
    let checks = matched
        .iter()
        .enumerate()
        .map(|(i, m)| field_check(input, module, i, m));
    quote! {
        const _: () = {
            #(#checks)*
        };
    }
}

/// The trait, its one impl and the projection that checks field `m`.
fn field_check(input: &ImplInput, module: &TokenStream, i: usize, m: &Matched<'_>) -> TokenStream {
    let ty = &m.field.ty;
    let span = ty.span();
    let alias = respan(quote!(#module::__fields::), span);
    let prop = ident_with_span(&m.prop.ident, span);
    let expected = if m.wraps_option {
        quote_spanned!(span=> ::core::option::Option<#alias #prop>)
    } else {
        quote_spanned!(span=> #alias #prop)
    };
    let text = Messages::new(input, m);
    let (message, label, note) = (&text.message, &text.label, &text.note);
    let tr = format_ident!("ManifestType{}", i, span = span);
    let check = format_ident!("__agent_surface_check_{}", i, span = span);
    quote_spanned! {span=>
        #[diagnostic::on_unimplemented(message = #message, label = #label, note = #note)]
        trait #tr {
            type Is;
        }
        impl #tr for #expected {
            type Is = ();
        }
        #[allow(dead_code, non_snake_case)]
        fn #check(_: <#ty as #tr>::Is) {}
    }
}

/// The three texts of one field's diagnostic, with `{`/`}` escaped for
/// `on_unimplemented`'s format strings.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Messages {
    pub(crate) message: String,
    pub(crate) label: String,
    pub(crate) note: String,
}

impl Messages {
    /// The texts for field `m` of `input`'s struct.
    pub(crate) fn new(input: &ImplInput, m: &Matched<'_>) -> Self {
        let field = m.ident.unraw().to_string();
        let module = module_text(input);
        let ty = &m.field.ty;
        let written = crate::tokens::type_text(&quote!(#ty));
        Self::for_field(&field, &written, m.prop, &input.facts.path, &module)
    }

    /// The texts for a field named `field`, of the type the user wrote as
    /// `written`, bound to `prop` of the procedure at `path`, whose
    /// generated module the user names `module` (`api::devices::disable`).
    /// The user's type is quoted as written, not as rustc's `{Self}`, whose
    /// path trimming varies with the crates in the build.
    pub(crate) fn for_field(
        field: &str,
        written: &str,
        prop: &FactField,
        path: &str,
        module: &str,
    ) -> Self {
        let ty = &prop.ty_text;
        let json = &prop.json;
        let message = format!(
            "field `{}` binds property `{}` of `{}`, which the agent manifest types `{}`; the field is `{}`",
            esc(field),
            esc(json),
            esc(path),
            esc(ty),
            esc(written)
        );
        let (label, fix) = if prop.required {
            (
                format!("expected `{}`", esc(ty)),
                format!("write the field as `{}: {}`", esc(field), esc(ty)),
            )
        } else {
            (
                format!("expected `{}` or `Option<{}>`", esc(ty), esc(ty)),
                format!(
                    "`{json}` is optional: write the field as `{f}: {t}`, or as `{f}: Option<{t}>` to leave it out when the field is `None`",
                    json = esc(json),
                    f = esc(field),
                    t = esc(ty)
                ),
            )
        };
        let generated = generated_names(ty);
        let note = if generated.is_empty() {
            fix
        } else {
            format!(
                "{fix} ({} generated by `manifest!` in `{}`)",
                describe_names(&generated),
                esc(module)
            )
        };
        Messages {
            message,
            label,
            note,
        }
    }
}

/// `api::devices::disable` as the user's crate names it, for messages.
fn module_text(input: &ImplInput) -> String {
    let api = crate::tokens::type_text(&input.api);
    let segments: Vec<String> = input
        .facts
        .module
        .iter()
        .map(|s| s.unraw().to_string())
        .collect();
    let api = api.replace(' ', "");
    if segments.is_empty() {
        api
    } else {
        format!("{api}::{}", segments.join("::"))
    }
}

/// The identifiers of `ty` that are not standard names: the types
/// `manifest!` generated for the procedure, in order of appearance.
fn generated_names(ty: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for word in ty.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
        let starts_alpha = word.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_');
        if starts_alpha && !STANDARD_NAMES.contains(&word) && !out.iter().any(|w| w == word) {
            out.push(word.to_string());
        }
    }
    out
}

/// "`A` is" / "`A` and `B` are".
fn describe_names(names: &[String]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("`{}`", esc(n))).collect();
    match quoted.as_slice() {
        [one] => format!("{one} is"),
        [rest @ .., last] => format!("{} and {last} are", rest.join(", ")),
        [] => String::new(),
    }
}

/// `text` with `{` and `}` doubled, as `on_unimplemented` reads them.
fn esc(text: &str) -> String {
    text.replace('{', "{{").replace('}', "}}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use proc_macro2::Span;

    fn prop(json: &str, ident: &str, required: bool, ty: &str) -> FactField {
        FactField {
            json: json.into(),
            ident: proc_macro2::Ident::new(ident, Span::call_site()),
            required,
            nullable: false,
            depth: 0,
            ty_text: ty.into(),
        }
    }

    #[test]
    fn a_required_property_names_procedure_property_type_and_fix() {
        let m = Messages::for_field(
            "device_ids",
            "Vec<u32>",
            &prop("deviceIds", "device_ids", true, "Vec<String>"),
            "devices.disable",
            "api::devices::disable",
        );
        assert_eq!(
            m,
            Messages {
                message: "field `device_ids` binds property `deviceIds` of `devices.disable`, which the agent manifest types `Vec<String>`; the field is `Vec<u32>`".into(),
                label: "expected `Vec<String>`".into(),
                note: "write the field as `device_ids: Vec<String>`".into(),
            }
        );
    }

    #[test]
    fn an_optional_property_offers_both_forms_and_generated_types_say_where_they_are() {
        let m = Messages::for_field(
            "filter",
            "MyFilter",
            &prop("filter", "filter", false, "Vec<InputFilter>"),
            "devices.tag",
            "api::devices::tag",
        );
        assert_eq!(
            m.label,
            "expected `Vec<InputFilter>` or `Option<Vec<InputFilter>>`"
        );
        assert_eq!(
            m.note,
            "`filter` is optional: write the field as `filter: Vec<InputFilter>`, or as `filter: Option<Vec<InputFilter>>` to leave it out when the field is `None` (`InputFilter` is generated by `manifest!` in `api::devices::tag`)"
        );
    }

    #[test]
    fn braces_in_names_are_escaped_for_the_format_string() {
        assert_eq!(esc("a{b}"), "a{{b}}");
        assert_eq!(
            generated_names("BTreeMap<String, serde_json::Value>"),
            Vec::<String>::new()
        );
        assert_eq!(generated_names("Option<Box<InputNode>>"), ["InputNode"]);
        assert_eq!(
            describe_names(&["A".into(), "B".into(), "C".into()]),
            "`A`, `B` and `C` are"
        );
    }
}
