//! Token emission for [`super::validator_tokens`].
//!
//! Two passes per schema node, sharing one walk: `Mode::Valid` yields a
//! `bool` expression (a labeled block that `break`s `false` at the first
//! failure), `Mode::Errors` yields statements that record every failure in
//! `e` at path `p`. In scope: `i: &Value` (the instance), `d: u32` (the
//! `$ref` recursion depth), and in the error pass `p: &Path` and
//! `e: &mut Errors`.

use std::collections::HashMap;

use proc_macro2::{Ident, Literal, Span, TokenStream};
use quote::{format_ident, quote};
use serde_json::{Map, Value};

use surface_manifest::schema::child_pointer;

use super::{size_limit, Analysis, ValidatorOptions};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Valid,
    Errors,
}

/// What a failing check does: `break 'label false` or record an error.
#[derive(Clone)]
struct Cx {
    mode: Mode,
    fail: TokenStream,
}

/// `is_valid` expressions longer than this many tokens, needed by both
/// passes (branches of `anyOf`, `oneOf`, `not`, `if`, `contains`), become
/// functions of their own instead of being emitted twice.
const HOIST_TOKENS: usize = 40;

pub(crate) struct Emitter<'a, 's> {
    a: &'a Analysis<'s>,
    krate: TokenStream,
    items: Vec<TokenStream>,
    valid_fns: HashMap<usize, Ident>,
    error_fns: HashMap<usize, Ident>,
    queue: Vec<(usize, Mode)>,
    hoisted: HashMap<String, Option<Ident>>,
    patterns: HashMap<String, Ident>,
    next_label: usize,
    next_fn: usize,
    /// How many subschemas the code being emitted is nested in, within
    /// the current function.
    depth: usize,
    /// The functions split off at [`MAX_INLINE_DEPTH`], by mode and pointer.
    split: HashMap<(bool, String), Ident>,
}

/// Subschemas nested deeper than this within one generated function go to
/// a function of their own, so that the generated code stays shallow
/// whatever the schema's depth (rustc and syn parse nesting recursively).
const MAX_INLINE_DEPTH: usize = 8;

impl<'a, 's> Emitter<'a, 's> {
    pub(crate) fn new(a: &'a Analysis<'s>, options: &ValidatorOptions) -> Self {
        Emitter {
            a,
            krate: options.crate_path.clone(),
            items: Vec::new(),
            valid_fns: HashMap::new(),
            error_fns: HashMap::new(),
            queue: Vec::new(),
            hoisted: HashMap::new(),
            patterns: HashMap::new(),
            next_label: 0,
            next_fn: 0,
            depth: 0,
            split: HashMap::new(),
        }
    }

    pub(crate) fn emit(mut self) -> TokenStream {
        let v0 = self.target_fn(0, Mode::Valid);
        let e0 = self.target_fn(0, Mode::Errors);
        while let Some((t, mode)) = self.queue.pop() {
            self.emit_target(t, mode);
        }
        let krate = &self.krate;
        let items = &self.items;
        quote! {{
            #[allow(unused, non_upper_case_globals, clippy::all, clippy::pedantic, clippy::nursery)]
            mod __validator {
                use #krate::__private::validation::{rt, rt::Limit, Errors, Path, MAX_REF_DEPTH};
                use #krate::__private::serde_json::Value;
                use #krate::__private::{format, pattern::Pattern};
                #(#items)*
            }
            #krate::__private::validation::Validator::new(__validator::#v0, __validator::#e0)
        }}
    }

    /// The function of target `t` in `mode`, queued for emission on first use.
    fn target_fn(&mut self, t: usize, mode: Mode) -> Ident {
        let fns = match mode {
            Mode::Valid => &mut self.valid_fns,
            Mode::Errors => &mut self.error_fns,
        };
        if let Some(id) = fns.get(&t) {
            return id.clone();
        }
        let id = match mode {
            Mode::Valid => format_ident!("v{}", t),
            Mode::Errors => format_ident!("e{}", t),
        };
        fns.insert(t, id.clone());
        self.queue.push((t, mode));
        id
    }

