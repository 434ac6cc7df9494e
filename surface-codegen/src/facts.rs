//! The fact protocol between `manifest!` and `#[agent_procedure]`.
//!
//! A proc macro cannot see what another proc macro produced, so what the
//! binding checks need from the manifest travels as tokens, through a
//! `macro_rules!` lookup macro that `manifest!` emits:
//!
//! 1. `#[agent_procedure(api, "devices.disable", …)]` re-emits the user's
//!    struct and expands to a [`LookupCall`]:
//!    `api::__agent_surface_procedures! { "devices.disable" (api) <request> }`,
//!    the request being a [`BindingRequest`] (the user's path literal,
//!    role, `overridable` list and struct);
//! 2. the lookup macro ([`lookup_macro`]) has one arm per procedure path.
//!    The arm for `"devices.disable"` forwards the procedure's
//!    [`ProcedureFacts`] with the request to the hidden
//!    `agent_procedure_impl!` ([`ImplInput`]); a literal no arm matches
//!    falls through to `agent_procedure_unknown!` ([`UnknownPath`]), which
//!    suggests the nearest paths;
//! 3. both hidden proc macros are named through the `api` path the user
//!    wrote (`api::__agent_surface_private::agent_procedure_impl!`), where
//!    `manifest!` re-exported the facade's private module, so the expansion
//!    resolves in the user's crate whatever the facade is called there.
//!
//! Every message of the protocol is a type that implements both `ToTokens`
//! (what one macro emits) and `Parse` (what the other reads), side by side
//! in this module; unit tests parse what is emitted back into an equal
//! value. Keys are keywords checked in a fixed order, so a mismatch is a
//! parse error naming the expected key, never a silently defaulted fact.
//!
//! # Across crates
//!
//! The lookup macro is `#[macro_export]`ed (which puts it at the root of the
//! crate that invoked `manifest!`) under a name unique to the invocation,
//! `__agent_surface_procedures_<16 hex digits>` hashed from the manifest
//! digest and where `manifest!` was written, and re-exported in the
//! invoking module as [`LOOKUP_MACRO`]. `api::__agent_surface_procedures!`
//! therefore resolves when `api` is a module of the same crate (`api`,
//! `crate::api`, `super::api`), the root of the same crate (`crate`), or
//! another crate (`api` in a crate that depends on the `api` crate). Two
//! `manifest!` invocations written at the same place (one `macro_rules!`
//! expanding the same manifest twice) would get the same name; write them
//! at different places.

use proc_macro2::{Ident, Literal, Span, TokenStream};
use quote::{format_ident, quote, ToTokens};
use syn::ext::IdentExt;
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{DeriveInput, LitInt, LitStr, Token};

use crate::tokens::{ident_from_source, option_depth, tidy_type_text};
use crate::types::{AdditionalProperties, InputObject};

/// Name under which the lookup macro is reachable in the invoking module
/// (`api::__agent_surface_procedures!`).
pub const LOOKUP_MACRO: &str = "__agent_surface_procedures";

/// Name under which the invoking module re-exports the facade's private
/// module, through which the binding expansion names every support item.
pub const PRIVATE_ALIAS: &str = "__agent_surface_private";

/// The keys of the protocol, each a keyword so a wrong key is a parse error.
mod kw {
    syn::custom_keyword!(additional_properties);
    syn::custom_keyword!(allowed);
    syn::custom_keyword!(api);
    syn::custom_keyword!(bound);
    syn::custom_keyword!(fields);
    syn::custom_keyword!(forbidden);
    syn::custom_keyword!(input);
    syn::custom_keyword!(item);
    syn::custom_keyword!(module);
    syn::custom_keyword!(not_nullable);
    syn::custom_keyword!(nullable);
    syn::custom_keyword!(object);
    syn::custom_keyword!(opaque);
    syn::custom_keyword!(optional);
    syn::custom_keyword!(overridable);
    syn::custom_keyword!(path);
    syn::custom_keyword!(required);
    syn::custom_keyword!(role);
    syn::custom_keyword!(typed);
    syn::custom_keyword!(user_path);
}

