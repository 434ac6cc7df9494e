//! `#[agent_procedure(...)]` (SPEC §4 items 2–6, §5; issue "codegen"
//! item 5): binds the app's own struct to a manifest procedure, as the
//! UI-bound subset of its input (the seed's `TBound`, implementing
//! `BoundInput`) or as its full input type (implementing `ProcedureInput`).
//!
//! # How the check reaches the manifest
//!
//! A proc macro cannot see what another proc macro produced, so the facts
//! travel as tokens:
//!
//! 1. the attribute ([`expand_attribute`]) re-emits the user's struct
//!    unchanged (minus its own field attributes) and invokes
//!    `api::__agent_surface_procedures! { "devices.disable" … }`, the lookup
//!    macro `manifest!` emitted in the module `api`;
//! 2. the lookup macro's arm for that path literal forwards the procedure's
//!    facts (JSON property names, Rust idents, required/nullable, the
//!    `additionalProperties` policy, the module path) plus the user's tokens
//!    to `agent_procedure_impl!` ([`expand_procedure_impl`]), which checks and
//!    emits the impl; an unknown literal falls through to
//!    `agent_procedure_unknown!` ([`expand_unknown_procedure`]), which
//!    suggests the nearest paths;
//! 3. field types are checked by rustc itself: the impl contains
//!    `fn check(value: UserTy) -> api::devices::disable::__fields::device_ids
//!    { value }` with the user's type tokens and span, so a wrong type is
//!    reported at the user's field in rustc's words.
//!
//! Because the struct is always re-emitted first, a binding mistake gives
//! one error, never a cascade of "cannot find type" errors.
//!
//! # Field ↔ property matching
//!
//! * Bound subset: a field matches the property whose generated Rust ident
//!   equals the field's ident (`device_ids` ↔ `deviceIds`), or whose JSON
//!   name equals it; `#[agent_procedure(rename = "deviceIds")]` on the field
//!   names the property explicitly. serde attributes are ignored: the
//!   bound JSON is built by the generated `to_bound_json`, keyed by the
//!   schema's property names.
//! * Full input: the struct is sent with serde, so a field matches the
//!   property named by its *serde* name (`#[serde(rename = "…")]`, else the
//!   container's `#[serde(rename_all = "…")]` applied to the ident, else the
//!   ident). Fields with `#[serde(skip)]`/`skip_serializing` are ignored;
//!   `#[serde(flatten)]` is refused. A field whose serde name is not in the
//!   schema's `properties` is refused whatever `additionalProperties` says:
//!   oRPC's zod objects strip unknown keys, so it would be silently lost.
//!
//! # Types
//!
//! The field's type must be the generated type of the property's present
//! value (`Vec<String>` for `deviceIds`). An optional property may also be
//! bound as `Option<T>`: `None` is then omitted from the JSON (bound role),
//! and for the full-input role the field must carry
//! `#[serde(skip_serializing_if = "Option::is_none")]` unless the property
//! admits `null`.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned, ToTokens};
use surface_runtime::manifest::nearest_paths;
use syn::ext::IdentExt;
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Attribute, DeriveInput, Ident, LitBool, LitInt, LitStr, Token};

use crate::manifest_macro::{option_depth, LOOKUP_MACRO};

/// Collects errors so the user sees every mistake in one build (serde's
/// `Ctxt` habit).
#[derive(Default)]
struct Errors(Option<syn::Error>);

impl Errors {
    fn push(&mut self, error: syn::Error) {
        match &mut self.0 {
            Some(first) => first.combine(error),
            None => self.0 = Some(error),
        }
    }
    fn add(&mut self, span: Span, message: impl std::fmt::Display) {
        self.push(syn::Error::new(span, message));
    }
}

/// The role the attributed struct plays.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// UI-bound subset of the input (default): implements `BoundInput`.
    Bound,
    /// Full input type (`input` argument): implements `ProcedureInput`.
    Input,
}

/// The arguments of `#[agent_procedure(api, "devices.disable", …)]`.
pub struct AgentProcedureArgs {
    /// Path of the module where `manifest!` was invoked.
    pub api: syn::Path,
    /// The procedure's dotted router path.
    pub path: LitStr,
    /// Bound subset or full input.
    pub role: Role,
    /// `overridable(a, b)`: bound fields the agent may override.
    pub overridable: Vec<Ident>,
}

