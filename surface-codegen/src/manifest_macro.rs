//! The `manifest!` expansion (SPEC §3, §4; issue "codegen" item 3):
//! parse the macro arguments → read and validate the manifest → emit the
//! module tree, the refs, the authority and the lookup macro that
//! `#[agent_procedure]` consults.
//!
//! Everything here is a plain function over `proc_macro2` tokens so it can
//! be unit-tested, snapshot-tested and benchmarked outside a proc macro.
//!
//! # What one invocation emits
//!
//! In the module where `manifest!("…")` is invoked:
//!
//! * `pub const MANIFEST_JSON: &str = include_str!("<canonical absolute
//!   path>");` — the manifest text, which also makes rustc rebuild the crate
//!   when the JSON changes;
//! * `pub const MANIFEST_DIGEST: &str` — [`AgentManifest::digest`] computed
//!   at compile time;
//! * `pub fn authority() -> Authority` — the compiler-generated authority,
//!   built once (a `std::sync::OnceLock`) by `Authority::from_generated`
//!   with the compile-time digests;
//! * one module per path segment mirroring the router (`devices::disable`),
//!   the last holding `Input`, `Output` (from
//!   [`crate::types::generate_procedure_types`]), `Field` (the input's
//!   top-level properties) and `PATH`; beside it a function of the same name
//!   (`devices::disable()`) returning the typed `AgentProcedureRef`;
//! * the hidden lookup macro `__agent_surface_procedures!`, made
//!   path-addressable with `pub(crate) use`, that `#[agent_procedure]`
//!   expands through (see [`crate::binding`]).
//!
//! # Segment → identifier mapping
//!
//! Path segments become identifiers by
//! [`surface_runtime::manifest::segment_to_ident`]: `-` → `_`, snake_case
//! (`listAll` → `list_all`, `HTTPStatus` → `http_status`), Rust keywords as
//! raw identifiers (`type` → `r#type`), `self`/`super`/`crate`/`Self` with a
//! trailing underscore (`self_`); prototype names (`__proto__`, `prototype`,
//! `constructor`), segments starting with a digit or holding other
//! characters are rejected. A root-level procedure named `authority` is
//! rejected because it would clash with the generated `authority()`.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use proc_macro2::{Ident, Literal, Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use surface_runtime::manifest::{
    canonical_capability_id, path_to_rust, procedure_digest, AgentManifest, ManifestError,
    ManifestIssue, ManifestTool,
};
use syn::parse::{Parse, ParseStream};
use syn::{LitStr, Token};

use crate::doc::{doc_attrs, DocText};
use crate::types::names::NameSet;
use crate::types::{generate_procedure_types, AdditionalProperties, InputObject, TypeOptions};

/// Names `manifest!` emits at the root of the invoking module; a root-level
/// procedure whose function would have one of these names is rejected.
pub const RESERVED_ROOT_NAMES: [&str; 3] = ["authority", "MANIFEST_JSON", "MANIFEST_DIGEST"];

/// Most segments a procedure path may have: each is a nested module, and
/// the expansion (like rustc after it) recurses once per level.
pub const MAX_PATH_SEGMENTS: usize = 32;

/// Name of the hidden lookup macro `manifest!` emits.
pub const LOOKUP_MACRO: &str = "__agent_surface_procedures";

/// The arguments of `manifest!("path.json")` / `manifest!("path.json",
/// crate = some::path)`.
#[derive(Clone)]
pub struct ManifestArgs {
    /// The manifest path as written (relative to `CARGO_MANIFEST_DIR`).
    pub path: LitStr,
    /// Path of the facade crate generated code names, default
    /// `::agent_surface`.
    pub crate_path: Option<syn::Path>,
}