/// Parses `key =`; the error says the crates disagree about the protocol.
fn key<K: Parse>(input: ParseStream<'_>, name: &str) -> syn::Result<()> {
    input.parse::<K>().map_err(|e| {
        syn::Error::new(
            e.span(),
            format!(
                "internal: expected the fact `{name}` (mismatched agent-surface crate versions?)"
            ),
        )
    })?;
    input.parse::<Token![=]>()?;
    Ok(())
}

/// Parses an optional trailing comma between facts.
fn comma(input: ParseStream<'_>) -> syn::Result<()> {
    if !input.is_empty() {
        input.parse::<Token![,]>()?;
    }
    Ok(())
}

impl ToTokens for AdditionalProperties {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        tokens.extend(match self {
            AdditionalProperties::Forbidden => quote!(forbidden),
            AdditionalProperties::Allowed => quote!(allowed),
            AdditionalProperties::Typed => quote!(typed),
        });
    }
}

impl Parse for AdditionalProperties {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let lookahead = input.lookahead1();
        if lookahead.peek(kw::forbidden) {
            input.parse::<kw::forbidden>()?;
            Ok(AdditionalProperties::Forbidden)
        } else if lookahead.peek(kw::allowed) {
            input.parse::<kw::allowed>()?;
            Ok(AdditionalProperties::Allowed)
        } else if lookahead.peek(kw::typed) {
            input.parse::<kw::typed>()?;
            Ok(AdditionalProperties::Typed)
        } else {
            Err(lookahead.error())
        }
    }
}

/// A `bool` fact written as one of two keywords (`required`/`optional`).
fn flag<Yes: Parse, No: Parse>(
    input: ParseStream<'_>,
    peek_yes: impl FnOnce(ParseStream<'_>) -> bool,
) -> syn::Result<bool> {
    if peek_yes(input) {
        input.parse::<Yes>()?;
        Ok(true)
    } else {
        input.parse::<No>()?;
        Ok(false)
    }
}

/// One top-level property of an object input:
/// `("deviceIds", device_ids, required, not_nullable, 0, "Vec<String>")`.
#[derive(Clone, Debug, PartialEq, Eq)]
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

impl ToTokens for FactField {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        let json = &self.json;
        let ident = &self.ident;
        let required = if self.required {
            quote!(required)
        } else {
            quote!(optional)
        };
        let nullable = if self.nullable {
            quote!(nullable)
        } else {
            quote!(not_nullable)
        };
        let depth = Literal::usize_unsuffixed(self.depth);
        let text = &self.ty_text;
        tokens.extend(quote!((#json, #ident, #required, #nullable, #depth, #text)));
    }
}

impl Parse for FactField {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let content;
        syn::parenthesized!(content in input);
        let json: LitStr = content.parse()?;
        content.parse::<Token![,]>()?;
        let ident = content.call(Ident::parse_any)?;
        content.parse::<Token![,]>()?;
        let required = flag::<kw::required, kw::optional>(&content, |c| c.peek(kw::required))?;
        content.parse::<Token![,]>()?;
        let nullable = flag::<kw::nullable, kw::not_nullable>(&content, |c| c.peek(kw::nullable))?;
        content.parse::<Token![,]>()?;
        let depth: LitInt = content.parse()?;
        content.parse::<Token![,]>()?;
        let ty_text: LitStr = content.parse()?;
        Ok(FactField {
            json: json.value(),
            ident,
            required,
            nullable,
            depth: depth.base10_parse()?,
            ty_text: ty_text.value(),
        })
    }
}

/// The input of an object procedure: `object { additional_properties = …,
/// fields = [(…), …] }`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectFacts {
    /// `additionalProperties`.
    pub additional: AdditionalProperties,
    /// Top-level properties, in the order of the generated struct.
    pub fields: Vec<FactField>,
}

/// What `manifest!` knows about one procedure that the binding checks
/// need: `path = "…", module = (…), input = object { … } | opaque`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProcedureFacts {
    /// The dotted router path.
    pub path: String,
    /// Module of the procedure relative to the invoking module
    /// (`devices::disable`).
    pub module: Vec<Ident>,
    /// `Some` when the input is an object with `properties`.
    pub input: Option<ObjectFacts>,
}