impl Parse for AgentProcedureArgs {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        const USAGE: &str = "expected `#[agent_procedure(api, \"devices.disable\")]`, where `api` is the module in which `manifest!` was invoked; options: `input` (the struct is the full input), `overridable(field, …)` (bound fields the agent may override)";
        if input.is_empty() {
            return Err(input.error(USAGE));
        }
        let api: syn::Path = input
            .call(syn::Path::parse_mod_style)
            .map_err(|e| syn::Error::new(e.span(), USAGE))?;
        input
            .parse::<Token![,]>()
            .map_err(|e| syn::Error::new(e.span(), USAGE))?;
        let path: LitStr = input.parse().map_err(|e| {
            syn::Error::new(
                e.span(),
                "expected the procedure's dotted router path as a string literal, e.g. \"devices.disable\"",
            )
        })?;
        let mut role = Role::Bound;
        let mut overridable: Option<(Ident, Vec<Ident>)> = None;
        let mut input_kw: Option<Ident> = None;
        while !input.is_empty() {
            input.parse::<Token![,]>()?;
            if input.is_empty() {
                break;
            }
            let key: Ident = input.call(Ident::parse_any)?;
            if key == "input" {
                if input_kw.is_some() {
                    return Err(syn::Error::new(key.span(), "`input` is given twice"));
                }
                role = Role::Input;
                input_kw = Some(key);
            } else if key == "overridable" {
                if overridable.is_some() {
                    return Err(syn::Error::new(
                        key.span(),
                        "`overridable(...)` is given twice; list every field in one",
                    ));
                }
                let content;
                syn::parenthesized!(content in input);
                let list: Punctuated<Ident, Token![,]> =
                    content.parse_terminated(Ident::parse_any, Token![,])?;
                overridable = Some((key, list.into_iter().collect()));
            } else {
                return Err(syn::Error::new(
                    key.span(),
                    format!("unknown `agent_procedure` option `{key}`; expected `input` or `overridable(field, …)`"),
                ));
            }
        }
        if let (Some(kw), Some((ov, _))) = (&input_kw, &overridable) {
            let mut e = syn::Error::new(
                ov.span(),
                "`overridable(...)` applies to a bound subset; a full `input` struct binds nothing",
            );
            e.combine(syn::Error::new(
                kw.span(),
                "the struct is declared the full input here",
            ));
            return Err(e);
        }
        Ok(AgentProcedureArgs {
            api,
            path,
            role,
            overridable: overridable.map(|(_, l)| l).unwrap_or_default(),
        })
    }
}

fn is_own_attr(attr: &Attribute) -> bool {
    attr.path().is_ident("agent_procedure")
}

/// The user's struct with this crate's field attributes removed (they are
/// not attributes rustc knows once the outer attribute has run).
fn strip_own_attrs(item: &DeriveInput) -> DeriveInput {
    let mut item = item.clone();
    if let syn::Data::Struct(s) = &mut item.data {
        for field in s.fields.iter_mut() {
            field.attrs.retain(|a| !is_own_attr(a));
        }
    }
    item
}