    fn emit_target(&mut self, t: usize, mode: Mode) {
        let target = &self.a.targets[t];
        let (node, pointer) = (target.node, target.pointer.clone());
        match mode {
            Mode::Valid => {
                let id = format_ident!("v{}", t);
                let body = self.valid(node, &pointer).unwrap_or_else(|| quote!(true));
                self.items.push(quote! {
                    pub(super) fn #id(i: &Value, d: u32) -> bool {
                        if d > MAX_REF_DEPTH { return false; }
                        #body
                    }
                });
            }
            Mode::Errors => {
                let id = format_ident!("e{}", t);
                let body = self.errors(node, &pointer);
                self.items.push(quote! {
                    pub(super) fn #id(i: &Value, p: &Path<'_>, e: &mut Errors, d: u32) {
                        if d > MAX_REF_DEPTH { e.too_deep(p); return; }
                        #body
                    }
                });
            }
        }
    }

    fn label(&mut self) -> TokenStream {
        let n = self.next_label;
        self.next_label += 1;
        let lifetime = proc_macro2::Punct::new('\'', proc_macro2::Spacing::Joint);
        let name = format_ident!("v{}", n);
        quote!(#lifetime #name)
    }

    /// `bool` expression: `i` is valid against `node`; `None` when always.
    fn valid(&mut self, node: &Value, ptr: &str) -> Option<TokenStream> {
        if self.depth >= MAX_INLINE_DEPTH && node.is_object() {
            return self.split_valid(node, ptr);
        }
        self.depth += 1;
        let out = self.valid_inline(node, ptr);
        self.depth -= 1;
        out
    }

    /// [`Emitter::valid`] in a function of its own, at depth 0.
    fn split_valid(&mut self, node: &Value, ptr: &str) -> Option<TokenStream> {
        let key = (true, ptr.to_string());
        if let Some(id) = self.split.get(&key) {
            return Some(quote!(#id(i, d)));
        }
        let outer = std::mem::replace(&mut self.depth, 0);
        let body = self.valid_inline(node, ptr);
        self.depth = outer;
        let body = body?;
        let id = format_ident!("s{}", self.next_fn);
        self.next_fn += 1;
        self.items.push(quote! {
            fn #id(i: &Value, d: u32) -> bool { #body }
        });
        self.split.insert(key, id.clone());
        Some(quote!(#id(i, d)))
    }

    /// [`Emitter::errors`] in a function of its own, at depth 0.
    fn split_errors(&mut self, node: &Value, ptr: &str) -> TokenStream {
        let key = (false, ptr.to_string());
        if let Some(id) = self.split.get(&key) {
            return quote!(#id(i, p, e, d););
        }
        let outer = std::mem::replace(&mut self.depth, 0);
        let body = self.errors_inline(node, ptr);
        self.depth = outer;
        if body.is_empty() {
            return body;
        }
        let id = format_ident!("s{}", self.next_fn);
        self.next_fn += 1;
        self.items.push(quote! {
            fn #id(i: &Value, p: &Path<'_>, e: &mut Errors, d: u32) { #body }
        });
        self.split.insert(key, id.clone());
        quote!(#id(i, p, e, d);)
    }

    fn valid_inline(&mut self, node: &Value, ptr: &str) -> Option<TokenStream> {
        match node {
            Value::Bool(true) => None,
            Value::Bool(false) => Some(quote!(false)),
            Value::Object(map) => {
                let label = self.label();
                let cx = Cx {
                    mode: Mode::Valid,
                    fail: quote!(break #label false),
                };
                let checks = self.node(&cx, map, ptr);
                if checks.is_empty() {
                    None
                } else {
                    Some(quote!(#label: { #(#checks)* true }))
                }
            }
            _ => None,
        }
    }

    /// Statements recording every error of `i` against `node` at `p`.
    fn errors(&mut self, node: &Value, ptr: &str) -> TokenStream {
        if self.depth >= MAX_INLINE_DEPTH && node.is_object() {
            return self.split_errors(node, ptr);
        }
        self.depth += 1;
        let out = self.errors_inline(node, ptr);
        self.depth -= 1;
        out
    }

    fn errors_inline(&mut self, node: &Value, ptr: &str) -> TokenStream {
        match node {
            Value::Bool(true) => TokenStream::new(),
            Value::Bool(false) => {
                quote!(e.push(p, "falseSchema", "False schema does not allow value");)
            }
            Value::Object(map) => {
                let cx = Cx {
                    mode: Mode::Errors,
                    fail: TokenStream::new(),
                };
                let checks = self.node(&cx, map, ptr);
                quote!(#(#checks)*)
            }
            _ => TokenStream::new(),
        }
    }

    /// A validity check used by both passes (applicator branches): inline
    /// when small, else a shared function.
    fn valid_shared(&mut self, node: &Value, ptr: &str) -> Option<TokenStream> {
        if let Some(hoisted) = self.hoisted.get(ptr) {
            return hoisted.as_ref().map(|id| quote!(#id(i, d)));
        }
        let expr = self.valid(node, ptr)?;
        if token_len(&expr) <= HOIST_TOKENS {
            return Some(expr);
        }
        let id = format_ident!("h{}", self.next_fn);
        self.next_fn += 1;
        self.items.push(quote! {
            fn #id(i: &Value, d: u32) -> bool { #expr }
        });
        self.hoisted.insert(ptr.to_string(), Some(id.clone()));
        Some(quote!(#id(i, d)))
    }

    /// A check on the instance itself: `cond` holds when valid.
    fn leaf(cx: &Cx, cond: TokenStream, keyword: &str, message: &str) -> TokenStream {
        match cx.mode {
            Mode::Valid => Self::fail_unless(cx, &cond),
            Mode::Errors => quote!(if !(#cond) { e.push(p, #keyword, #message); }),
        }
    }

    /// `if !(cond) { fail; }`: the valid-mode form of every check.
    fn fail_unless(cx: &Cx, cond: &TokenStream) -> TokenStream {
        let fail = &cx.fail;
        quote!(if !(#cond) { #fail; })
    }

    /// The valid-mode check of `node` on the current instance; empty when
    /// `node` accepts everything.
    fn valid_check(&mut self, cx: &Cx, node: &Value, ptr: &str) -> TokenStream {
        self.valid(node, ptr)
            .map(|v| Self::fail_unless(cx, &v))
            .unwrap_or_default()
    }

    /// Applies `node` to the same instance (`allOf`, `then`, `$ref`, …).
    fn apply(&mut self, cx: &Cx, node: &Value, ptr: &str) -> TokenStream {
        match cx.mode {
            Mode::Valid => self.valid_check(cx, node, ptr),
            Mode::Errors => self.errors(node, ptr),
        }
    }

    /// Applies `node` to a child instance already bound to `i`, whose path
    /// is `p.#segment`. Empty when `node` accepts everything.
    fn apply_child(
        &mut self,
        cx: &Cx,
        node: &Value,
        ptr: &str,
        segment: TokenStream,
    ) -> TokenStream {
        match cx.mode {
            Mode::Valid => self.valid_check(cx, node, ptr),
            Mode::Errors => {
                let errs = self.errors(node, ptr);
                if errs.is_empty() {
                    errs
                } else {
                    quote!(let p = &p.#segment; #errs)
                }
            }
        }
    }

    fn apply_ref(&mut self, cx: &Cx, at: &str) -> TokenStream {
        let Some(t) = self.a.target_index(at) else {
            return TokenStream::new();
        };
        let target = &self.a.targets[t];
        if target.function {
            match cx.mode {
                Mode::Valid => {
                    let id = self.target_fn(t, Mode::Valid);
                    let fail = &cx.fail;
                    quote!(if !#id(i, d + 1) { #fail; })
                }
                Mode::Errors => {
                    let id = self.target_fn(t, Mode::Errors);
                    quote!(#id(i, p, e, d + 1);)
                }
            }
        } else {
            let (node, pointer) = (target.node, target.pointer.clone());
            self.apply(cx, node, &pointer)
        }
    }

    fn pattern(&mut self, source: &str) -> Ident {
        if let Some(id) = self.patterns.get(source) {
            return id.clone();
        }
        let id = format_ident!("P{}", self.patterns.len());
        let lit = Literal::string(source);
        self.items
            .push(quote!(static #id: Pattern = Pattern::new(#lit);));
        self.patterns.insert(source.to_string(), id.clone());
        id
    }

    /// The checks of one schema object, in the runtime validator's keyword
    /// order (type, const, enum, per-type assertions, applicators).
    fn node(&mut self, cx: &Cx, m: &Map<String, Value>, ptr: &str) -> Vec<TokenStream> {
        let mut out = Vec::new();
        if m.contains_key("$ref") && !self.a.draft.ref_siblings() {
            out.push(self.apply_ref(cx, &child_pointer(ptr, "$ref")));
            return out;
        }
        let types: Option<Vec<&str>> = match m.get("type") {
            Some(Value::String(t)) => Some(vec![t.as_str()]),
            Some(Value::Array(ts)) => Some(ts.iter().filter_map(Value::as_str).collect()),
            _ => None,
        };
        let bound = types
            .as_deref()
            .and_then(|types| Self::type_checks(cx, types, &mut out));
        if let Some(c) = m.get("const") {
            let cond = eq_expr(c, quote!(i));
            out.push(Self::leaf(cx, cond, "const", &format!("{c} was expected")));
        }
        if let Some(Value::Array(options)) = m.get("enum") {
            let cond = enum_expr(options);
            out.push(Self::leaf(cx, cond, "enum", &enum_message(options)));
        }
        self.kind_checks(cx, m, ptr, types.as_deref(), bound, &mut out);
        self.same_instance_applicators(cx, m, ptr, &mut out);
        out.retain(|t| !t.is_empty());
        out
    }

    /// The `type` check. In the valid pass a single container or number
    /// type binds the instance (`let Value::String(s) = i else …`); the
    /// kind it bound is returned.
    fn type_checks<'t>(cx: &Cx, types: &[&'t str], out: &mut Vec<TokenStream>) -> Option<&'t str> {
        let single = match types {
            [t] => Some(*t),
            _ => None,
        };
        let fail = &cx.fail;
        match (cx.mode, single) {
            (Mode::Valid, Some(t @ ("string" | "object" | "array" | "number"))) => {
                let bind = binder(t);
                out.push(quote!(let #bind = i else { #fail; };));
                Some(t)
            }
            (Mode::Valid, Some("integer")) => {
                out.push(quote!(let Value::Number(n) = i else { #fail; };));
                out.push(quote!(if !rt::is_integer(n) { #fail; }));
                Some("number")
            }
            _ => {
                out.push(Self::leaf(
                    cx,
                    type_check(types),
                    "type",
                    &type_message(types),
                ));
                None
            }
        }
    }

    /// The per-kind assertions (number, string, array, object), each under
    /// a binding of the instance to that kind unless `type` bound it.
    fn kind_checks(
        &mut self,
        cx: &Cx,
        m: &Map<String, Value>,
        ptr: &str,
        types: Option<&[&str]>,
        bound: Option<&str>,
        out: &mut Vec<TokenStream>,
    ) {
        let groups: [(&str, Vec<TokenStream>); 4] = [
            ("number", self.number_checks(cx, m)),
            ("string", self.string_checks(cx, m)),
            ("array", self.array_checks(cx, m, ptr)),
            ("object", self.object_checks(cx, m, ptr)),
        ];
        for (kind, checks) in groups {
            if checks.is_empty() {
                continue;
            }
            if let Some(t) = bound {
                if t == kind {
                    out.extend(checks);
                }
                // Other kinds cannot occur once the type is bound.
                continue;
            }
            if let Some(types) = types {
                let possible = types
                    .iter()
                    .any(|t| *t == kind || (kind == "number" && *t == "integer"));
                if !possible && cx.mode == Mode::Valid {
                    // The type check already failed for these instances.
                    continue;
                }
            }
            let bind = binder(kind);
            out.push(quote!(if let #bind = i { #(#checks)* }));
        }
    }

    /// The applicators on the same instance: `allOf`, `anyOf`, `oneOf`,
    /// `not`, `if`/`then`/`else`, `$ref`.
    fn same_instance_applicators(
        &mut self,
        cx: &Cx,
        m: &Map<String, Value>,
        ptr: &str,
        out: &mut Vec<TokenStream>,
    ) {
        if let Some(Value::Array(all)) = m.get("allOf") {
            for (n, sub) in all.iter().enumerate() {
                out.push(self.apply(
                    cx,
                    sub,
                    &child_pointer(&child_pointer(ptr, "allOf"), &n.to_string()),
                ));
            }
        }
        if let Some(Value::Array(any)) = m.get("anyOf") {
            out.extend(self.any_of(cx, any, &child_pointer(ptr, "anyOf")));
        }
        if let Some(Value::Array(one)) = m.get("oneOf") {
            out.push(self.one_of(cx, one, &child_pointer(ptr, "oneOf")));
        }
        if let Some(not) = m.get("not") {
            let message = format!("{not} is not allowed for value");
            let cond = match self.valid_shared(not, &child_pointer(ptr, "not")) {
                Some(v) => quote!(!(#v)),
                None => quote!(false),
            };
            out.push(Self::leaf(cx, cond, "not", &message));
        }
        let has_if = m.contains_key("if") && self.a.draft.knows("if");
        if has_if && (m.contains_key("then") || m.contains_key("else")) {
            out.extend(self.if_then_else(cx, m, ptr));
        }
        if m.contains_key("$ref") {
            out.push(self.apply_ref(cx, &child_pointer(ptr, "$ref")));
        }
        // Empty unless the analysis read it (2019-09, or the draft-mix
        // reading of a 2020-12 document).
        if m.contains_key("$recursiveRef") {
            out.push(self.apply_ref(cx, &child_pointer(ptr, "$recursiveRef")));
        }
    }

    /// `anyOf`; `None` when a branch accepts everything (then so does
    /// `anyOf`).
    fn any_of(&mut self, cx: &Cx, any: &[Value], at: &str) -> Option<TokenStream> {
        let branches: Vec<TokenStream> = any
            .iter()
            .enumerate()
            .map(|(n, sub)| self.valid_shared(sub, &child_pointer(at, &n.to_string())))
            .collect::<Option<_>>()?;
        Some(Self::leaf(
            cx,
            quote!(#(#branches)||*),
            "anyOf",
            "value is not valid under any of the schemas listed in the 'anyOf' keyword",
        ))
    }

    /// `oneOf`: counts the valid branches, stopping early in the valid pass.
    fn one_of(&mut self, cx: &Cx, one: &[Value], at: &str) -> TokenStream {
        let branches: Vec<TokenStream> = one
            .iter()
            .enumerate()
            .map(|(n, sub)| {
                self.valid_shared(sub, &child_pointer(at, &n.to_string()))
                    .unwrap_or_else(|| quote!(true))
            })
            .collect();
        match cx.mode {
            Mode::Valid => {
                let fail = &cx.fail;
                quote! {{
                    let mut c = 0u32;
                    #( if #branches { c += 1; if c > 1 { #fail; } } )*
                    if c != 1 { #fail; }
                }}
            }
            Mode::Errors => quote! {{
                let mut c = 0u32;
                #( if #branches { c += 1; } )*
                if c == 0 {
                    e.push(p, "oneOf", "value is not valid under any of the schemas listed in the 'oneOf' keyword");
                } else if c > 1 {
                    e.push(p, "oneOf", "value is valid under more than one of the schemas listed in the 'oneOf' keyword");
                }
            }},
        }
    }

    /// `if`/`then`/`else`; `None` when neither branch checks anything.
    fn if_then_else(&mut self, cx: &Cx, m: &Map<String, Value>, ptr: &str) -> Option<TokenStream> {
        let cond = self
            .valid_shared(&m["if"], &child_pointer(ptr, "if"))
            .unwrap_or_else(|| quote!(true));
        let mut branch = |keyword: &str| match m.get(keyword) {
            Some(s) => self.apply(cx, s, &child_pointer(ptr, keyword)),
            None => TokenStream::new(),
        };
        let then = branch("then");
        let els = branch("else");
        if then.is_empty() && els.is_empty() {
            None
        } else {
            Some(quote!(if #cond { #then } else { #els }))
        }
    }

    fn number_checks(&mut self, cx: &Cx, m: &Map<String, Value>) -> Vec<TokenStream> {
        let mut out = Vec::new();
        let bounds = [
            ("minimum", "ge", "is less than the minimum of"),
            ("maximum", "le", "is greater than the maximum of"),
            (
                "exclusiveMinimum",
                "gt",
                "is less than or equal to the minimum of",
            ),
            (
                "exclusiveMaximum",
                "lt",
                "is greater than or equal to the maximum of",
            ),
        ];
        for (keyword, op, words) in bounds {
            // Draft-04's `exclusiveMinimum: true` makes `minimum` exclusive,
            // reported as `exclusiveMinimum` (as jsonschema's draft-04 does).
            let (keyword, limit, (op, words)) = match draft_04_exclusive(m, keyword) {
                Some((exclusive, limit, bound)) => (exclusive, Some(limit), bound),
                None => (
                    keyword,
                    m.get(keyword).filter(|v| v.is_number()),
                    (op, words),
                ),
            };
            if let Some(limit) = limit {
                let op = Ident::new(op, Span::call_site());
                let lim = limit_tokens(limit);
                out.push(Self::leaf(
                    cx,
                    quote!(rt::#op(n, #lim)),
                    keyword,
                    &format!("value {words} {limit}"),
                ));
            }
        }
        if let Some(m) = m.get("multipleOf").and_then(Value::as_f64) {
            if m > 0.0 && m.is_finite() {
                let lit = Literal::f64_suffixed(m);
                let cond = if m.fract() == 0.0 {
                    quote!(rt::multiple_of_integer(n, #lit))
                } else {
                    quote!(rt::multiple_of_float(n, #lit))
                };
                out.push(Self::leaf(
                    cx,
                    cond,
                    "multipleOf",
                    &format!("value is not a multiple of {m}"),
                ));
            }
        }
        out
    }

    fn string_checks(&mut self, cx: &Cx, m: &Map<String, Value>) -> Vec<TokenStream> {
        let mut out = Vec::new();
        if let Some(min) = m.get("minLength").and_then(size_limit) {
            if min > 0 {
                out.push(Self::leaf(
                    cx,
                    quote!(rt::min_length(s, #min)),
                    "minLength",
                    &format!("value is shorter than {min} character{}", plural(min)),
                ));
            }
        }
        if let Some(max) = m.get("maxLength").and_then(size_limit) {
            out.push(Self::leaf(
                cx,
                quote!(rt::max_length(s, #max)),
                "maxLength",
                &format!("value is longer than {max} character{}", plural(max)),
            ));
        }
        let pattern = m.get("pattern").and_then(Value::as_str);
        if let Some(source) = pattern {
            let id = self.pattern(source);
            let lit = Literal::string(source);
            // zod's own format regexes run their hand-written check,
            // resolved at compile time and called directly.
            out.push(Self::leaf(
                cx,
                quote!({
                    const C: Option<fn(&str) -> bool> = Pattern::recognized(#lit);
                    match C { Some(check) => check(s), None => #id.is_match(s) }
                }),
                "pattern",
                &format!("value does not match \"{source}\""),
            ));
        }
        if let Some(name) = m.get("format").and_then(Value::as_str) {
            let lit = Literal::string(name);
            // The format's check, resolved at compile time (an unknown
            // format is an annotation); in `is_valid`, skipped when the
            // sibling `pattern` is zod's regex for it, which passed
            // (`Pattern::covers_format`: it accepts nothing the format
            // refuses). The error pass reports both, as before.
            let covered = match (pattern, cx.mode) {
                (Some(source), Mode::Valid) => {
                    let source = Literal::string(source);
                    quote!(Pattern::covers_format(#source, #lit))
                }
                _ => quote!(false),
            };
            out.push(Self::leaf(
                cx,
                quote!({
                    const COVERED: bool = #covered;
                    const F: Option<fn(&str) -> bool> = format::checker_const(#lit);
                    COVERED || match F { Some(check) => check(s), None => true }
                }),
                "format",
                &format!("value is not a \"{name}\""),
            ));
        }
        out
    }

    fn array_checks(&mut self, cx: &Cx, m: &Map<String, Value>, ptr: &str) -> Vec<TokenStream> {
        let mut out = size_checks(
            cx,
            m,
            quote!(a),
            ["minItems", "maxItems"],
            ["item", "items"],
        );
        if m.get("uniqueItems") == Some(&Value::Bool(true)) {
            out.push(Self::leaf(
                cx,
                quote!(rt::unique(a)),
                "uniqueItems",
                "value has non-unique elements",
            ));
        }
        let tuple_len = self.tuple_items(cx, m, ptr, &mut out);
        out.extend(self.rest_items(cx, m, ptr));
        if let (Some(n), Some(additional)) = (tuple_len, m.get("additionalItems")) {
            out.extend(self.additional_items(cx, n, additional, ptr));
        }
        if let Some(contains) = m.get("contains") {
            out.extend(self.contains(cx, m, contains, ptr));
        }
        out
    }

    /// Tuples: the draft-07 `items` array and 2020-12 `prefixItems`, one
    /// check per position. Returns the length of an `items` array (which
    /// `additionalItems` follows).
    fn tuple_items(
        &mut self,
        cx: &Cx,
        m: &Map<String, Value>,
        ptr: &str,
        out: &mut Vec<TokenStream>,
    ) -> Option<usize> {
        let mut tuple_len = None;
        for (keyword, list) in [
            ("items", m.get("items").and_then(Value::as_array)),
            ("prefixItems", self.prefix_items(m)),
        ] {
            let Some(list) = list else { continue };
            if keyword == "items" {
                tuple_len = Some(list.len());
            }
            let at = child_pointer(ptr, keyword);
            for (n, sub) in list.iter().enumerate() {
                let check = self.apply_child(
                    cx,
                    sub,
                    &child_pointer(&at, &n.to_string()),
                    quote!(index(#n)),
                );
                if !check.is_empty() {
                    out.push(quote!(if let Some(i) = a.get(#n) { #check }));
                }
            }
        }
        tuple_len
    }

    /// `prefixItems`, where the draft knows it.
    fn prefix_items<'m>(&self, m: &'m Map<String, Value>) -> Option<&'m Vec<Value>> {
        m.get("prefixItems")
            .filter(|_| self.a.draft.knows("prefixItems"))
            .and_then(Value::as_array)
    }

    /// `items` as one schema for every element after `prefixItems`.
    fn rest_items(&mut self, cx: &Cx, m: &Map<String, Value>, ptr: &str) -> Option<TokenStream> {
        let items = m.get("items").filter(|v| !v.is_array())?;
        let skip = self.prefix_items(m).map_or(0, Vec::len);
        if items == &Value::Bool(false) && cx.mode == Mode::Valid {
            let fail = &cx.fail;
            return Some(quote!(if a.len() > #skip { #fail; }));
        }
        let check = self.apply_child(cx, items, &child_pointer(ptr, "items"), quote!(index(j)));
        (!check.is_empty()).then(|| {
            quote! {
                for (j, i) in a.iter().enumerate().skip(#skip) { #check }
            }
        })
    }

    /// `additionalItems` after an `items` array of `n` schemas.
    fn additional_items(
        &mut self,
        cx: &Cx,
        n: usize,
        additional: &Value,
        ptr: &str,
    ) -> Option<TokenStream> {
        match (additional, cx.mode) {
            (Value::Bool(false), Mode::Valid) => {
                let fail = &cx.fail;
                Some(quote!(if a.len() > #n { #fail; }))
            }
            (Value::Bool(false), Mode::Errors) => {
                Some(quote!(if a.len() > #n { e.additional_items(p, a.len() - #n); }))
            }
            (Value::Object(_), _) => {
                let check = self.apply_child(
                    cx,
                    additional,
                    &child_pointer(ptr, "additionalItems"),
                    quote!(index(j)),
                );
                (!check.is_empty()).then(|| {
                    quote! {
                        for (j, i) in a.iter().enumerate().skip(#n) { #check }
                    }
                })
            }
            _ => None,
        }
    }

    /// `contains` with `minContains`/`maxContains` (from 2019-09):
    /// counts the matching elements, stopping as soon as the answer is
    /// known.
    fn contains(
        &mut self,
        cx: &Cx,
        m: &Map<String, Value>,
        contains: &Value,
        ptr: &str,
    ) -> Option<TokenStream> {
        let (min, max) = if self.a.draft.knows("minContains") {
            (
                m.get("minContains").and_then(size_limit),
                m.get("maxContains").and_then(size_limit),
            )
        } else {
            (None, None)
        };
        let matches = self
            .valid_shared(contains, &child_pointer(ptr, "contains"))
            .unwrap_or_else(|| quote!(true));
        let message = "None of value are valid under the given schema";
        let min = min.unwrap_or(1);
        if min == 0 && max.is_none() {
            return None;
        }
        // `maxContains` without `minContains` still needs one match.
        let fail = match cx.mode {
            Mode::Valid => cx.fail.clone(),
            Mode::Errors => quote!(e.push(p, "contains", #message)),
        };
        let label = self.label();
        let over = match max {
            Some(max) => quote!(if c > #max { break #label false; }),
            None => quote!(if c >= #min { break #label true; }),
        };
        let enough = if min == 0 {
            quote!(true)
        } else {
            quote!(c >= #min)
        };
        Some(quote! {
            let ok = #label: {
                let mut c = 0u64;
                for i in a { if #matches { c += 1; #over } }
                #enough
            };
            if !ok { #fail; }
        })
    }

    fn object_checks(&mut self, cx: &Cx, m: &Map<String, Value>, ptr: &str) -> Vec<TokenStream> {
        let mut out = size_checks(
            cx,
            m,
            quote!(o),
            ["minProperties", "maxProperties"],
            ["property", "properties"],
        );
        if cx.mode == Mode::Valid {
            if let Some(pass) = self.one_pass(cx, m, ptr) {
                out.push(pass);
                self.required_checks(cx, m, false, &mut out);
                if let Some(names) = m.get("propertyNames") {
                    out.extend(self.property_names(
                        cx,
                        names,
                        &child_pointer(ptr, "propertyNames"),
                    ));
                }
                out.extend(self.dependent_schemas(cx, m, ptr));
                return out;
            }
        }
        self.required_checks(cx, m, true, &mut out);
        let props = m.get("properties").and_then(Value::as_object);
        if let Some(props) = props {
            let at = child_pointer(ptr, "properties");
            for (name, sub) in props {
                let lit = Literal::string(name);
                let check = self.apply_child(cx, sub, &child_pointer(&at, name), quote!(key(#lit)));
                if !check.is_empty() {
                    out.push(quote!(if let Some(i) = o.get(#lit) { #check }));
                }
            }
        }
        self.other_properties(cx, m, props, ptr, &mut out);
        if let Some(names) = m.get("propertyNames") {
            out.extend(self.property_names(cx, names, &child_pointer(ptr, "propertyNames")));
        }
        out.extend(self.dependent_schemas(cx, m, ptr));
        out
    }

    /// `is_valid`'s `properties`, `required` and `additionalProperties`
    /// in one pass over the object's entries, each key matched once
    /// against the property names (no lookup per property, no second
    /// lookup for `required`), the required ones counted in a bit set.
    /// `None` (the general form applies) with `patternProperties`, without
    /// `properties`, or when a required name is not a property or there
    /// are more than 64 of them.
    fn one_pass(&mut self, cx: &Cx, m: &Map<String, Value>, ptr: &str) -> Option<TokenStream> {
        let props = m.get("properties").and_then(Value::as_object)?;
        let patterns = m.get("patternProperties").and_then(Value::as_object);
        if props.is_empty() || patterns.is_some_and(|p| !p.is_empty()) {
            return None;
        }
        let mut required: Vec<&str> = Vec::new();
        match m.get("required") {
            None => {}
            Some(Value::Array(names)) => {
                for name in names {
                    let name = name.as_str().filter(|n| props.contains_key(*n))?;
                    if !required.contains(&name) {
                        required.push(name);
                    }
                }
            }
            Some(_) => return None,
        }
        if required.len() > 64 {
            return None;
        }
        let fail = &cx.fail;
        let at = child_pointer(ptr, "properties");
        let mut arms = Vec::new();
        for (name, sub) in props {
            let lit = Literal::string(name);
            let check = self.apply_child(cx, sub, &child_pointer(&at, name), quote!(key(#lit)));
            let mark = required.iter().position(|r| r == name).map(|bit| {
                let bit = 1u64 << bit;
                quote!(seen |= #bit;)
            });
            arms.push(quote!(#lit => { #check #mark }));
        }
        let other = match m.get("additionalProperties") {
            None | Some(Value::Bool(true)) => quote!(),
            Some(Value::Bool(false)) => quote!(#fail;),
            Some(additional) => self.apply_child(
                cx,
                additional,
                &child_pointer(ptr, "additionalProperties"),
                quote!(key(k)),
            ),
        };
        let all: u64 = if required.len() == 64 {
            u64::MAX
        } else {
            (1u64 << required.len()) - 1
        };
        let (declare, complete) = if required.is_empty() {
            (quote!(), quote!())
        } else {
            (
                quote!(let mut seen = 0u64;),
                quote!(if seen != #all { #fail; }),
            )
        };
        Some(quote! {{
            #declare
            for (k, i) in o {
                match k.as_str() {
                    #(#arms)*
                    _ => { #other }
                }
            }
            #complete
        }})
    }

    /// `required` (unless `with_required` is false: [`Self::one_pass`]
    /// checked it), `dependentRequired` (from 2019-09) and the array form
    /// of `dependencies`.
    fn required_checks(
        &mut self,
        cx: &Cx,
        m: &Map<String, Value>,
        with_required: bool,
        out: &mut Vec<TokenStream>,
    ) {
        if let Some(Value::Array(names)) = m.get("required").filter(|_| with_required) {
            out.extend(required_names(cx, names));
        }
        let dependent_required = m
            .get("dependentRequired")
            .filter(|_| self.a.draft.knows("dependentRequired"));
        for deps in [dependent_required, m.get("dependencies")] {
            let Some(Value::Object(deps)) = deps else {
                continue;
            };
            for (trigger, names) in deps {
                let Value::Array(names) = names else { continue };
                let checks = required_names(cx, names);
                if !checks.is_empty() {
                    let t = Literal::string(trigger);
                    out.push(quote!(if o.contains_key(#t) { #(#checks)* }));
                }
            }
        }
    }

    /// `patternProperties` and `additionalProperties`, in one pass over
    /// the keys.
    fn other_properties(
        &mut self,
        cx: &Cx,
        m: &Map<String, Value>,
        props: Option<&Map<String, Value>>,
        ptr: &str,
        out: &mut Vec<TokenStream>,
    ) {
        let patterns = m
            .get("patternProperties")
            .and_then(Value::as_object)
            .filter(|p| !p.is_empty());
        let additional = m
            .get("additionalProperties")
            .filter(|a| **a != Value::Bool(true));
        // `additionalProperties: false` alone: one `falseSchema` error at
        // the object, as the runtime validator reports it.
        let lone_false = additional == Some(&Value::Bool(false))
            && !m.contains_key("properties")
            && !m.contains_key("patternProperties");
        if lone_false {
            out.push(Self::leaf(
                cx,
                quote!(o.is_empty()),
                "falseSchema",
                "False schema does not allow value",
            ));
            return;
        }
        if patterns.is_none() && additional.is_none() {
            return;
        }
        let track = additional.is_some();
        let mut body = match patterns {
            Some(patterns) => self.pattern_properties(cx, patterns, track, ptr),
            None => Vec::new(),
        };
        if let Some(additional) = additional {
            let names: Vec<Literal> = props
                .map(|p| p.keys().map(|k| Literal::string(k)).collect())
                .unwrap_or_default();
            let known = if names.is_empty() {
                quote!(false)
            } else {
                quote!(matches!(k.as_str(), #(#names)|*))
            };
            let prologue = if patterns.is_some() {
                quote!(let mut matched = #known;)
            } else {
                quote!(let matched = #known;)
            };
            body.insert(0, prologue);
            body.push(self.additional_property(cx, additional, ptr));
        }
        if additional == Some(&Value::Bool(false)) && cx.mode == Mode::Errors {
            out.push(quote! {{
                let mut unexpected: Vec<&str> = Vec::new();
                for (k, i) in o { #(#body)* }
                if !unexpected.is_empty() { e.additional_properties(p, &unexpected); }
            }});
        } else if !body.is_empty() {
            out.push(quote!(for (k, i) in o { #(#body)* }));
        }
    }

    /// One check per `patternProperties` entry, on the key `k` and value
    /// `i`; with `track` a match also sets `matched`.
    fn pattern_properties(
        &mut self,
        cx: &Cx,
        patterns: &Map<String, Value>,
        track: bool,
        ptr: &str,
    ) -> Vec<TokenStream> {
        let at = child_pointer(ptr, "patternProperties");
        let mut body = Vec::new();
        for (source, sub) in patterns {
            let id = self.pattern(source);
            let check = self.apply_child(cx, sub, &child_pointer(&at, source), quote!(key(k)));
            let mark = if track {
                quote!(matched = true;)
            } else {
                quote!()
            };
            if !check.is_empty() || track {
                body.push(quote!(if #id.is_match(k) { #mark #check }));
            }
        }
        body
    }

    /// The check of a key no `properties` or `patternProperties` entry
    /// matched.
    fn additional_property(&mut self, cx: &Cx, additional: &Value, ptr: &str) -> TokenStream {
        match (additional, cx.mode) {
            (Value::Bool(false), Mode::Valid) => {
                let fail = &cx.fail;
                quote!(if !matched { #fail; })
            }
            (Value::Bool(false), Mode::Errors) => quote!(if !matched {
                unexpected.push(k.as_str());
            }),
            _ => {
                let check = self.apply_child(
                    cx,
                    additional,
                    &child_pointer(ptr, "additionalProperties"),
                    quote!(key(k)),
                );
                quote!(if !matched { #check })
            }
        }
    }

    /// `propertyNames`: each key, as a string instance, against `names`.
    fn property_names(&mut self, cx: &Cx, names: &Value, at: &str) -> Option<TokenStream> {
        match (names, cx.mode) {
            (Value::Bool(true), _) => None,
            (Value::Bool(false), _) => Some(Self::leaf(
                cx,
                quote!(o.is_empty()),
                "falseSchema",
                "False schema does not allow value",
            )),
            (_, Mode::Valid) => {
                let v = self.valid(names, at)?;
                let fail = &cx.fail;
                Some(quote! {
                    for k in o.keys() {
                        let i = &Value::String(k.clone());
                        if !(#v) { #fail; }
                    }
                })
            }
            (_, Mode::Errors) => {
                let errs = self.errors(names, at);
                (!errs.is_empty()).then(|| {
                    quote! {
                        for k in o.keys() {
                            let i = &Value::String(k.clone());
                            let mut inner = Errors::default();
                            {
                                let e = &mut inner;
                                let p = &Path::ROOT;
                                #errs
                            }
                            e.property_names(p, inner);
                        }
                    }
                })
            }
        }
    }

    /// Schema dependencies (`dependencies` with a schema, `dependentSchemas`
    /// from 2019-09), which apply to the object itself.
    fn dependent_schemas(
        &mut self,
        cx: &Cx,
        m: &Map<String, Value>,
        ptr: &str,
    ) -> Vec<TokenStream> {
        let mut dependent: Vec<(&String, &Value, String)> = Vec::new();
        if let Some(Value::Object(deps)) = m.get("dependencies") {
            for (trigger, sub) in deps {
                if !sub.is_array() {
                    dependent.push((
                        trigger,
                        sub,
                        child_pointer(&child_pointer(ptr, "dependencies"), trigger),
                    ));
                }
            }
        }
        if self.a.draft.knows("dependentSchemas") {
            if let Some(Value::Object(deps)) = m.get("dependentSchemas") {
                for (trigger, sub) in deps {
                    let at = child_pointer(&child_pointer(ptr, "dependentSchemas"), trigger);
                    dependent.push((trigger, sub, at));
                }
            }
        }
        let mut out = Vec::new();
        for (trigger, sub, at) in dependent {
            let check = self.apply(cx, sub, &at);
            if !check.is_empty() {
                let t = Literal::string(trigger);
                out.push(quote!(if o.contains_key(#t) { #check }));
            }
        }
        out
    }
}

/// `minimum`/`maximum` under draft-04's `exclusiveMinimum: true` /
/// `exclusiveMaximum: true` (the draft-mix reading, in every draft): the
/// modifier's keyword, the limit and the exclusive comparison.
fn draft_04_exclusive<'m>(
    m: &'m Map<String, Value>,
    keyword: &str,
) -> Option<(&'static str, &'m Value, (&'static str, &'static str))> {
    let (modifier, bound) = match keyword {
        "minimum" => (
            "exclusiveMinimum",
            ("gt", "is less than or equal to the minimum of"),
        ),
        "maximum" => (
            "exclusiveMaximum",
            ("lt", "is greater than or equal to the maximum of"),
        ),
        _ => return None,
    };
    if m.get(modifier) != Some(&Value::Bool(true)) {
        return None;
    }
    let limit = m.get(keyword).filter(|v| v.is_number())?;
    Some((modifier, limit, bound))
}

/// The checks that each of `names` is a key of `o`.
fn required_names(cx: &Cx, names: &[Value]) -> Vec<TokenStream> {
    names
        .iter()
        .filter_map(Value::as_str)
        .map(|name| {
            let lit = Literal::string(name);
            match cx.mode {
                Mode::Valid => {
                    let fail = &cx.fail;
                    quote!(if !o.contains_key(#lit) { #fail; })
                }
                Mode::Errors => {
                    let message = format!("{} is a required property", Value::from(name));
                    quote!(if !o.contains_key(#lit) { e.required(p, #lit, #message); })
                }
            }
        })
        .collect()
}

/// `minX` (when above 0) and `maxX` of the container bound to `binding`:
/// its `len()` against the limit, named `one`/`many` in the message.
fn size_checks(
    cx: &Cx,
    m: &Map<String, Value>,
    binding: TokenStream,
    [min_keyword, max_keyword]: [&str; 2],
    [one, many]: [&str; 2],
) -> Vec<TokenStream> {
    let noun = |n: u64| if n == 1 { one } else { many };
    let mut out = Vec::new();
    if let Some(min) = m
        .get(min_keyword)
        .and_then(size_limit)
        .filter(|min| *min > 0)
    {
        out.push(Emitter::leaf(
            cx,
            quote!(#binding.len() as u64 >= #min),
            min_keyword,
            &format!("value has less than {min} {}", noun(min)),
        ));
    }
    if let Some(max) = m.get(max_keyword).and_then(size_limit) {
        out.push(Emitter::leaf(
            cx,
            quote!(#binding.len() as u64 <= #max),
            max_keyword,
            &format!("value has more than {max} {}", noun(max)),
        ));
    }
    out
}

/// The pattern binding a kind's value: `Value::String(s)` etc.
fn binder(kind: &str) -> TokenStream {
    match kind {
        "string" => quote!(Value::String(s)),
        "number" => quote!(Value::Number(n)),
        "array" => quote!(Value::Array(a)),
        _ => quote!(Value::Object(o)),
    }
}

fn type_check(types: &[&str]) -> TokenStream {
    let mut arms = Vec::new();
    let number = types.contains(&"number");
    for t in types {
        arms.push(match *t {
            "null" => quote!(matches!(i, Value::Null)),
            "boolean" => quote!(matches!(i, Value::Bool(_))),
            "string" => quote!(matches!(i, Value::String(_))),
            "array" => quote!(matches!(i, Value::Array(_))),
            "object" => quote!(matches!(i, Value::Object(_))),
            "number" => quote!(matches!(i, Value::Number(_))),
            "integer" if !number => quote!(matches!(i, Value::Number(n) if rt::is_integer(n))),
            _ => continue,
        });
    }
    if arms.is_empty() {
        quote!(false)
    } else {
        quote!(#(#arms)||*)
    }
}

fn type_message(types: &[&str]) -> String {
    if let [t] = types {
        return format!("value is not of type \"{t}\"");
    }
    let ordered: Vec<String> = super::TYPES
        .iter()
        .filter(|t| types.contains(t))
        .map(|t| format!("\"{t}\""))
        .collect();
    format!("value is not of types {}", ordered.join(", "))
}

fn enum_message(options: &[Value]) -> String {
    let mut s = String::from("value is not one of ");
    let total = options.len();
    if total <= 3 {
        for (n, o) in options.iter().enumerate() {
            if n == 0 {
                s.push_str(&o.to_string());
            } else if n == total - 1 {
                s.push_str(&format!(" or {o}"));
            } else {
                s.push_str(&format!(", {o}"));
            }
        }
    } else {
        for (n, o) in options.iter().take(2).enumerate() {
            if n == 0 {
                s.push_str(&o.to_string());
            } else {
                s.push_str(&format!(", {o}"));
            }
        }
        s.push_str(&format!(" or {} other candidates", total - 2));
    }
    s
}

fn plural(n: u64) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

fn limit_tokens(v: &Value) -> TokenStream {
    if let Some(u) = v.as_u64() {
        quote!(Limit::U(#u))
    } else if let Some(i) = v.as_i64() {
        quote!(Limit::I(#i))
    } else {
        let f = Literal::f64_suffixed(v.as_f64().unwrap_or(0.0));
        quote!(Limit::F(#f))
    }
}

/// `bool` expression: `value` (an expression of type `&Value`) equals `c`
/// under JSON equality. Allocates nothing.
fn eq_expr(c: &Value, value: TokenStream) -> TokenStream {
    match c {
        Value::Null => quote!(matches!(#value, Value::Null)),
        Value::Bool(b) => quote!(matches!(#value, Value::Bool(#b))),
        Value::String(s) => {
            let lit = Literal::string(s);
            quote!(matches!(#value, Value::String(s) if s == #lit))
        }
        Value::Number(_) => {
            let lim = limit_tokens(c);
            quote!(matches!(#value, Value::Number(n) if rt::compare(n, #lim).is_eq()))
        }
        Value::Array(items) => {
            let len = items.len();
            let checks = items.iter().enumerate().map(|(n, item)| {
                let inner = eq_expr(item, quote!(&a[#n]));
                quote!(&& #inner)
            });
            quote!(matches!(#value, Value::Array(a) if a.len() == #len #(#checks)*))
        }
        Value::Object(members) => {
            let len = members.len();
            let checks = members.iter().map(|(k, item)| {
                let lit = Literal::string(k);
                let inner = eq_expr(item, quote!(v));
                quote!(&& o.get(#lit).is_some_and(|v| #inner))
            });
            quote!(matches!(#value, Value::Object(o) if o.len() == #len #(#checks)*))
        }
    }
}

fn enum_expr(options: &[Value]) -> TokenStream {
    if options.is_empty() {
        return quote!(false);
    }
    let strings: Vec<Literal> = options
        .iter()
        .filter_map(Value::as_str)
        .map(Literal::string)
        .collect();
    let mut arms = Vec::new();
    if !strings.is_empty() {
        arms.push(quote!(
            matches!(i, Value::String(s) if matches!(s.as_str(), #(#strings)|*))
        ));
    }
    for o in options.iter().filter(|o| !o.is_string()) {
        arms.push(eq_expr(o, quote!(i)));
    }
    quote!(#(#arms)||*)
}

/// Number of tokens in `ts`, counting inside groups.
fn token_len(ts: &TokenStream) -> usize {
    ts.clone()
        .into_iter()
        .map(|t| match t {
            proc_macro2::TokenTree::Group(g) => 1 + token_len(&g.stream()),
            _ => 1,
        })
        .sum()
}