impl Parse for ManifestArgs {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        if input.is_empty() {
            return Err(input.error(
                "expected the manifest path: `manifest!(\"relative/path/to/agent.manifest.json\")`",
            ));
        }
        let path: LitStr = input.parse().map_err(|e| {
            syn::Error::new(
                e.span(),
                "expected the manifest path as a string literal, relative to the crate root: `manifest!(\"agent.manifest.json\")`",
            )
        })?;
        let mut crate_path = None;
        while !input.is_empty() {
            input.parse::<Token![,]>()?;
            if input.is_empty() {
                break;
            }
            let key: Ident = input.call(syn::ext::IdentExt::parse_any)?;
            if key != "crate" {
                return Err(syn::Error::new(
                    key.span(),
                    format!("unknown `manifest!` argument `{key}`; the only option is `crate = path::to::agent_surface`"),
                ));
            }
            input.parse::<Token![=]>()?;
            if crate_path.is_some() {
                return Err(syn::Error::new(key.span(), "`crate` is given twice"));
            }
            crate_path = Some(input.call(syn::Path::parse_mod_style)?);
        }
        Ok(ManifestArgs { path, crate_path })
    }
}

/// Options of [`expand_manifest_text`].
#[derive(Clone, Debug)]
pub struct ExpandOptions {
    /// Facade crate path (`::agent_surface`), also passed to the type
    /// converter as [`TypeOptions::crate_path`].
    pub crate_path: TokenStream,
    /// The path emitted in `include_str!` (canonical and absolute when
    /// called from the macro; any stable text in snapshot tests).
    pub include_path: String,
    /// The path as the user wrote it, for messages.
    pub display_path: String,
}

/// The `manifest!` entry point: parses the arguments, resolves the path
/// against `CARGO_MANIFEST_DIR`, reads, validates and expands. Every error
/// becomes a `compile_error!` spanned on the path literal.
pub fn expand_manifest(input: TokenStream) -> TokenStream {
    let args: ManifestArgs = match syn::parse2(input) {
        Ok(args) => args,
        Err(e) => return e.to_compile_error(),
    };
    let manifest_dir = std::env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from);
    match expand_manifest_args(&args, manifest_dir.as_deref()) {
        Ok(tokens) => tokens,
        Err(e) => e.to_compile_error(),
    }
}