/// The `#[agent_procedure(...)]` entry point. Always re-emits the struct;
/// then either an error or the invocation of the lookup macro in `api`.
pub fn expand_attribute(attr: TokenStream, item: TokenStream) -> TokenStream {
    let parsed: DeriveInput = match syn::parse2(item.clone()) {
        Ok(d) => d,
        Err(_) => {
            let e = syn::Error::new(
                Span::call_site(),
                "`#[agent_procedure]` applies to a struct with named fields",
            );
            let err = e.to_compile_error();
            return quote!(#item #err);
        }
    };
    let stripped = strip_own_attrs(&parsed);
    let args: AgentProcedureArgs = match syn::parse2(attr) {
        Ok(a) => a,
        Err(e) => {
            let err = e.to_compile_error();
            return quote!(#stripped #err);
        }
    };
    let AgentProcedureArgs {
        api,
        path,
        role,
        overridable,
    } = args;
    let lookup = format_ident!("{}", LOOKUP_MACRO, span = path.span());
    let mut lookup_path = api.clone();
    lookup_path.segments.push(syn::PathSegment::from(lookup));
    quote! {
        #stripped
        #lookup_path! {
            #path
            user_path = #path,
            api = (#api),
            role = #role,
            overridable = [#(#overridable),*],
            item = { #parsed }
        }
    }
}

/// `additionalProperties` of the input, as forwarded by the lookup macro.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Additional {
    /// `false`.
    Forbidden,
    /// Absent or `true`.
    Allowed,
    /// A schema.
    Typed,
}

/// One top-level property, as forwarded by the lookup macro.
#[derive(Clone, Debug)]
pub struct FactField {
    /// Schema property name.
    pub json: String,
    /// Generated Rust ident (`device_ids`, `r#type`).
    pub ident: Ident,
    /// In `required`.
    pub required: bool,
    /// Admits `null`.
    pub nullable: bool,
    /// `Option` wrappers of the present-value type.
    pub depth: usize,
    /// Source text of the present-value type, for messages.
    pub ty_text: String,
}

/// What `agent_procedure_impl!` receives: the manifest's facts and the
/// user's request.
pub struct ImplInput {
    /// Facade crate path.
    pub krate: TokenStream,
    /// The procedure path (manifest side).
    pub path: LitStr,
    /// Module path of the procedure relative to `api` (`devices::disable`).
    pub module: TokenStream,
    /// Whether the input is an object with `properties`.
    pub object: bool,
    /// `additionalProperties`.
    pub additional: Additional,
    /// Top-level properties.
    pub fields: Vec<FactField>,
    /// The path literal as the user wrote it (for spans).
    pub user_path: LitStr,
    /// The user's `api` path.
    pub api: TokenStream,
    /// Role.
    pub role: Role,
    /// Overridable field idents.
    pub overridable: Vec<Ident>,
    /// The user's struct.
    pub item: DeriveInput,
}

fn parens(input: ParseStream<'_>) -> syn::Result<TokenStream> {
    let content;
    syn::parenthesized!(content in input);
    content.parse()
}

impl Parse for FactField {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let content;
        syn::parenthesized!(content in input);
        let json: LitStr = content.parse()?;
        content.parse::<Token![,]>()?;
        let ident: Ident = content.call(Ident::parse_any)?;
        content.parse::<Token![,]>()?;
        let required: Ident = content.parse()?;
        content.parse::<Token![,]>()?;
        let nullable: Ident = content.parse()?;
        content.parse::<Token![,]>()?;
        let depth: LitInt = content.parse()?;
        content.parse::<Token![,]>()?;
        let ty_text: LitStr = content.parse()?;
        Ok(FactField {
            json: json.value(),
            ident,
            required: required == "required",
            nullable: nullable == "nullable",
            depth: depth.base10_parse()?,
            ty_text: ty_text.value(),
        })
    }
}

impl Parse for ImplInput {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let mut krate = None;
        let mut path = None;
        let mut module = None;
        let mut object = None;
        let mut additional = None;
        let mut fields = None;
        let mut user_path = None;
        let mut api = None;
        let mut role = None;
        let mut overridable = None;
        let mut item = None;
        while !input.is_empty() {
            let key: Ident = input.call(Ident::parse_any)?;
            input.parse::<Token![=]>()?;
            match key.to_string().as_str() {
                "krate" => krate = Some(parens(input)?),
                "path" => path = Some(input.parse::<LitStr>()?),
                "module" => module = Some(parens(input)?),
                "object" => object = Some(input.parse::<LitBool>()?.value),
                "additional_properties" => {
                    let v: Ident = input.parse()?;
                    additional = Some(match v.to_string().as_str() {
                        "forbidden" => Additional::Forbidden,
                        "typed" => Additional::Typed,
                        _ => Additional::Allowed,
                    });
                }
                "fields" => {
                    let content;
                    syn::bracketed!(content in input);
                    let list: Punctuated<FactField, Token![,]> =
                        content.parse_terminated(FactField::parse, Token![,])?;
                    fields = Some(list.into_iter().collect());
                }
                "user_path" => user_path = Some(input.parse::<LitStr>()?),
                "api" => api = Some(parens(input)?),
                "role" => {
                    let v: Ident = input.parse()?;
                    role = Some(if v == "input" { Role::Input } else { Role::Bound });
                }
                "overridable" => {
                    let content;
                    syn::bracketed!(content in input);
                    let list: Punctuated<Ident, Token![,]> =
                        content.parse_terminated(Ident::parse_any, Token![,])?;
                    overridable = Some(list.into_iter().collect());
                }
                "item" => {
                    let content;
                    syn::braced!(content in input);
                    item = Some(content.parse::<DeriveInput>()?);
                }
                other => {
                    return Err(syn::Error::new(
                        key.span(),
                        format!("internal: unknown fact `{other}` (mismatched agent-surface crate versions?)"),
                    ))
                }
            }
            if !input.is_empty() {
                input.parse::<Token![,]>()?;
            }
        }
        let missing = |what: &str| {
            syn::Error::new(
                Span::call_site(),
                format!("internal: `{what}` missing (mismatched agent-surface crate versions?)"),
            )
        };
        let path: LitStr = path.ok_or_else(|| missing("path"))?;
        Ok(ImplInput {
            krate: krate.ok_or_else(|| missing("krate"))?,
            module: module.ok_or_else(|| missing("module"))?,
            object: object.ok_or_else(|| missing("object"))?,
            additional: additional.ok_or_else(|| missing("additional_properties"))?,
            fields: fields.ok_or_else(|| missing("fields"))?,
            user_path: user_path.unwrap_or_else(|| path.clone()),
            path,
            api: api.ok_or_else(|| missing("api"))?,
            role: role.ok_or_else(|| missing("role"))?,
            overridable: overridable.unwrap_or_default(),
            item: item.ok_or_else(|| missing("item"))?,
        })
    }
}

/// The `agent_procedure_impl!` entry point: checks the user's struct
/// against the forwarded facts and emits `BoundInput` or `ProcedureInput`.
pub fn expand_procedure_impl(input: TokenStream) -> TokenStream {
    match syn::parse2::<ImplInput>(input) {
        Ok(input) => {
            let (tokens, errors) = check_and_expand(&input);
            let errors = errors.map(|e| e.to_compile_error());
            quote!(#tokens #errors)
        }
        Err(e) => e.to_compile_error(),
    }
}

/// The input of `agent_procedure_unknown!`: the user's path literal and
/// every manifest path.
pub struct UnknownInput {
    /// The user's literal.
    pub path: LitStr,
    /// All paths of the manifest.
    pub all: Vec<String>,
}

impl Parse for UnknownInput {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let path: syn::Lit = input.parse()?;
        let path = match path {
            syn::Lit::Str(s) => s,
            other => {
                return Err(syn::Error::new(
                    other.span(),
                    "expected the procedure's dotted router path as a string literal, e.g. \"devices.disable\"",
                ))
            }
        };
        input.parse::<Token![,]>()?;
        let content;
        syn::bracketed!(content in input);
        let list: Punctuated<LitStr, Token![,]> =
            content.parse_terminated(<LitStr as Parse>::parse, Token![,])?;
        Ok(UnknownInput {
            path,
            all: list.into_iter().map(|l| l.value()).collect(),
        })
    }
}

/// The `agent_procedure_unknown!` entry point: a `compile_error!` on the
/// user's literal naming the nearest manifest paths.
pub fn expand_unknown_procedure(input: TokenStream) -> TokenStream {
    match syn::parse2::<UnknownInput>(input) {
        Ok(u) => syn::Error::new(u.path.span(), unknown_message(&u.path.value(), &u.all))
            .to_compile_error(),
        Err(e) => e.to_compile_error(),
    }
}

/// The "unknown procedure path" message (SPEC §4 item 2).
pub fn unknown_message(wanted: &str, all: &[String]) -> String {
    let near = nearest_paths(wanted, all.iter().map(String::as_str), 3);
    if let Some((best, others)) = near.split_first() {
        let others = if others.is_empty() {
            String::new()
        } else {
            format!(" (other close paths: {})", list_and(others))
        };
        return format!(
            "no procedure `{wanted}` in the agent manifest; did you mean `{best}`?{others}"
        );
    }
    if all.is_empty() {
        return format!("no procedure `{wanted}` in the agent manifest, which is empty");
    }
    let shown: Vec<&str> = all.iter().take(10).map(String::as_str).collect();
    let more = if all.len() > 10 {
        format!(" and {} more", all.len() - 10)
    } else {
        String::new()
    };
    format!(
        "no procedure `{wanted}` in the agent manifest; its procedures are {}{more}",
        list_and(&shown)
    )
}

fn quoted(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| format!("`{s}`")).collect()
}

