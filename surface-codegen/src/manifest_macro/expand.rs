//! The `manifest!` expansion of a validated manifest: the constants, the
//! authority, one module per path segment with the procedure's types, and
//! the lookup macro of [`crate::facts`].

use std::collections::BTreeMap;

use proc_macro2::{Ident, Literal, Span, TokenStream};
use quote::{quote, quote_spanned};
use surface_manifest::{
    canonical_capability_id, path_to_rust, procedure_digest, sha256_hex, AgentManifest,
    ManifestTool,
};

use super::dedup::SharedTypes;
use super::fields::{emit_field_aliases, emit_field_enum};
use super::validators::ProcedureValidators;
use super::ExpandOptions;
use crate::doc::{doc_attrs, DocText};
use crate::facts::{lookup_macro, ProcedureFacts};
use crate::tokens::{braced, ident_from_source};
use crate::types::{generate_procedure_types, TypeOptions};

/// One node of the router tree.
#[derive(Default)]
struct Node<'m> {
    children: BTreeMap<String, Node<'m>>,
    procedure: Option<(&'m str, &'m ManifestTool)>,
}

pub(crate) struct Generator<'m> {
    manifest: &'m AgentManifest,
    options: &'m ExpandOptions,
    type_options: TypeOptions,
    span: Span,
    shared: std::cell::RefCell<SharedTypes>,
}

impl<'m> Generator<'m> {
    pub(crate) fn new(manifest: &'m AgentManifest, options: &'m ExpandOptions, span: Span) -> Self {
        Generator {
            manifest,
            options,
            type_options: TypeOptions {
                crate_path: options.crate_path.clone(),
                typed_formats: options.typed_formats,
            },
            span,
            shared: std::cell::RefCell::default(),
        }
    }

    pub(crate) fn generate(
        &self,
        validators: &BTreeMap<String, ProcedureValidators>,
    ) -> TokenStream {
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
        let digest = self.manifest.digest();
        let mut facts = Vec::new();
        let tree = self.emit_children(&root, &mut Vec::new(), &mut facts);
        let mut tokens = self.root_items(&digest, validators);
        // Moved, not interpolated: `quote!` would copy the whole tree.
        tokens.extend(tree);
        tokens.extend(lookup_macro(
            &self.options.crate_path,
            &self.unique_name(&digest),
            &facts,
        ));
        tokens
    }

    /// 16 hex digits that make the exported lookup macro's name unique in
    /// the invoking crate: a hash of the manifest digest, the facade path
    /// and where `manifest!` was written.
    fn unique_name(&self, digest: &str) -> String {
        let key = format!(
            "{digest}\n{}\n{}",
            self.options.crate_path, self.options.invocation_site
        );
        sha256_hex(key.as_bytes())[..16].to_string()
    }

