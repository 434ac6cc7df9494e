//! Types shared between procedures: a helper type of a procedure module
//! that is token for token the same as one an earlier procedure module
//! defined — with everything it names also the same — is not defined again
//! but re-exported from there (`pub use super::super::a::b::InputMode;`).
//! Big manifests repeat most helper types (the azure tools share their
//! option enums, the OpenAPI operations their component schemas), and each
//! definition is type-checked on its own (docs/codegen.md, "Compile time at
//! scale"). `Input` and `Output` are never shared: each procedure keeps its
//! own, so a binding only fits its own procedure.

use std::collections::{BTreeSet, HashMap};

use proc_macro2::{Ident, TokenStream, TokenTree};
use quote::quote;
use surface_manifest::sha256_hex;

/// The first definition of each shared group, by key: the path of the
/// procedure module that holds it (from the invoking module).
#[derive(Default)]
pub(crate) struct SharedTypes {
    first: HashMap<String, Vec<Ident>>,
}

/// One named item of a procedure module and its impls.
struct Group {
    name: String,
    items: Vec<syn::Item>,
    text: String,
    refs: BTreeSet<usize>,
}

impl SharedTypes {
    /// The items of the procedure module at `module` (its path from the
    /// invoking module), with every group already defined identically by
    /// an earlier module replaced by a `pub use` of it.
    pub(crate) fn share(&mut self, items: TokenStream, module: &[Ident]) -> TokenStream {
        let Ok(file) = syn::parse2::<syn::File>(items.clone()) else {
            return items;
        };
        let mut groups: Vec<Group> = Vec::new();
        let mut index: HashMap<String, usize> = HashMap::new();
        for item in file.items {
            let Some(name) = item_name(&item) else {
                return items;
            };
            let n = *index.entry(name.clone()).or_insert_with(|| {
                groups.push(Group {
                    name,
                    items: Vec::new(),
                    text: String::new(),
                    refs: BTreeSet::new(),
                });
                groups.len() - 1
            });
            groups[n].items.push(item);
        }
        for group in &mut groups {
            let tokens: TokenStream = group.items.iter().map(|i| quote!(#i)).collect();
            group.text = tokens.to_string();
            let mut idents = BTreeSet::new();
            collect_idents(tokens, &mut idents);
            group.refs = idents
                .iter()
                .filter_map(|i| index.get(i).copied())
                .collect();
        }
        let mut keys: Vec<Option<Option<String>>> = vec![None; groups.len()];
        for n in 0..groups.len() {
            key_of(n, &groups, &mut keys, &mut Vec::new());
        }
        let mut out = TokenStream::new();
        for (group, key) in groups.into_iter().zip(keys) {
            let shareable = !matches!(group.name.as_str(), "Input" | "Output");
            match key.flatten().filter(|_| shareable) {
                Some(key) => match self.first.get(&key) {
                    Some(first) => {
                        let supers = module.iter().map(|_| quote!(super::));
                        let name = Ident::new(&group.name, proc_macro2::Span::call_site());
                        out.extend(quote!(pub use #(#supers)* #(#first::)* #name;));
                    }
                    None => {
                        self.first.insert(key, module.to_vec());
                        out.extend(group.items.iter().map(|i| quote!(#i)));
                    }
                },
                None => out.extend(group.items.iter().map(|i| quote!(#i))),
            }
        }
        out
    }
}

/// The key of group `n`: its text and the keys of the groups it names;
/// `None` when it is part of a cycle or names a group that has none.
fn key_of(
    n: usize,
    groups: &[Group],
    keys: &mut Vec<Option<Option<String>>>,
    stack: &mut Vec<usize>,
) -> Option<String> {
    if let Some(key) = &keys[n] {
        return key.clone();
    }
    if stack.contains(&n) {
        return None;
    }
    stack.push(n);
    let mut text = groups[n].text.clone();
    let mut complete = true;
    for &r in &groups[n].refs {
        if r == n {
            continue;
        }
        match key_of(r, groups, keys, stack) {
            Some(key) => {
                text.push('\n');
                text.push_str(&key);
            }
            None => complete = false,
        }
    }
    stack.pop();
    // A recursive group (it names itself) is shared only with its closure
    // when that has no cycle through other groups.
    let key = complete.then(|| sha256_hex(text.as_bytes()));
    keys[n] = Some(key.clone());
    key
}

/// The name an item defines, or the type an `impl` is for.
fn item_name(item: &syn::Item) -> Option<String> {
    match item {
        syn::Item::Struct(s) => Some(s.ident.to_string()),
        syn::Item::Enum(e) => Some(e.ident.to_string()),
        syn::Item::Type(t) => Some(t.ident.to_string()),
        syn::Item::Impl(i) => match &*i.self_ty {
            syn::Type::Path(p) if p.qself.is_none() && p.path.segments.len() == 1 => {
                Some(p.path.segments[0].ident.to_string())
            }
            _ => None,
        },
        _ => None,
    }
}

fn collect_idents(tokens: TokenStream, out: &mut BTreeSet<String>) {
    for tree in tokens {
        match tree {
            TokenTree::Ident(i) => {
                out.insert(i.to_string());
            }
            TokenTree::Group(g) => collect_idents(g.stream(), out),
            _ => {}
        }
    }
}