fn list_and(items: &[&str]) -> String {
    join_with(&quoted(items), "and")
}

fn join_with(items: &[String], word: &str) -> String {
    match items.len() {
        0 => String::new(),
        1 => items[0].clone(),
        n => format!("{} {word} {}", items[..n - 1].join(", "), items[n - 1]),
    }
}

/// A user field matched to a property.
struct Matched<'a> {
    field: &'a syn::Field,
    ident: &'a Ident,
    prop: &'a FactField,
    /// The user's type has one more `Option` than the property's present
    /// value: `None` means "absent".
    wraps_option: bool,
}

fn struct_fields<'a>(item: &'a DeriveInput, errors: &mut Errors) -> Option<Vec<&'a syn::Field>> {
    if !item.generics.params.is_empty() {
        errors.add(
            item.generics.span(),
            "`#[agent_procedure]` does not support generic structs; bind a concrete struct",
        );
    }
    match &item.data {
        syn::Data::Struct(syn::DataStruct {
            fields: syn::Fields::Named(named),
            ..
        }) => Some(named.named.iter().collect()),
        syn::Data::Struct(_) => {
            errors.add(
                item.ident.span(),
                "`#[agent_procedure]` needs a struct with named fields, one per input property",
            );
            None
        }
        _ => {
            errors.add(
                item.ident.span(),
                "`#[agent_procedure]` applies to a struct with named fields, one per input property",
            );
            None
        }
    }
}

fn properties_list(fields: &[FactField]) -> String {
    if fields.is_empty() {
        return "it has no properties".into();
    }
    let items: Vec<String> = fields
        .iter()
        .map(|f| {
            let id = f.ident.unraw().to_string();
            if id == f.json {
                format!("`{}`", f.json)
            } else {
                format!("`{}` (field `{id}`)", f.json)
            }
        })
        .collect();
    format!("its properties are {}", join_with(&items, "and"))
}

fn find_by_name<'a>(fields: &'a [FactField], name: &str) -> Option<&'a FactField> {
    fields
        .iter()
        .find(|f| f.ident.unraw() == name)
        .or_else(|| fields.iter().find(|f| f.json == name))
}

fn suggestion(fields: &[FactField], name: &str) -> String {
    let candidates: Vec<String> = fields
        .iter()
        .flat_map(|f| [f.json.clone(), f.ident.unraw().to_string()])
        .collect();
    let near = nearest_paths(name, candidates.iter().map(String::as_str), 1);
    match near.first() {
        Some(n) => format!("; did you mean `{n}`?"),
        None => String::new(),
    }
}

/// `#[agent_procedure(rename = "…")]` on a field.
fn own_rename(field: &syn::Field, errors: &mut Errors) -> Option<LitStr> {
    let mut rename = None;
    for attr in field.attrs.iter().filter(|a| is_own_attr(a)) {
        let r = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("rename") {
                rename = Some(meta.value()?.parse::<LitStr>()?);
                Ok(())
            } else {
                Err(meta.error("unknown field option; the only one is `rename = \"propertyName\"`"))
            }
        });
        if let Err(e) = r {
            errors.push(e);
        }
    }
    rename
}