    /// `MANIFEST_JSON`, `MANIFEST_DIGEST` and `authority()`.
    fn root_items(
        &self,
        manifest_digest: &str,
        validators: &BTreeMap<String, ProcedureValidators>,
    ) -> TokenStream {
        let krate = &self.options.crate_path;
        let include_path = Literal::string(&self.options.include_path);
        let option = |v: Option<&TokenStream>| match v {
            Some(v) => quote!(::core::option::Option::Some(#v)),
            None => quote!(::core::option::Option::None),
        };
        let generated = self.manifest.tools.iter().map(|(path, tool)| {
            let digest = procedure_digest(path, tool);
            let v = validators.get(path);
            let input = option(v.and_then(|v| v.input.as_ref()));
            let output = option(v.and_then(|v| v.output.as_ref()));
            quote! {
                #krate::__private::GeneratedProcedure {
                    path: #path,
                    digest: #digest,
                    input: #input,
                    output: #output,
                }
            }
        });
        let shown = &self.options.display_path;
        let json_doc = doc_attrs(&[
            DocText::new()
                .ours("The agent manifest ")
                .code(shown.as_str())
                .ours(" (")
                .number(self.manifest.tools.len())
                .ours(" procedures), embedded at compile time."),
            DocText::from(
                "Including it also makes rustc rebuild this crate when the file changes.",
            ),
        ]);
        let authority_panic = format!(
            "the manifest `{shown}` embedded by `manifest!` does not match the digests computed at compile time; rebuild with matching agent-surface crate versions"
        );
        let span = self.span;
        let include = quote_spanned!(span=> include_str!(#include_path));
        quote! {
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
        }
    }

    fn emit_children(
        &self,
        node: &Node<'m>,
        prefix: &mut Vec<Ident>,
        facts: &mut Vec<ProcedureFacts>,
    ) -> TokenStream {
        let mut out = TokenStream::new();
        for (seg, child) in &node.children {
            let ident = ident_from_source(seg, Span::call_site());
            prefix.push(ident.clone());
            if let Some((path, tool)) = child.procedure {
                out.extend(self.emit_procedure(&ident, path, tool, prefix, facts));
            } else {
                let inner = self.emit_children(child, prefix, facts);
                let doc = doc_attrs(&[DocText::new()
                    .ours("Procedures under ")
                    .code(format!("{}.", prefix_path(child)))
                    .ours(" in the agent manifest.")]);
                out.extend(quote! {
                    #doc
                    pub mod #ident
                });
                out.extend(std::iter::once(braced(inner)));
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
        facts: &mut Vec<ProcedureFacts>,
    ) -> TokenStream {
        let types = generate_procedure_types(
            &tool.input_schema,
            tool.output_schema.as_ref(),
            &self.type_options,
        );
        let object = types.input_object.as_ref();
        facts.push(ProcedureFacts::new(path, module, object));
        let mod_doc = doc_attrs(&module_doc(path, tool, &types.note_docs));
        // The module body is assembled by moving the pieces, not by
        // interpolating them (`quote!` would copy each).
        let mut body = self.shared.borrow_mut().share(types.items, module);
        body.extend(emit_field_enum(object, path));
        body.extend(quote! {
            /// Dotted router path of this procedure.
            pub const PATH: &str = #path;
        });
        body.extend(emit_field_aliases(object));
        let mut out = quote! {
            #mod_doc
            pub mod #ident
        };
        out.extend(std::iter::once(braced(body)));
        out.extend(self.reference_fn(ident, path, tool, module.len() - 1));
        out
    }

    /// `pub fn disable() -> AgentProcedureRef<disable::Input,
    /// disable::Output>`, beside the module; `ups` is how many modules up
    /// the invoking module is.
    fn reference_fn(
        &self,
        ident: &Ident,
        path: &str,
        tool: &ManifestTool,
        ups: usize,
    ) -> TokenStream {
        let krate = &self.options.crate_path;
        let supers = (0..ups).map(|_| quote!(super::));
        let authority_path = if ups == 0 {
            quote!(self::authority)
        } else {
            quote!(#(#supers)* authority)
        };
        let fn_doc = doc_attrs(&[
            DocText::new()
                .ours("The typed reference to ")
                .code(path)
                .ours(" (id ")
                .code(format!("domain:{path}"))
                .ours(", effect ")
                .code(tool.effect.as_str())
                .ours("), from ")
                .code(format!("{}authority()", "super::".repeat(ups)))
                .ours("."),
            DocText::description(&tool.description),
        ]);
        let missing = format!("`{path}` is missing from the generated authority");
        quote! {
            #fn_doc
            pub fn #ident() -> #krate::AgentProcedureRef<#ident::Input, #ident::Output> {
                match #krate::AgentProcedureRef::from_authority(&#authority_path(), #path) {
                    ::core::option::Option::Some(procedure) => procedure,
                    ::core::option::Option::None => ::core::panic!(#missing),
                }
            }
        }
    }
}

/// The doc paragraphs of a procedure's module: path and description,
/// effect and capability id, then the type converter's notes.
fn module_doc(path: &str, tool: &ManifestTool, notes: &[DocText]) -> Vec<DocText> {
    let mut doc = vec![
        DocText::new()
            .code(path)
            .ours(" — ")
            .append(DocText::description(&tool.description)),
        DocText::new()
            .ours("Effect ")
            .code(tool.effect.as_str())
            .ours("; capability id ")
            .code(canonical_capability_id(path, tool))
            .ours(if tool.requires_approval {
                "; the server requires its own approval."
            } else {
                "."
            }),
    ];
    doc.extend(
        notes
            .iter()
            .map(|note| DocText::new().ours("Note: ").append(note.clone())),
    );
    doc
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