impl ProcedureFacts {
    /// The facts of the procedure at `path`, generated in `module`, whose
    /// input converted to `object` (`None`: not an object with
    /// `properties`).
    pub fn new(path: &str, module: &[Ident], object: Option<&InputObject>) -> Self {
        let mut types = std::collections::HashMap::new();
        let input = object.map(|object| ObjectFacts {
            additional: object.additional_properties,
            fields: object
                .fields
                .iter()
                .map(|f| {
                    let (depth, ty_text) = type_facts(&f.value_ty, &mut types);
                    FactField {
                        json: f.json_name.clone(),
                        ident: ident_from_source(&f.ident, Span::call_site()),
                        required: f.required,
                        nullable: f.nullable,
                        depth,
                        ty_text,
                    }
                })
                .collect(),
        });
        ProcedureFacts {
            path: path.to_string(),
            module: module.to_vec(),
            input,
        }
    }
}

/// A type's text as the user writes it in a field: the facade's
/// `<crate>::__private::serde_json::` path is `serde_json::`
/// (`::agent_surface::__private::serde_json::Number` → `serde_json::Number`).
fn user_type_text(text: &str) -> String {
    const PRIVATE: &str = "__private::serde_json::";
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(PRIVATE) {
        // Drop the path before `__private` (`::agent_surface::`).
        let head = &rest[..at];
        let keep =
            head.trim_end_matches(|c: char| c.is_ascii_alphanumeric() || c == '_' || c == ':');
        out.push_str(keep);
        if keep.ends_with(',') {
            out.push(' ');
        }
        out.push_str("serde_json::");
        rest = &rest[at + PRIVATE.len()..];
    }
    out.push_str(rest);
    out
}

/// `(Option depth, readable text)` of a type written as tokens, parsed
/// once per distinct type (a procedure's properties mostly share a few).
fn type_facts(
    tokens: &TokenStream,
    cache: &mut std::collections::HashMap<String, (usize, String)>,
) -> (usize, String) {
    let key = tokens.to_string();
    if let Some(facts) = cache.get(&key) {
        return facts.clone();
    }
    let facts = match syn::parse2::<syn::Type>(tokens.clone()) {
        Ok(ty) => (
            option_depth(&ty),
            user_type_text(&tidy_type_text(&quote!(#ty).to_string())),
        ),
        Err(_) => (0, user_type_text(&tidy_type_text(&key))),
    };
    cache.insert(key, facts.clone());
    facts
}

impl ToTokens for ProcedureFacts {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        let path = &self.path;
        let module = &self.module;
        let input = match &self.input {
            None => quote!(opaque),
            Some(ObjectFacts { additional, fields }) => quote! {
                object { additional_properties = #additional, fields = [#(#fields),*] }
            },
        };
        tokens.extend(quote! {
            path = #path, module = (#(#module)::*), input = #input,
        });
    }
}

impl Parse for ProcedureFacts {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        key::<kw::path>(input, "path")?;
        let path: LitStr = input.parse()?;
        input.parse::<Token![,]>()?;
        key::<kw::module>(input, "module")?;
        let content;
        syn::parenthesized!(content in input);
        let module = Punctuated::<Ident, Token![::]>::parse_separated_nonempty_with(
            &content,
            Ident::parse_any,
        )?;
        input.parse::<Token![,]>()?;
        key::<kw::input>(input, "input")?;
        let object = if input.peek(kw::opaque) {
            input.parse::<kw::opaque>()?;
            None
        } else {
            input.parse::<kw::object>()?;
            let content;
            syn::braced!(content in input);
            key::<kw::additional_properties>(&content, "additional_properties")?;
            let additional = content.parse()?;
            content.parse::<Token![,]>()?;
            key::<kw::fields>(&content, "fields")?;
            let list;
            syn::bracketed!(list in content);
            let fields = Punctuated::<FactField, Token![,]>::parse_terminated(&list)?;
            Some(ObjectFacts {
                additional,
                fields: fields.into_iter().collect(),
            })
        };
        comma(input)?;
        Ok(ProcedureFacts {
            path: path.value(),
            module: module.into_iter().collect(),
            input: object,
        })
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

impl ToTokens for Role {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        tokens.extend(match self {
            Role::Bound => quote!(bound),
            Role::Input => quote!(input),
        });
    }
}

impl Parse for Role {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        flag::<kw::input, kw::bound>(input, |i| i.peek(kw::input)).map(|full| {
            if full {
                Role::Input
            } else {
                Role::Bound
            }
        })
    }
}

/// What the user asked for, forwarded by the attribute through the lookup
/// macro: `user_path = "…", role = bound|input, overridable = [a, b],
/// item = { struct … }`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BindingRequest {
    /// The path literal as the user wrote it (errors about the path point
    /// at it).
    pub user_path: LitStr,
    /// Bound subset or full input.
    pub role: Role,
    /// `overridable(a, b)`: bound fields the agent may override.
    pub overridable: Vec<Ident>,
    /// The user's struct, with its `#[agent_procedure(…)]` field attributes.
    pub item: DeriveInput,
}

impl ToTokens for BindingRequest {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        let BindingRequest {
            user_path,
            role,
            overridable,
            item,
        } = self;
        tokens.extend(quote! {
            user_path = #user_path,
            role = #role,
            overridable = [#(#overridable),*],
            item = { #item }
        });
    }
}

impl Parse for BindingRequest {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        key::<kw::user_path>(input, "user_path")?;
        let user_path = input.parse()?;
        input.parse::<Token![,]>()?;
        key::<kw::role>(input, "role")?;
        let role = input.parse()?;
        input.parse::<Token![,]>()?;
        key::<kw::overridable>(input, "overridable")?;
        let list;
        syn::bracketed!(list in input);
        let overridable =
            Punctuated::<Ident, Token![,]>::parse_terminated_with(&list, Ident::parse_any)?;
        input.parse::<Token![,]>()?;
        key::<kw::item>(input, "item")?;
        let content;
        syn::braced!(content in input);
        let item = content.parse()?;
        comma(input)?;
        Ok(BindingRequest {
            user_path,
            role,
            overridable: overridable.into_iter().collect(),
            item,
        })
    }
}

/// The attribute's expansion after the struct: the call of the lookup
/// macro in `api`, `api::__agent_surface_procedures! { "path" (api)
/// <request> }`. The lookup macro's name carries the path literal's span,
/// so "cannot find macro" (a wrong `api`) points at the user's tokens.
pub struct LookupCall<'a> {
    /// The user's `api` path.
    pub api: &'a syn::Path,
    /// What the user asked for (its `user_path` is the literal the arms
    /// match on).
    pub request: &'a BindingRequest,
}