/// Checks the user's struct against the facts. Returns the impl (emitted
/// even when some checks fail, with the fields that did match, so one
/// mistake does not cascade into every use of the trait) and the collected
/// errors.
fn check_and_expand(input: &ImplInput) -> (TokenStream, Option<syn::Error>) {
    let mut errors = Errors::default();
    let fields = struct_fields(&input.item, &mut errors);
    let Some(fields) = fields.filter(|_| input.item.generics.params.is_empty()) else {
        return (TokenStream::new(), errors.0);
    };
    let path = input.path.value();
    if !input.object {
        errors.add(
            input.user_path.span(),
            format!("the input of `{path}` is not a JSON object schema with `properties`, so `#[agent_procedure]` cannot map struct fields to it; use the generated `Input` type instead"),
        );
        return (expand(input, &[], &[]), errors.0);
    }
    let matched = match input.role {
        Role::Bound => match_bound(input, &fields, &mut errors),
        Role::Input => match_full(input, &fields, &mut errors),
    };
    // Overridable fields (bound role only; the attribute refuses it with `input`).
    let mut unlocked: Vec<String> = Vec::new();
    for ov in &input.overridable {
        let name = ov.unraw().to_string();
        if unlocked.contains(&name) {
            errors.add(
                ov.span(),
                format!("`{name}` is listed twice in `overridable(...)`"),
            );
            continue;
        }
        if matched.iter().any(|m| m.ident.unraw() == name) {
            unlocked.push(name);
        } else if fields
            .iter()
            .any(|f| f.ident.as_ref().is_some_and(|i| i.unraw() == name))
        {
            // A field that failed to match; its own error is already reported.
            unlocked.push(name);
        } else if let Some(prop) = find_by_name(&input.fields, &name) {
            errors.add(
                ov.span(),
                format!(
                    "overridable field `{name}` is not bound: `{}` is a property of `{path}`, but `{}` has no field for it; add a field `{}: {}` or remove it from `overridable(...)`",
                    prop.json, input.item.ident, prop.ident.unraw(), prop.ty_text
                ),
            );
        } else {
            errors.add(
                ov.span(),
                format!(
                    "overridable field `{name}` does not exist: it is neither a field of `{}` nor a property of `{path}`'s input; {}{}",
                    input.item.ident,
                    properties_list(&input.fields),
                    suggestion(&input.fields, &name)
                ),
            );
        }
    }
    (expand(input, &matched, &unlocked), errors.0)
}

fn choose_wrap(prop: &FactField, ty: &syn::Type) -> bool {
    !prop.required && option_depth(ty) == prop.depth + 1
}

fn match_bound<'a>(
    input: &'a ImplInput,
    fields: &[&'a syn::Field],
    errors: &mut Errors,
) -> Vec<Matched<'a>> {
    let path = input.path.value();
    let mut out: Vec<Matched<'a>> = Vec::new();
    for field in fields {
        let Some(ident) = field.ident.as_ref() else {
            continue;
        };
        let rename = own_rename(field, errors);
        let name = ident.unraw().to_string();
        let prop = match &rename {
            Some(lit) => match input.fields.iter().find(|f| f.json == lit.value()) {
                Some(p) => p,
                None => {
                    errors.add(
                        lit.span(),
                        format!(
                            "`{path}`'s input has no property `{}`; {}{}",
                            lit.value(),
                            properties_list(&input.fields),
                            suggestion(&input.fields, &lit.value())
                        ),
                    );
                    continue;
                }
            },
            None => match find_by_name(&input.fields, &name) {
                Some(p) => p,
                None => {
                    errors.add(
                        ident.span(),
                        format!(
                            "bound field `{name}` is not in the input of `{path}`; {}{}",
                            properties_list(&input.fields),
                            suggestion(&input.fields, &name)
                        ),
                    );
                    continue;
                }
            },
        };
        if let Some(prev) = out.iter().find(|m| m.prop.json == prop.json) {
            errors.add(
                ident.span(),
                format!(
                    "property `{}` of `{path}` is bound twice (also by field `{}`)",
                    prop.json, prev.ident
                ),
            );
            continue;
        }
        out.push(Matched {
            field,
            ident,
            prop,
            wraps_option: choose_wrap(prop, &field.ty),
        });
    }
    out
}

/// serde's naming of one field, as far as `#[agent_procedure]` needs it.
#[derive(Default)]
struct SerdeField {
    rename: Option<String>,
    skip: bool,
    flatten: Option<Span>,
    skip_serializing_if: bool,
}

fn skip_meta_value(meta: &syn::meta::ParseNestedMeta<'_>) -> syn::Result<()> {
    if meta.input.peek(Token![=]) {
        meta.value()?.parse::<syn::Expr>()?;
    } else if meta.input.peek(syn::token::Paren) {
        let content;
        syn::parenthesized!(content in meta.input);
        content.parse::<TokenStream>()?;
    }
    Ok(())
}

fn serde_field(field: &syn::Field, errors: &mut Errors) -> SerdeField {
    let mut out = SerdeField::default();
    for attr in field.attrs.iter().filter(|a| a.path().is_ident("serde")) {
        let r = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("rename") {
                if meta.input.peek(Token![=]) {
                    out.rename = Some(meta.value()?.parse::<LitStr>()?.value());
                } else {
                    meta.parse_nested_meta(|inner| {
                        let v = inner.value()?.parse::<LitStr>()?.value();
                        if inner.path.is_ident("serialize") {
                            out.rename = Some(v);
                        }
                        Ok(())
                    })?;
                }
            } else if meta.path.is_ident("skip") || meta.path.is_ident("skip_serializing") {
                out.skip = true;
            } else if meta.path.is_ident("flatten") {
                out.flatten = Some(meta.path.span());
            } else if meta.path.is_ident("skip_serializing_if") {
                out.skip_serializing_if = true;
                skip_meta_value(&meta)?;
            } else {
                skip_meta_value(&meta)?;
            }
            Ok(())
        });
        if let Err(e) = r {
            errors.push(e);
        }
    }
    out
}

fn serde_rename_all(item: &DeriveInput, errors: &mut Errors) -> Option<(String, Span)> {
    let mut out = None;
    for attr in item.attrs.iter().filter(|a| a.path().is_ident("serde")) {
        let r = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("rename_all") {
                if meta.input.peek(Token![=]) {
                    let lit = meta.value()?.parse::<LitStr>()?;
                    out = Some((lit.value(), lit.span()));
                } else {
                    meta.parse_nested_meta(|inner| {
                        let lit = inner.value()?.parse::<LitStr>()?;
                        if inner.path.is_ident("serialize") {
                            out = Some((lit.value(), lit.span()));
                        }
                        Ok(())
                    })?;
                }
            } else {
                skip_meta_value(&meta)?;
            }
            Ok(())
        });
        if let Err(e) = r {
            errors.push(e);
        }
    }
    out
}

