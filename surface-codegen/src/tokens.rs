//! Small helpers over tokens and syntax shared by the macros: identifiers
//! from generated source text, `Option` depth of a written type, readable
//! type text, respanning, splitting arguments at commas.

use proc_macro2::{Delimiter, Group, Ident, Span, TokenStream, TokenTree};
use quote::quote;

/// An identifier from source text as the naming rules write it
/// (`list_all`, `r#type`), spanned at `span`.
pub fn ident_from_source(text: &str, span: Span) -> Ident {
    match text.strip_prefix("r#") {
        Some(raw) => Ident::new_raw(raw, span),
        None => Ident::new(text, span),
    }
}

/// Number of syntactic `Option<…>` wrappers around a type written as tokens.
pub fn option_depth(ty: &syn::Type) -> usize {
    let mut depth = 0;
    let mut current = ty;
    while let Some(inner) = option_inner(current) {
        depth += 1;
        current = inner;
    }
    depth
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

/// Readable source text of a type (`Vec<String>`), for messages.
pub fn type_text(tokens: &TokenStream) -> String {
    match syn::parse2::<syn::Type>(tokens.clone()) {
        Ok(ty) => tidy_type_text(&quote!(#ty).to_string()),
        Err(_) => tidy_type_text(&tokens.to_string()),
    }
}

/// `quote!`'s spaced type text (`Vec < String >`) written as a person
/// would (`Vec<String>`).
pub(crate) fn tidy_type_text(s: &str) -> String {
    s.replace(" < ", "<")
        .replace("< ", "<")
        .replace(" <", "<")
        .replace(" >", ">")
        .replace(" ,", ",")
        .replace(":: ", "::")
        .replace(" ::", "::")
}

/// `tokens` with every span replaced by `span` (groups included).
pub(crate) fn respan(tokens: TokenStream, span: Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|tt| match tt {
            TokenTree::Group(g) => {
                let mut group = Group::new(g.delimiter(), respan(g.stream(), span));
                group.set_span(span);
                TokenTree::Group(group)
            }
            mut other => {
                other.set_span(span);
                other
            }
        })
        .collect()
}

/// `ident` with its span replaced by `span`.
pub(crate) fn ident_with_span(ident: &Ident, span: Span) -> Ident {
    let mut ident = ident.clone();
    ident.set_span(span);
    ident
}

/// One comma-separated argument: its tokens and the span to report when
/// it is empty or missing (the comma before it).
pub(crate) struct Argument {
    pub(crate) tokens: TokenStream,
    pub(crate) span: Span,
}

/// Splits `tokens` at its top-level commas (commas inside groups stay), so
/// each argument can be parsed — and fail — on its own. A trailing comma
/// adds no argument.
pub(crate) fn split_arguments(tokens: TokenStream) -> Vec<Argument> {
    let mut out = Vec::new();
    let mut current = TokenStream::new();
    let mut span = Span::call_site();
    for tree in tokens {
        match &tree {
            TokenTree::Punct(p) if p.as_char() == ',' => {
                out.push(Argument {
                    tokens: std::mem::take(&mut current),
                    span,
                });
                span = p.span();
            }
            _ => current.extend(std::iter::once(tree)),
        }
    }
    if !current.is_empty() {
        out.push(Argument {
            tokens: current,
            span,
        });
    }
    out
}

/// A brace group holding `body`, moved rather than interpolated (`quote!`
/// would copy a large body).
pub(crate) fn braced(body: TokenStream) -> TokenTree {
    TokenTree::Group(Group::new(Delimiter::Brace, body))
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn arguments_split_at_top_level_commas_only() {
        let args = split_arguments(quote!(api, "a.b", overridable(x, y),));
        let texts: Vec<String> = args.iter().map(|a| a.tokens.to_string()).collect();
        assert_eq!(texts, ["api", "\"a.b\"", "overridable (x , y)"]);
        let args = split_arguments(quote!(api,, input));
        let texts: Vec<String> = args.iter().map(|a| a.tokens.to_string()).collect();
        assert_eq!(texts, ["api", "", "input"]);
        assert!(split_arguments(TokenStream::new()).is_empty());
    }
}