/// [`expand_manifest`] after argument parsing, with the crate root given
/// explicitly (unit tests).
///
/// # Errors
/// Spanned on the path literal: an absolute path, a missing or unreadable
/// file, invalid JSON (with line and column), or any [`ManifestIssue`].
pub fn expand_manifest_args(
    args: &ManifestArgs,
    manifest_dir: Option<&Path>,
) -> syn::Result<TokenStream> {
    let span = args.path.span();
    let written = args.path.value();
    let file = resolve_manifest_path(&written, manifest_dir, span)?;
    let text = std::fs::read_to_string(&file).map_err(|e| {
        syn::Error::new(
            span,
            format!(
                "cannot read the agent manifest `{written}` (looked for `{}`): {e}; relative paths are resolved against the including crate's root (CARGO_MANIFEST_DIR)",
                real_location(&file).display()
            ),
        )
    })?;
    let canonical = std::fs::canonicalize(&file).unwrap_or(file);
    let crate_path = match &args.crate_path {
        Some(p) => quote!(#p),
        None => quote!(::agent_surface),
    };
    let options = ExpandOptions {
        crate_path,
        include_path: canonical.to_string_lossy().into_owned(),
        display_path: written,
    };
    expand_manifest_text(&text, &options, span)
}

/// Where `file` really is: its directory with symbolic links resolved when
/// that directory exists (the file itself may be missing), else `file`.
fn real_location(file: &Path) -> PathBuf {
    match (file.parent(), file.file_name()) {
        (Some(dir), Some(name)) => std::fs::canonicalize(dir)
            .map(|dir| dir.join(name))
            .unwrap_or_else(|_| file.to_path_buf()),
        _ => file.to_path_buf(),
    }
}

/// Resolves the path written in `manifest!` against the crate root.
///
/// # Errors
/// An absolute path (it would only work on the machine that wrote it), an
/// empty path, or a missing `CARGO_MANIFEST_DIR`.
pub fn resolve_manifest_path(
    written: &str,
    manifest_dir: Option<&Path>,
    span: Span,
) -> syn::Result<PathBuf> {
    if written.is_empty() {
        return Err(syn::Error::new(
            span,
            "the manifest path is empty; give a path relative to the crate root, e.g. `manifest!(\"agent.manifest.json\")`",
        ));
    }
    let p = Path::new(written);
    if p.is_absolute() || written.starts_with('/') || written.starts_with('\\') {
        return Err(syn::Error::new(
            span,
            format!("absolute manifest paths only work on the machine that wrote them: `{written}`; give a path relative to the crate root (CARGO_MANIFEST_DIR)"),
        ));
    }
    let Some(dir) = manifest_dir else {
        return Err(syn::Error::new(
            span,
            "CARGO_MANIFEST_DIR is not set; `manifest!` must be compiled by cargo",
        ));
    };
    Ok(normalize_lexically(&dir.join(p)))
}

/// Removes `.` and resolves `..` components without touching the file
/// system (for readable messages about files that do not exist).
fn normalize_lexically(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// Turns manifest text into the `manifest!` expansion. This is the plain
/// expansion function benchmarked and snapshot-tested.
///
/// # Errors
/// One combined [`syn::Error`] spanned at `span` listing every problem:
/// invalid JSON (line and column), every [`ManifestIssue`], root-level
/// procedures that clash with [`RESERVED_ROOT_NAMES`], and paths of more
/// than [`MAX_PATH_SEGMENTS`] segments.
pub fn expand_manifest_text(
    text: &str,
    options: &ExpandOptions,
    span: Span,
) -> syn::Result<TokenStream> {
    let shown = &options.display_path;
    let manifest =
        AgentManifest::from_json_str(text).map_err(|e| manifest_error(e, shown, span))?;
    check_reserved(&manifest, shown, span)?;
    Ok(Generator::new(&manifest, options, span).generate())
}

fn manifest_error(error: ManifestError, shown: &str, span: Span) -> syn::Error {
    match error {
        ManifestError::Json {
            line,
            column,
            message,
        } => syn::Error::new(
            span,
            format!("invalid agent manifest `{shown}` at line {line}, column {column}: {message}; the file must be a JSON object `{{\"tools\": {{\"<dot.path>\": {{\"inputSchema\": …, \"effect\": …}}}}}}` (SPEC §3)"),
        ),
        ManifestError::Invalid(issues) => {
            let mut errors = issues
                .iter()
                .map(|issue| syn::Error::new(span, issue_message(issue, shown)));
            let mut first = errors
                .next()
                .unwrap_or_else(|| syn::Error::new(span, format!("invalid agent manifest `{shown}`")));
            for e in errors {
                first.combine(e);
            }
            first
        }
    }
}

fn issue_message(issue: &ManifestIssue, shown: &str) -> String {
    format!("invalid agent manifest `{shown}`: {issue}")
}

fn check_reserved(manifest: &AgentManifest, shown: &str, span: Span) -> syn::Result<()> {
    let mut error: Option<syn::Error> = None;
    for path in manifest.tools.keys() {
        let Ok(rust) = path_to_rust(path) else {
            continue;
        };
        if rust.len() > MAX_PATH_SEGMENTS {
            let shown_path: String = path.chars().take(120).collect();
            let e = syn::Error::new(
                span,
                format!(
                    "invalid agent manifest `{shown}`: the procedure path `{shown_path}{}` has {} segments; `manifest!` generates one nested module per segment and supports at most {MAX_PATH_SEGMENTS}",
                    if shown_path.len() < path.len() { "…" } else { "" },
                    rust.len()
                ),
            );
            match &mut error {
                Some(first) => first.combine(e),
                None => error = Some(e),
            }
            continue;
        }
        if rust.len() == 1 && RESERVED_ROOT_NAMES.contains(&rust[0].as_str()) {
            let e = syn::Error::new(
                span,
                format!(
                    "invalid agent manifest `{shown}`: the root-level procedure `{path}` would generate `fn {}`, which clashes with the generated `authority()`; nest it under a router namespace (e.g. `admin.{path}`)",
                    rust[0]
                ),
            );
            match &mut error {
                Some(first) => first.combine(e),
                None => error = Some(e),
            }
        }
    }
    match error {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// An identifier from source text as [`segment_to_ident`] or the type
/// converter writes it (`list_all`, `r#type`).
///
/// [`segment_to_ident`]: surface_runtime::manifest::segment_to_ident
pub fn ident_from_source(text: &str, span: Span) -> Ident {
    match text.strip_prefix("r#") {
        Some(raw) => Ident::new_raw(raw, span),
        None => Ident::new(text, span),
    }
}

/// One node of the router tree.
#[derive(Default)]
struct Node<'m> {
    children: BTreeMap<String, Node<'m>>,
    procedure: Option<(&'m str, &'m ManifestTool)>,
}

struct Generator<'m> {
    manifest: &'m AgentManifest,
    options: &'m ExpandOptions,
    type_options: TypeOptions,
    span: Span,
}

/// Everything known about one procedure that the lookup macro forwards.
struct ProcedureEntry {
    path: String,
    module: Vec<Ident>,
    /// The facts `procedure_facts` computed for the lookup arm.
    facts: TokenStream,
}

impl<'m> Generator<'m> {
    fn new(manifest: &'m AgentManifest, options: &'m ExpandOptions, span: Span) -> Self {
        Generator {
            manifest,
            options,
            type_options: TypeOptions {
                crate_path: options.crate_path.clone(),
            },
            span,
        }
    }

    fn generate(&self) -> TokenStream {
        let krate = &self.options.crate_path;
        let mut root = Node::default();
        for (path, tool) in &self.manifest.tools {
            // Validation already guaranteed every path maps.
            let rust = path_to_rust(path).unwrap_or_default();
            let mut node = &mut root;
            for seg in rust {
                node = node.children.entry(seg).or_default();
            }
            node.procedure = Some((path.as_str(), tool));
        }
        let mut entries = Vec::new();
        let tree = self.emit_children(&root, &mut Vec::new(), &mut entries);

        let include_path = Literal::string(&self.options.include_path);
        let manifest_digest = self.manifest.digest();
        let generated = self.manifest.tools.iter().map(|(path, tool)| {
            let digest = procedure_digest(path, tool);
            quote! { #krate::__private::GeneratedProcedure { path: #path, digest: #digest } }
        });
        let shown = &self.options.display_path;
        let count = self.manifest.tools.len();
        let json_doc = doc_attrs(&[
            DocText::new()
                .ours("The agent manifest ")
                .code(shown.as_str())
                .ours(" (")
                .number(count)
                .ours(" procedures), embedded at compile time."),
            DocText::from(
                "Including it also makes rustc rebuild this crate when the file changes.",
            ),
        ]);
        let authority_panic = format!(
            "the manifest `{shown}` embedded by `manifest!` does not match the digests computed at compile time; rebuild with matching agent-surface crate versions"
        );
        let lookup = self.emit_lookup(&entries);
        let span = self.span;
        let include = quote_spanned!(span=> include_str!(#include_path));
        let mut tokens = quote! {
            #json_doc
            pub const MANIFEST_JSON: &str = #include;

            /// Hex SHA-256 of the whole manifest in canonical JSON, computed at
            /// compile time (`AgentManifest::digest`).
            pub const MANIFEST_DIGEST: &str = #manifest_digest;

            /// The compiler-generated authority: the ceiling of
            /// what this application may expose, with the per-procedure digests
            /// computed at compile time. Built once and cached; cheap to clone.
            ///
            /// # Panics
            /// Only if the embedded manifest disagrees with the compile-time
            /// digests, which means mismatched agent-surface crate versions.
            pub fn authority() -> #krate::Authority {
                static AUTHORITY: ::std::sync::OnceLock<#krate::Authority> =
                    ::std::sync::OnceLock::new();
                AUTHORITY
                    .get_or_init(|| {
                        match #krate::Authority::from_generated(
                            MANIFEST_JSON,
                            MANIFEST_DIGEST,
                            &[#(#generated),*],
                        ) {
                            ::core::result::Result::Ok(authority) => authority,
                            ::core::result::Result::Err(error) => {
                                ::core::panic!("{}: {}", #authority_panic, error)
                            }
                        }
                    })
                    .clone()
            }
        };
        // Moved, not interpolated: `quote!` would copy the whole tree.
        tokens.extend(tree);
        tokens.extend(lookup);
        tokens
    }

    fn emit_children(
        &self,
        node: &Node<'m>,
        prefix: &mut Vec<Ident>,
        entries: &mut Vec<ProcedureEntry>,
    ) -> TokenStream {
        let mut out = TokenStream::new();
        for (seg, child) in &node.children {
            let ident = ident_from_source(seg, Span::call_site());
            prefix.push(ident.clone());
            if let Some((path, tool)) = child.procedure {
                out.extend(self.emit_procedure(&ident, path, tool, prefix, entries));
            } else {
                let inner = self.emit_children(child, prefix, entries);
                let doc = doc_attrs(&[DocText::new()
                    .ours("Procedures under ")
                    .code(format!("{}.", prefix_path(child)))
                    .ours(" in the agent manifest.")]);
                out.extend(quote! {
                    #doc
                    pub mod #ident
                });
                // Moved, not interpolated: `quote!` would copy the subtree.
                out.extend(std::iter::once(proc_macro2::TokenTree::Group(
                    proc_macro2::Group::new(proc_macro2::Delimiter::Brace, inner),
                )));
            }
            prefix.pop();
        }
        out
    }

    fn emit_procedure(
        &self,
        ident: &Ident,
        path: &str,
        tool: &ManifestTool,
        module: &[Ident],
        entries: &mut Vec<ProcedureEntry>,
    ) -> TokenStream {
        let krate = &self.options.crate_path;
        let types = generate_procedure_types(
            &tool.input_schema,
            tool.output_schema.as_ref(),
            &self.type_options,
        );
        let field_enum = emit_field_enum(types.input_object.as_ref(), path);
        let field_aliases = emit_field_aliases(types.input_object.as_ref());
        let capability_id = canonical_capability_id(path, tool);
        let effect = tool.effect.as_str();
        let mut mod_doc = vec![
            DocText::new()
                .code(path)
                .ours(" — ")
                .append(description_line(&tool.description)),
            DocText::new()
                .ours("Effect ")
                .code(effect)
                .ours("; capability id ")
                .code(capability_id)
                .ours(if tool.requires_approval {
                    "; the server requires its own approval."
                } else {
                    "."
                }),
        ];
        mod_doc.extend(
            types
                .note_docs
                .iter()
                .map(|note| DocText::new().ours("Note: ").append(note.clone())),
        );
        // From the module holding `fn ident` up to the invoking module.
        let ups = module.len() - 1;
        let supers = (0..ups).map(|_| quote!(super::));
        let authority_path = if ups == 0 {
            quote!(self::authority)
        } else {
            quote!(#(#supers)* authority)
        };
        let fn_doc = [
            DocText::new()
                .ours("The typed reference to ")
                .code(path)
                .ours(" (id ")
                .code(format!("domain:{path}"))
                .ours(", effect ")
                .code(effect)
                .ours("), from ")
                .code(format!("{}authority()", "super::".repeat(ups)))
                .ours("."),
            description_line(&tool.description),
        ];
        let missing = format!("`{path}` is missing from the generated authority");
        let mod_doc = doc_attrs(&mod_doc);
        let fn_doc = doc_attrs(&fn_doc);
        entries.push(ProcedureEntry {
            path: path.to_string(),
            module: module.to_vec(),
            facts: procedure_facts(types.input_object.as_ref()),
        });
        // The module body is assembled by moving the pieces, not by
        // interpolating them (`quote!` would copy each).
        let mut body = types.items;
        body.extend(field_enum);
        body.extend(quote! {
            /// Dotted router path of this procedure.
            pub const PATH: &str = #path;
        });
        body.extend(field_aliases);
        let mut out = quote! {
            #mod_doc
            pub mod #ident
        };
        out.extend(std::iter::once(proc_macro2::TokenTree::Group(
            proc_macro2::Group::new(proc_macro2::Delimiter::Brace, body),
        )));
        out.extend(quote! {
            #fn_doc
            pub fn #ident() -> #krate::AgentProcedureRef<#ident::Input, #ident::Output> {
                match #krate::AgentProcedureRef::from_authority(&#authority_path(), #path) {
                    ::core::option::Option::Some(procedure) => procedure,
                    ::core::option::Option::None => ::core::panic!(#missing),
                }
            }
        });
        out
    }

    fn emit_lookup(&self, entries: &[ProcedureEntry]) -> TokenStream {
        let krate = &self.options.crate_path;
        let name = format_ident!("{}", LOOKUP_MACRO);
        let arms = entries.iter().map(|entry| {
            let path = &entry.path;
            let module = &entry.module;
            let facts = &entry.facts;
            quote! {
                (#path $($rest:tt)*) => {
                    #krate::__private::agent_procedure_impl! {
                        krate = (#krate),
                        path = #path,
                        module = (#(#module)::*),
                        #facts
                        $($rest)*
                    }
                };
            }
        });
        let all: Vec<&str> = entries.iter().map(|e| e.path.as_str()).collect();
        quote! {
            #[doc(hidden)]
            macro_rules! #name {
                #(#arms)*
                ($path:tt $($rest:tt)*) => {
                    #krate::__private::agent_procedure_unknown! { $path, [#(#all),*] }
                };
            }
            #[doc(hidden)]
            #[allow(unused_imports)]
            pub(crate) use #name;
        }
    }
}

fn prefix_path(node: &Node<'_>) -> String {
    // The dotted namespace of a namespace node: the first procedure below it,
    // minus its trailing segments.
    fn first<'a>(node: &'a Node<'a>, depth: usize) -> Option<(&'a str, usize)> {
        if let Some((p, _)) = node.procedure {
            return Some((p, depth));
        }
        node.children.values().find_map(|c| first(c, depth + 1))
    }
    match first(node, 0) {
        Some((path, below)) => {
            let segs: Vec<&str> = path.split('.').collect();
            segs[..segs.len() - below].join(".")
        }
        None => String::new(),
    }
}

/// A tool description as one paragraph, `(no description)` when blank.
fn description_line(description: &str) -> DocText {
    if description.trim().is_empty() {
        DocText::from("(no description)")
    } else {
        DocText::new().text(description)
    }
}

/// Number of syntactic `Option<…>` wrappers around a type written as tokens.
pub fn option_depth(ty: &syn::Type) -> usize {
    let mut depth = 0;
    let mut current = ty;
    loop {
        match option_inner(current) {
            Some(inner) => {
                depth += 1;
                current = inner;
            }
            None => return depth,
        }
    }
}

/// The `T` of a type written `Option<T>` (also `std::option::Option<T>`,
/// `core::option::Option<T>`), else `None`.
pub fn option_inner(ty: &syn::Type) -> Option<&syn::Type> {
    let syn::Type::Path(tp) = ty else { return None };
    if tp.qself.is_some() {
        return None;
    }
    let last = tp.path.segments.last()?;
    if last.ident != "Option" {
        return None;
    }
    let syn::PathArguments::AngleBracketed(args) = &last.arguments else {
        return None;
    };
    if args.args.len() != 1 {
        return None;
    }
    match args.args.first()? {
        syn::GenericArgument::Type(inner) => Some(inner),
        _ => None,
    }
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
        Ok(ty) => (option_depth(&ty), tidy_type_text(&quote!(#ty).to_string())),
        Err(_) => (0, tidy_type_text(&key)),
    };
    cache.insert(key, facts.clone());
    facts
}

/// The facts the lookup macro forwards to `agent_procedure_impl!` for one
/// procedure (after `krate`, `path`, `module`): `object`,
/// `additional_properties` and one tuple per top-level property
/// `("json", ident, required|optional, nullable|not_nullable, depth,
/// "type text")`, `depth` being the number of `Option` wrappers of the
/// property's present-value type.
fn procedure_facts(object: Option<&InputObject>) -> TokenStream {
    let Some(object) = object else {
        return quote! { object = false, additional_properties = allowed, fields = [], };
    };
    let additional = match object.additional_properties {
        AdditionalProperties::Forbidden => quote!(forbidden),
        AdditionalProperties::Allowed => quote!(allowed),
        AdditionalProperties::Typed => quote!(typed),
    };
    let mut types = std::collections::HashMap::new();
    let fields = object.fields.iter().map(|f| {
        let json = &f.json_name;
        let ident = ident_from_source(&f.ident, Span::call_site());
        let required = if f.required {
            quote!(required)
        } else {
            quote!(optional)
        };
        let nullable = if f.nullable {
            quote!(nullable)
        } else {
            quote!(not_nullable)
        };
        let (depth, text) = type_facts(&f.value_ty, &mut types);
        let depth = Literal::usize_unsuffixed(depth);
        quote! { (#json, #ident, #required, #nullable, #depth, #text) }
    });
    quote! {
        object = true,
        additional_properties = #additional,
        fields = [#(#fields),*],
    }
}

/// Readable source text of a type (`Vec<String>`), for messages.
pub fn type_text(tokens: &TokenStream) -> String {
    match syn::parse2::<syn::Type>(tokens.clone()) {
        Ok(ty) => {
            let s = quote!(#ty).to_string();
            tidy_type_text(&s)
        }
        Err(_) => tidy_type_text(&tokens.to_string()),
    }
}

fn tidy_type_text(s: &str) -> String {
    s.replace(" < ", "<")
        .replace("< ", "<")
        .replace(" <", "<")
        .replace(" >", ">")
        .replace(" ,", ",")
        .replace(":: ", "::")
        .replace(" ::", "::")
}

/// The `Field` enum of a procedure module: one variant per top-level input
/// property, `as_str()` giving the JSON name.
fn emit_field_enum(object: Option<&InputObject>, path: &str) -> TokenStream {
    let fields: &[crate::types::FieldInfo] = object.map(|o| o.fields.as_slice()).unwrap_or(&[]);
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
            d = d.ours(": ").append(description_line(desc));
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
    let mut out = String::new();
    let mut upper = true;
    for c in raw.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
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
fn emit_field_aliases(object: Option<&InputObject>) -> TokenStream {
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

    fn opts() -> ExpandOptions {
        ExpandOptions {
            crate_path: quote!(::agent_surface),
            include_path: "/fixtures/test.manifest.json".into(),
            display_path: "test.manifest.json".into(),
        }
    }

    fn err_text(text: &str) -> Vec<String> {
        expand_manifest_text(text, &opts(), Span::call_site())
            .unwrap_err()
            .into_iter()
            .map(|e| e.to_string())
            .collect()
    }

    #[test]
    fn s4_1_invalid_json_names_line_and_column() {
        let errs = err_text("{\n  \"tools\": {,}\n}");
        assert_eq!(errs.len(), 1);
        assert!(
            errs[0]
                .starts_with("invalid agent manifest `test.manifest.json` at line 2, column 13: "),
            "{}",
            errs[0]
        );
    }

    #[test]
    fn s4_1_every_issue_is_reported() {
        let t = r#"{"effect":"server-query","inputSchema":{}}"#;
        let text = format!(r#"{{"tools":{{"a.b":{t},"a.b.c":{t},"x.__proto__":{t},"a.b":{t}}}}}"#);
        let errs = err_text(&text);
        assert_eq!(errs.len(), 3, "{errs:?}");
        assert!(errs[0].contains("`a.b` appears more than once"));
        assert!(errs[1].contains("unsafe segment `__proto__`"));
        assert!(errs[2].contains("`a.b` is a prefix of `a.b.c`"));
    }

    #[test]
    fn s3_root_authority_procedure_is_reserved() {
        let errs =
            err_text(r#"{"tools":{"authority":{"effect":"server-query","inputSchema":{}}}}"#);
        assert_eq!(errs.len(), 1);
        assert!(errs[0].contains("clashes with the generated `authority()`"));
        // Nested `authority` segments are fine (different scope).
        assert!(expand_manifest_text(
            r#"{"tools":{"admin.authority":{"effect":"server-query","inputSchema":{}}}}"#,
            &opts(),
            Span::call_site()
        )
        .is_ok());
    }

    #[test]
    fn s4_1_absolute_paths_are_rejected() {
        let e = resolve_manifest_path(
            "/etc/agent.json",
            Some(Path::new("/crate")),
            Span::call_site(),
        )
        .unwrap_err();
        assert!(e
            .to_string()
            .starts_with("absolute manifest paths only work"));
        assert_eq!(
            resolve_manifest_path("../x/./a.json", Some(Path::new("/c/d")), Span::call_site())
                .unwrap(),
            PathBuf::from("/c/x/a.json")
        );
    }

    #[cfg(unix)]
    #[test]
    fn s4_1_missing_file_is_reported_at_its_real_location() {
        let root =
            std::env::temp_dir().join(format!("surface-real-location-{}", std::process::id()));
        let real = root.join("real");
        std::fs::create_dir_all(&real).unwrap();
        let link = root.join("link");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let expected = std::fs::canonicalize(&real).unwrap().join("missing.json");
        assert_eq!(real_location(&link.join("missing.json")), expected);
        // A directory that does not exist: the path as resolved.
        assert_eq!(
            real_location(Path::new("/no/such/dir/missing.json")),
            PathBuf::from("/no/such/dir/missing.json")
        );
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn s4_1_missing_file_names_the_resolved_path() {
        let args: ManifestArgs = syn::parse2(quote!("nope/missing.json")).unwrap();
        let e = expand_manifest_args(&args, Some(Path::new("/no/such/crate"))).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.starts_with("cannot read the agent manifest `nope/missing.json` (looked for `/no/such/crate/nope/missing.json`): "),
            "{msg}"
        );
    }

    #[test]
    fn s4_rebuild_include_str_names_the_canonical_absolute_path() {
        let args: ManifestArgs =
            syn::parse2(quote!("../tests/./fixtures/handwritten.manifest.json")).unwrap();
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
        let tokens = expand_manifest_args(&args, Some(dir)).unwrap().to_string();
        let canonical =
            std::fs::canonicalize(dir.join("../tests/fixtures/handwritten.manifest.json")).unwrap();
        assert!(canonical.is_absolute());
        let expected = format!("include_str ! ({:?})", canonical.to_string_lossy());
        assert!(tokens.contains(&expected), "{expected} not in expansion");
        assert!(!canonical.to_string_lossy().contains(".."));
    }

    #[test]
    fn args_accept_crate_override_and_reject_unknown() {
        let args: ManifestArgs = syn::parse2(quote!("a.json", crate = ::my::facade)).unwrap();
        let p = args.crate_path.unwrap();
        assert_eq!(quote!(#p).to_string(), ":: my :: facade");
        let err = syn::parse2::<ManifestArgs>(quote!("a.json", krate = x))
            .err()
            .unwrap();
        assert!(err
            .to_string()
            .starts_with("unknown `manifest!` argument `krate`"));
        assert!(syn::parse2::<ManifestArgs>(quote!(a_json)).is_err());
    }

    #[test]
    fn module_tree_mirrors_router_and_authority_digests_match_runtime() {
        let text = r#"{"tools":{
            "devices.disable":{"description":"Disable devices","effect":"server-mutation","inputSchema":{"type":"object"}},
            "devices.listAll":{"effect":"server-query","inputSchema":{"type":"object"}},
            "ping":{"effect":"server-query","inputSchema":{"type":"object"}}
        }}"#;
        let tokens = expand_manifest_text(text, &opts(), Span::call_site()).unwrap();
        let file: syn::File = syn::parse2(tokens).unwrap();
        let names: Vec<String> = file
            .items
            .iter()
            .filter_map(|i| match i {
                syn::Item::Mod(m) => Some(format!("mod {}", m.ident)),
                syn::Item::Fn(f) => Some(format!("fn {}", f.sig.ident)),
                syn::Item::Const(c) => Some(format!("const {}", c.ident)),
                syn::Item::Macro(m) => m.ident.as_ref().map(|i| format!("macro {i}")),
                _ => None,
            })
            .collect();
        assert_eq!(
            names,
            vec![
                "const MANIFEST_JSON",
                "const MANIFEST_DIGEST",
                "fn authority",
                "mod devices",
                "mod ping",
                "fn ping",
                "macro __agent_surface_procedures"
            ]
        );
        let m = AgentManifest::from_json_str(text).unwrap();
        let s = quote!(#file).to_string();
        assert!(s.contains(&format!("\"{}\"", m.digest())));
        assert!(s.contains(&format!(
            "\"{}\"",
            m.procedure_digest("devices.listAll").unwrap()
        )));
        assert!(s.contains("pub mod list_all"));
        assert!(s.contains("include_str ! (\"/fixtures/test.manifest.json\")"));
    }

    #[test]
    fn field_variant_names() {
        assert_eq!(variant_name("device_ids"), "DeviceIds");
        assert_eq!(variant_name("r#type"), "Type");
        assert_eq!(variant_name("self_"), "Self_");
        assert_eq!(variant_name("_1a"), "F1a");
    }

    #[test]
    fn option_depth_counts_wrappers() {
        let t: syn::Type = syn::parse_quote!(Option<::core::option::Option<Vec<u8>>>);
        assert_eq!(option_depth(&t), 2);
        let t: syn::Type = syn::parse_quote!(Vec<Option<u8>>);
        assert_eq!(option_depth(&t), 0);
        assert_eq!(
            type_text(&quote!(Vec<Option<String>>)),
            "Vec<Option<String>>"
        );
    }
}