impl ToTokens for LookupCall<'_> {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        let api = self.api;
        let path = &self.request.user_path;
        let request = self.request;
        let mut lookup_path = api.clone();
        lookup_path
            .segments
            .push(format_ident!("{}", LOOKUP_MACRO, span = path.span()).into());
        tokens.extend(quote! {
            #lookup_path! { #path (#api) #request }
        });
    }
}

/// The input of `agent_procedure_impl!`: `api = (…)`, the procedure's
/// [`ProcedureFacts`] and the user's [`BindingRequest`].
#[derive(Clone, Debug)]
pub struct ImplInput {
    /// The user's `api` path, as written.
    pub api: TokenStream,
    /// What the manifest says.
    pub facts: ProcedureFacts,
    /// What the user asked for.
    pub request: BindingRequest,
}

impl ImplInput {
    /// `api::__agent_surface_private`: the facade's private module, as the
    /// user's crate reaches it.
    pub fn private_path(&self) -> TokenStream {
        let api = &self.api;
        let alias = format_ident!("{}", PRIVATE_ALIAS);
        quote!(#api::#alias)
    }
}

/// The tokens of an [`ImplInput`] from its three parts; the lookup arms
/// pass `$($api)*` and `$($request)*` for the first and last.
fn impl_tokens(api: &dyn ToTokens, facts: &ProcedureFacts, request: &dyn ToTokens) -> TokenStream {
    quote!(api = (#api), #facts #request)
}

impl ToTokens for ImplInput {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        tokens.extend(impl_tokens(&self.api, &self.facts, &self.request));
    }
}

impl Parse for ImplInput {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        key::<kw::api>(input, "api")?;
        let content;
        syn::parenthesized!(content in input);
        let api = content.parse()?;
        input.parse::<Token![,]>()?;
        let facts = input.parse()?;
        let request = input.parse()?;
        Ok(ImplInput {
            api,
            facts,
            request,
        })
    }
}

/// The input of `agent_procedure_unknown!`: the user's path literal and
/// every manifest path, `"devices.disabel", ["devices.disable", …]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownPath {
    /// The user's literal.
    pub path: LitStr,
    /// All paths of the manifest.
    pub all: Vec<String>,
}