/// serde's `rename_all` rule applied to a snake_case field name, as
/// serde_derive does it.
pub fn apply_rename_all(rule: &str, field: &str) -> Option<String> {
    Some(match rule {
        "lowercase" | "snake_case" => field.to_string(),
        "UPPERCASE" | "SCREAMING_SNAKE_CASE" => field.to_ascii_uppercase(),
        "PascalCase" => {
            let mut out = String::new();
            let mut upper = true;
            for c in field.chars() {
                if c == '_' {
                    upper = true;
                } else if upper {
                    out.push(c.to_ascii_uppercase());
                    upper = false;
                } else {
                    out.push(c);
                }
            }
            out
        }
        "camelCase" => {
            let pascal = apply_rename_all("PascalCase", field)?;
            let mut chars = pascal.chars();
            match chars.next() {
                Some(c) => c.to_lowercase().chain(chars).collect(),
                None => String::new(),
            }
        }
        "kebab-case" => field.replace('_', "-"),
        "SCREAMING-KEBAB-CASE" => field.to_ascii_uppercase().replace('_', "-"),
        _ => return None,
    })
}

fn match_full<'a>(
    input: &'a ImplInput,
    fields: &[&'a syn::Field],
    errors: &mut Errors,
) -> Vec<Matched<'a>> {
    let path = input.path.value();
    let rename_all = serde_rename_all(&input.item, errors);
    if let Some((rule, span)) = &rename_all {
        if apply_rename_all(rule, "a_b").is_none() {
            errors.add(*span, format!("unknown serde `rename_all` rule `{rule}`"));
        }
    }
    let mut out: Vec<Matched<'a>> = Vec::new();
    for field in fields {
        let Some(ident) = field.ident.as_ref() else {
            continue;
        };
        for attr in field.attrs.iter().filter(|a| is_own_attr(a)) {
            errors.add(
                attr.span(),
                "a full `input` struct is sent with serde: name the property with `#[serde(rename = \"…\")]` instead of `#[agent_procedure(rename)]`",
            );
        }
        let serde = serde_field(field, errors);
        if let Some(span) = serde.flatten {
            errors.add(
                span,
                "`#[serde(flatten)]` is not supported on an `#[agent_procedure]` input struct: declare each property as its own field",
            );
            continue;
        }
        if serde.skip {
            continue;
        }
        let raw = ident.unraw().to_string();
        let name = match (&serde.rename, &rename_all) {
            (Some(r), _) => r.clone(),
            (None, Some((rule, _))) => apply_rename_all(rule, &raw).unwrap_or(raw.clone()),
            (None, None) => raw.clone(),
        };
        let Some(prop) = input.fields.iter().find(|f| f.json == name) else {
            let hint = match input
                .fields
                .iter()
                .find(|f| f.ident.unraw() == raw || f.ident.unraw() == name)
            {
                Some(p) => format!(
                    "; serde names this field `{name}`, but the schema's property is `{}`: add `#[serde(rename = \"{}\")]` (or `#[serde(rename_all = \"camelCase\")]` on the struct)",
                    p.json, p.json
                ),
                None => suggestion(&input.fields, &name),
            };
            let why = match input.additional {
                Additional::Forbidden => "the schema forbids it (`additionalProperties: false`)",
                _ => {
                    "it is not among the schema's `properties` (the server would drop or reject it)"
                }
            };
            errors.add(
                ident.span(),
                format!(
                    "`{}` has a property `{name}` that `{path}`'s input does not allow: {why}; {}{hint}",
                    input.item.ident,
                    properties_list(&input.fields)
                ),
            );
            continue;
        };
        if let Some(prev) = out.iter().find(|m| m.prop.json == prop.json) {
            errors.add(
                ident.span(),
                format!(
                    "property `{}` of `{path}` is declared twice (also by field `{}`)",
                    prop.json, prev.ident
                ),
            );
            continue;
        }
        let wraps_option = choose_wrap(prop, &field.ty);
        if wraps_option && !prop.nullable && !serde.skip_serializing_if {
            errors.add(
                ident.span(),
                format!(
                    "optional property `{}` of `{path}` does not admit `null`, but serde writes `None` as `null`: add `#[serde(skip_serializing_if = \"Option::is_none\")]` to field `{raw}`",
                    prop.json
                ),
            );
        }
        out.push(Matched {
            field,
            ident,
            prop,
            wraps_option,
        });
    }
    let missing: Vec<&FactField> = input
        .fields
        .iter()
        .filter(|p| p.required && !out.iter().any(|m| m.prop.json == p.json))
        .collect();
    for p in missing {
        errors.add(
            input.item.ident.span(),
            format!(
                "`{}` lacks the required property `{}` of `{path}`'s input: add a field `{}: {}`{}",
                input.item.ident,
                p.json,
                p.ident.unraw(),
                p.ty_text,
                if p.ident.unraw() == p.json {
                    String::new()
                } else {
                    format!(" with `#[serde(rename = \"{}\")]`", p.json)
                }
            ),
        );
    }
    out
}