/// The tokens of an [`UnknownPath`]; the fallback arm passes `$path`.
fn unknown_tokens(path: &dyn ToTokens, all: &[String]) -> TokenStream {
    quote!(#path, [#(#all),*])
}

impl ToTokens for UnknownPath {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        tokens.extend(unknown_tokens(&self.path, &self.all));
    }
}

impl Parse for UnknownPath {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let path = match input.parse::<syn::Lit>()? {
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
        let list = Punctuated::<LitStr, Token![,]>::parse_terminated(&content)?;
        Ok(UnknownPath {
            path,
            all: list.into_iter().map(|l| l.value()).collect(),
        })
    }
}

/// The lookup macro and its re-exports, emitted at the end of the
/// `manifest!` expansion: the `#[macro_export]`ed `macro_rules!` named
/// `__agent_surface_procedures_<hash>` (one arm per procedure, then the
/// unknown-path arm), its re-export as [`LOOKUP_MACRO`], and the facade's
/// private module re-exported as [`PRIVATE_ALIAS`].
///
/// `krate` is the facade path as the invoking module names it; `unique` is
/// the 16-hex-digit hash that makes the exported name unique in its crate.
pub fn lookup_macro(
    krate: &TokenStream,
    unique: &str,
    procedures: &[ProcedureFacts],
) -> TokenStream {
    let exported = format_ident!("{}_{}", LOOKUP_MACRO, unique);
    let name = format_ident!("{}", LOOKUP_MACRO);
    let private = format_ident!("{}", PRIVATE_ALIAS);
    let arms = procedures.iter().map(|facts| {
        let path = &facts.path;
        let body = impl_tokens(&quote!($($api)*), facts, &quote!($($request)*));
        quote! {
            (#path ($($api:tt)*) $($request:tt)*) => {
                $($api)*::#private::agent_procedure_impl! { #body }
            };
        }
    });
    let all: Vec<String> = procedures.iter().map(|f| f.path.clone()).collect();
    let unknown = unknown_tokens(&quote!($path), &all);
    quote! {
        #[doc(hidden)]
        #[macro_export]
        macro_rules! #exported {
            #(#arms)*
            ($path:tt ($($api:tt)*) $($request:tt)*) => {
                $($api)*::#private::agent_procedure_unknown! { #unknown }
            };
        }
        #[doc(hidden)]
        #[allow(unused_imports)]
        pub use #exported as #name;
        #[doc(hidden)]
        #[allow(unused_imports)]
        pub use #krate::__private as #private;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_text_names_serde_json_as_the_user_writes_it() {
        let mut cache = std::collections::HashMap::new();
        let cases = [
            (
                quote!(::agent_surface::__private::serde_json::Number),
                "serde_json::Number",
            ),
            (
                quote!(Vec<Option<::my::facade::__private::serde_json::Value>>),
                "Vec<Option<serde_json::Value>>",
            ),
            (
                quote!(::std::collections::BTreeMap<String, ::k::__private::serde_json::Number>),
                "::std::collections::BTreeMap<String, serde_json::Number>",
            ),
            (quote!(Option<i64>), "Option<i64>"),
        ];
        for (tokens, text) in cases {
            assert_eq!(type_facts(&tokens, &mut cache).1, text);
        }
    }

    fn ident(s: &str) -> Ident {
        ident_from_source(s, Span::call_site())
    }

    fn object_facts() -> ProcedureFacts {
        ProcedureFacts {
            path: "devices.disable".into(),
            module: vec![ident("devices"), ident("disable")],
            input: Some(ObjectFacts {
                additional: AdditionalProperties::Forbidden,
                fields: vec![
                    FactField {
                        json: "deviceIds".into(),
                        ident: ident("device_ids"),
                        required: true,
                        nullable: false,
                        depth: 0,
                        ty_text: "Vec<String>".into(),
                    },
                    FactField {
                        json: "type".into(),
                        ident: ident("r#type"),
                        required: false,
                        nullable: true,
                        depth: 1,
                        ty_text: "Option<String>".into(),
                    },
                ],
            }),
        }
    }

    #[test]
    fn procedure_facts_parse_back_to_what_was_emitted() {
        for facts in [
            object_facts(),
            ProcedureFacts {
                path: "agent.echo".into(),
                module: vec![ident("agent"), ident("echo")],
                input: None,
            },
        ] {
            let parsed: ProcedureFacts = syn::parse2(facts.to_token_stream()).unwrap();
            assert_eq!(parsed, facts);
        }
        for additional in [
            AdditionalProperties::Forbidden,
            AdditionalProperties::Allowed,
            AdditionalProperties::Typed,
        ] {
            let parsed: AdditionalProperties = syn::parse2(additional.to_token_stream()).unwrap();
            assert_eq!(parsed, additional);
        }
    }

    #[test]
    fn binding_request_and_unknown_path_parse_back() {
        for role in [Role::Bound, Role::Input] {
            let request = BindingRequest {
                user_path: LitStr::new("devices.disable", Span::call_site()),
                role,
                overridable: vec![ident("reason"), ident("r#type")],
                item: syn::parse_quote!(
                    struct S {
                        reason: Option<String>,
                    }
                ),
            };
            let parsed: BindingRequest = syn::parse2(request.to_token_stream()).unwrap();
            assert_eq!(parsed, request);
        }
        let unknown = UnknownPath {
            path: LitStr::new("devices.disabel", Span::call_site()),
            all: vec!["devices.disable".into(), "devices.list".into()],
        };
        let parsed: UnknownPath = syn::parse2(unknown.to_token_stream()).unwrap();
        assert_eq!(parsed, unknown);
    }

    #[test]
    fn impl_input_parses_back_with_its_api_path() {
        let input = ImplInput {
            api: quote!(crate::api),
            facts: object_facts(),
            request: BindingRequest {
                user_path: LitStr::new("devices.disable", Span::call_site()),
                role: Role::Bound,
                overridable: vec![],
                item: syn::parse_quote!(
                    struct S {
                        device_ids: Vec<String>,
                    }
                ),
            },
        };
        let parsed: ImplInput = syn::parse2(input.to_token_stream()).unwrap();
        assert_eq!(parsed.api.to_string(), "crate :: api");
        assert_eq!(parsed.facts, input.facts);
        assert_eq!(parsed.request, input.request);
        assert_eq!(
            parsed.private_path().to_string(),
            "crate :: api :: __agent_surface_private"
        );
    }

    #[test]
    fn a_wrong_key_is_an_error_naming_the_expected_fact() {
        let err =
            syn::parse2::<ProcedureFacts>(quote!(path = "a.b", modul = (a::b), input = opaque))
                .unwrap_err();
        assert_eq!(
            err.to_string(),
            "internal: expected the fact `module` (mismatched agent-surface crate versions?)"
        );
        let err = syn::parse2::<AdditionalProperties>(quote!(sometimes)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "expected one of: `forbidden`, `allowed`, `typed`"
        );
    }

    #[test]
    fn lookup_macro_arms_forward_the_facts_and_the_request() {
        let tokens = lookup_macro(
            &quote!(::agent_surface),
            "0123456789abcdef",
            &[object_facts()],
        );
        let text = tokens.to_string();
        assert!(text.contains("macro_rules ! __agent_surface_procedures_0123456789abcdef"));
        assert!(text.contains(
            "pub use __agent_surface_procedures_0123456789abcdef as __agent_surface_procedures"
        ));
        assert!(text.contains("pub use :: agent_surface :: __private as __agent_surface_private"));
        // The arm's body is an `ImplInput` once `$api` and `$request` are
        // substituted: the emitted facts are exactly `object_facts()`.
        let arm = impl_tokens(
            &quote!(crate::api),
            &object_facts(),
            &BindingRequest {
                user_path: LitStr::new("devices.disable", Span::call_site()),
                role: Role::Input,
                overridable: vec![],
                item: syn::parse_quote!(
                    struct S;
                ),
            },
        );
        let parsed: ImplInput = syn::parse2(arm).unwrap();
        assert_eq!(parsed.facts, object_facts());
    }
}