fn expand(input: &ImplInput, matched: &[Matched<'_>], unlocked: &[String]) -> TokenStream {
    let krate = &input.krate;
    let api = &input.api;
    let module = &input.module;
    let name = &input.item.ident;
    let path = &input.path;
    let checks = matched.iter().enumerate().map(|(i, m)| {
        let ty = &m.field.ty;
        let span = ty.span();
        // Every token of the expected type carries the user's span, so rustc
        // reports both "expected" and "found" at the user's field.
        let alias = respan(quote!(#api::#module::__fields::), span);
        let prop = ident_with_span(&m.prop.ident, span);
        let expected = if m.wraps_option {
            quote_spanned!(span=> ::core::option::Option<#alias #prop>)
        } else {
            quote_spanned!(span=> #alias #prop)
        };
        let check = format_ident!("__agent_surface_check_{}", i);
        quote_spanned! {span=>
            #[allow(dead_code, non_snake_case)]
            fn #check(value: #ty) -> #expected {
                value
            }
        }
    });
    let checks = quote! {
        const _: () = {
            #(#checks)*
        };
    };
    let impl_span = name.span();
    match input.role {
        Role::Bound => {
            let bound = matched.iter().map(|m| {
                let json = &m.prop.json;
                let locked = !unlocked.iter().any(|u| m.ident.unraw() == u);
                quote!(#krate::BoundField { name: #json, locked: #locked })
            });
            let inserts = matched.iter().map(|m| {
                let json = &m.prop.json;
                let ident = m.ident;
                if m.wraps_option {
                    quote! {
                        if let ::core::option::Option::Some(value) = &self.#ident {
                            map.insert(
                                ::std::string::String::from(#json),
                                #krate::__private::serde_json::to_value(value)?,
                            );
                        }
                    }
                } else {
                    quote! {
                        map.insert(
                            ::std::string::String::from(#json),
                            #krate::__private::serde_json::to_value(&self.#ident)?,
                        );
                    }
                }
            });
            let header = quote_spanned!(impl_span=> impl #krate::BoundInput for #name);
            quote! {
                #checks

                #header {
                    type Input = #api::#module::Input;
                    const PROCEDURE: &'static str = #path;

                    fn bound_fields() -> &'static [#krate::BoundField] {
                        const FIELDS: &[#krate::BoundField] = &[#(#bound),*];
                        FIELDS
                    }

                    fn to_bound_json(
                        &self,
                    ) -> ::core::result::Result<
                        #krate::__private::serde_json::Map<
                            ::std::string::String,
                            #krate::__private::serde_json::Value,
                        >,
                        #krate::__private::serde_json::Error,
                    > {
                        #[allow(unused_mut)]
                        let mut map = #krate::__private::serde_json::Map::new();
                        #(#inserts)*
                        ::core::result::Result::Ok(map)
                    }
                }
            }
        }
        Role::Input => {
            let header = quote_spanned!(impl_span=> impl #krate::ProcedureInput for #name);
            quote! {
                #checks

                #header {
                    type Generated = #api::#module::Input;
                    type Output = #api::#module::Output;
                    const PROCEDURE: &'static str = #path;
                }
            }
        }
    }
}

/// `tokens` with every span replaced by `span` (groups included).
fn respan(tokens: TokenStream, span: Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|tt| match tt {
            proc_macro2::TokenTree::Group(g) => {
                let mut group = proc_macro2::Group::new(g.delimiter(), respan(g.stream(), span));
                group.set_span(span);
                proc_macro2::TokenTree::Group(group)
            }
            mut other => {
                other.set_span(span);
                other
            }
        })
        .collect()
}

fn ident_with_span(ident: &Ident, span: Span) -> Ident {
    let mut ident = ident.clone();
    ident.set_span(span);
    ident
}

impl ToTokens for Role {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        tokens.extend(match self {
            Role::Bound => quote!(bound),
            Role::Input => quote!(input),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(role: &str, item: TokenStream, overridable: TokenStream) -> TokenStream {
        let role: TokenStream = role.parse().unwrap();
        quote! {
            krate = (::agent_surface),
            path = "devices.disable",
            module = (devices::disable),
            object = true,
            additional_properties = forbidden,
            fields = [
                ("deviceIds", device_ids, required, not_nullable, 0, "Vec<String>"),
                ("reason", reason, optional, not_nullable, 0, "String"),
                ("type", r#type, optional, nullable, 1, "Option<String>"),
            ],
            user_path = "devices.disable",
            api = (crate::api),
            role = #role,
            overridable = [#overridable],
            item = { #item }
        }
    }

    fn errors_of(tokens: TokenStream) -> Vec<String> {
        let input: ImplInput = syn::parse2(tokens).unwrap();
        match check_and_expand(&input).1 {
            None => vec![],
            Some(e) => e.into_iter().map(|e| e.to_string()).collect(),
        }
    }

    #[test]
    fn s4_3_bound_field_not_in_input_lists_properties() {
        let errs = errors_of(facts(
            "bound",
            quote!(
                struct B {
                    device_id: Vec<String>,
                }
            ),
            quote!(),
        ));
        assert_eq!(
            errs,
            vec!["bound field `device_id` is not in the input of `devices.disable`; its properties are `deviceIds` (field `device_ids`), `reason` and `type`; did you mean `device_ids`?"]
        );
    }

    #[test]
    fn s4_5_overridable_not_bound_and_not_existing() {
        let errs = errors_of(facts(
            "bound",
            quote!(
                struct B {
                    device_ids: Vec<String>,
                }
            ),
            quote!(reason, nope),
        ));
        assert_eq!(errs.len(), 2, "{errs:?}");
        assert_eq!(errs[0], "overridable field `reason` is not bound: `reason` is a property of `devices.disable`, but `B` has no field for it; add a field `reason: String` or remove it from `overridable(...)`");
        assert!(errs[1].starts_with("overridable field `nope` does not exist: it is neither a field of `B` nor a property of `devices.disable`'s input"));
    }

    #[test]
    fn s5_bound_fields_keep_declaration_order_and_lock_flags() {
        let input: ImplInput = syn::parse2(facts(
            "bound",
            quote!(
                struct B {
                    #[agent_procedure(rename = "reason")]
                    why: Option<String>,
                    device_ids: Vec<String>,
                }
            ),
            quote!(why),
        ))
        .unwrap();
        let (out, errors) = check_and_expand(&input);
        assert!(errors.is_none());
        let out = out.to_string();
        let a = out.find("name : \"reason\" , locked : false").unwrap();
        let b = out.find("name : \"deviceIds\" , locked : true").unwrap();
        assert!(a < b, "{out}");
        // `why: Option<String>` binds an optional property: None is omitted.
        assert!(out.contains("if let :: core :: option :: Option :: Some (value) = & self . why"));
        assert!(out.contains(":: core :: option :: Option < crate :: api :: devices :: disable :: __fields :: reason >"));
    }

    #[test]
    fn s4_6_full_input_missing_required_and_forbidden() {
        let errs = errors_of(facts(
            "input",
            quote!(
                #[derive(Serialize)]
                struct Full {
                    reason: Option<String>,
                    extra: u8,
                }
            ),
            quote!(),
        ));
        assert_eq!(errs.len(), 3, "{errs:?}");
        assert!(errs[0]
            .starts_with("optional property `reason` of `devices.disable` does not admit `null`"));
        assert!(errs[1].starts_with("`Full` has a property `extra` that `devices.disable`'s input does not allow: the schema forbids it (`additionalProperties: false`)"));
        assert_eq!(errs[2], "`Full` lacks the required property `deviceIds` of `devices.disable`'s input: add a field `device_ids: Vec<String>` with `#[serde(rename = \"deviceIds\")]`");
    }

    #[test]
    fn s4_6_full_input_uses_serde_names() {
        let errs = errors_of(facts(
            "input",
            quote!(
                #[derive(Serialize)]
                #[serde(rename_all = "camelCase")]
                struct Full {
                    device_ids: Vec<String>,
                    #[serde(skip_serializing_if = "Option::is_none")]
                    reason: Option<String>,
                    #[serde(rename = "type", default)]
                    kind: Option<String>,
                    #[serde(skip)]
                    local: u8,
                }
            ),
            quote!(),
        ));
        assert!(errs.is_empty(), "{errs:?}");
        let errs = errors_of(facts(
            "input",
            quote!(
                struct Full {
                    device_ids: Vec<String>,
                }
            ),
            quote!(),
        ));
        assert_eq!(errs.len(), 2);
        assert!(errs[1].starts_with("`Full` lacks the required property `deviceIds`"));
        assert!(
            errs[0].contains(
                "serde names this field `device_ids`, but the schema's property is `deviceIds`"
            ),
            "{errs:?}"
        );
    }

    #[test]
    fn s4_2_unknown_path_suggests_nearest() {
        let all = vec!["devices.disable".to_string(), "devices.list".to_string()];
        assert_eq!(
            unknown_message("devices.disabel", &all),
            "no procedure `devices.disabel` in the agent manifest; did you mean `devices.disable`? (other close paths: `devices.list`)"
        );
        assert_eq!(
            unknown_message("zzz", &all),
            "no procedure `zzz` in the agent manifest; its procedures are `devices.disable` and `devices.list`"
        );
    }

    #[test]
    fn attribute_reemits_struct_on_bad_args() {
        let out = expand_attribute(
            quote!(api),
            quote!(
                struct S {
                    #[agent_procedure(rename = "x")]
                    a: u8,
                }
            ),
        )
        .to_string();
        assert!(out.starts_with("struct S { a : u8 , }"), "{out}");
        assert!(out.contains("compile_error"));
        let out = expand_attribute(
            quote!(crate::api, "a.b", overridable(a)),
            quote!(
                struct S {
                    a: u8,
                }
            ),
        )
        .to_string();
        assert!(
            out.contains(
                "crate :: api :: __agent_surface_procedures ! { \"a.b\" user_path = \"a.b\""
            ),
            "{out}"
        );
    }

    #[test]
    fn rename_all_rules() {
        assert_eq!(
            apply_rename_all("camelCase", "device_ids").unwrap(),
            "deviceIds"
        );
        assert_eq!(
            apply_rename_all("PascalCase", "device_ids").unwrap(),
            "DeviceIds"
        );
        assert_eq!(
            apply_rename_all("kebab-case", "device_ids").unwrap(),
            "device-ids"
        );
        assert_eq!(
            apply_rename_all("SCREAMING_SNAKE_CASE", "a_b").unwrap(),
            "A_B"
        );
        assert!(apply_rename_all("Title", "a").is_none());
    }
}
