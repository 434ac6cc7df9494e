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

use super::{child, size_limit, Analysis, ValidatorOptions};

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
}

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
            Mode::Valid => {
                let fail = &cx.fail;
                quote!(if !(#cond) { #fail; })
            }
            Mode::Errors => quote!(if !(#cond) { e.push(p, #keyword, #message); }),
        }
    }

    /// Applies `node` to the same instance (`allOf`, `then`, `$ref`, …).
    fn apply(&mut self, cx: &Cx, node: &Value, ptr: &str) -> TokenStream {
        match cx.mode {
            Mode::Valid => match self.valid(node, ptr) {
                None => TokenStream::new(),
                Some(v) => {
                    let fail = &cx.fail;
                    quote!(if !(#v) { #fail; })
                }
            },
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
            Mode::Valid => match self.valid(node, ptr) {
                None => TokenStream::new(),
                Some(v) => {
                    let fail = &cx.fail;
                    quote!(if !(#v) { #fail; })
                }
            },
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
        let draft = self.a.draft;
        let mut out = Vec::new();
        let has = |k: &str| m.contains_key(k) && draft.knows(k);
        if m.contains_key("$ref") && !draft.ref_siblings() {
            out.push(self.apply_ref(cx, &child(ptr, "$ref")));
            return out;
        }

        // type
        let types: Option<Vec<&str>> = match m.get("type") {
            Some(Value::String(t)) => Some(vec![t.as_str()]),
            Some(Value::Array(ts)) => Some(ts.iter().filter_map(Value::as_str).collect()),
            _ => None,
        };
        let mut bound_single: Option<&str> = None;
        if let Some(types) = &types {
            let cond = type_check(types);
            let message = type_message(types);
            let single = match types.as_slice() {
                [t] => Some(*t),
                _ => None,
            };
            match (cx.mode, single) {
                (Mode::Valid, Some(t @ ("string" | "object" | "array" | "number"))) => {
                    let fail = &cx.fail;
                    let bind = binder(t);
                    out.push(quote!(let #bind = i else { #fail; };));
                    bound_single = Some(t);
                }
                (Mode::Valid, Some("integer")) => {
                    let fail = &cx.fail;
                    out.push(quote!(let Value::Number(n) = i else { #fail; };));
                    out.push(quote!(if !rt::is_integer(n) { #fail; }));
                    bound_single = Some("number");
                }
                _ => out.push(Self::leaf(cx, cond, "type", &message)),
            }
        }

        // const, enum
        if let Some(c) = m.get("const") {
            let cond = eq_expr(c, quote!(i));
            out.push(Self::leaf(cx, cond, "const", &format!("{c} was expected")));
        }
        if let Some(Value::Array(options)) = m.get("enum") {
            let cond = enum_expr(options);
            out.push(Self::leaf(cx, cond, "enum", &enum_message(options)));
        }

        // per-type groups
        let groups: [(&str, Vec<TokenStream>); 4] = [
            ("number", self.number_checks(cx, m)),
            ("string", self.string_checks(cx, m, ptr)),
            ("array", self.array_checks(cx, m, ptr)),
            ("object", self.object_checks(cx, m, ptr)),
        ];
        for (kind, checks) in groups {
            if checks.is_empty() {
                continue;
            }
            if let Some(t) = bound_single {
                if t == kind {
                    out.extend(checks);
                }
                // Other kinds cannot occur once the type is bound.
                continue;
            }
            if let Some(types) = &types {
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

        // applicators on the same instance
        if let Some(Value::Array(all)) = m.get("allOf") {
            for (n, sub) in all.iter().enumerate() {
                out.push(self.apply(cx, sub, &child(&child(ptr, "allOf"), &n.to_string())));
            }
        }
        if let Some(Value::Array(any)) = m.get("anyOf") {
            let at = child(ptr, "anyOf");
            let branches: Option<Vec<TokenStream>> = any
                .iter()
                .enumerate()
                .map(|(n, sub)| self.valid_shared(sub, &child(&at, &n.to_string())))
                .collect();
            // A branch that accepts everything makes `anyOf` accept everything.
            if let Some(branches) = branches {
                out.push(Self::leaf(
                    cx,
                    quote!(#(#branches)||*),
                    "anyOf",
                    "value is not valid under any of the schemas listed in the 'anyOf' keyword",
                ));
            }
        }
        if let Some(Value::Array(one)) = m.get("oneOf") {
            let at = child(ptr, "oneOf");
            let branches: Vec<TokenStream> = one
                .iter()
                .enumerate()
                .map(|(n, sub)| {
                    self.valid_shared(sub, &child(&at, &n.to_string()))
                        .unwrap_or_else(|| quote!(true))
                })
                .collect();
            // Written as a fold with early stop in the valid pass.
            match cx.mode {
                Mode::Valid => {
                    let fail = &cx.fail;
                    out.push(quote! {{
                        let mut c = 0u32;
                        #( if #branches { c += 1; if c > 1 { #fail; } } )*
                        if c != 1 { #fail; }
                    }});
                }
                Mode::Errors => {
                    out.push(quote! {{
                        let mut c = 0u32;
                        #( if #branches { c += 1; } )*
                        if c == 0 {
                            e.push(p, "oneOf", "value is not valid under any of the schemas listed in the 'oneOf' keyword");
                        } else if c > 1 {
                            e.push(p, "oneOf", "value is valid under more than one of the schemas listed in the 'oneOf' keyword");
                        }
                    }});
                }
            }
        }
        if let Some(not) = m.get("not") {
            let message = format!("{not} is not allowed for value");
            let cond = match self.valid_shared(not, &child(ptr, "not")) {
                Some(v) => quote!(!(#v)),
                None => quote!(false),
            };
            out.push(Self::leaf(cx, cond, "not", &message));
        }
        if has("if") && (m.contains_key("then") || m.contains_key("else")) {
            let cond = self
                .valid_shared(&m["if"], &child(ptr, "if"))
                .unwrap_or_else(|| quote!(true));
            let then = match m.get("then") {
                Some(s) => self.apply(cx, s, &child(ptr, "then")),
                None => TokenStream::new(),
            };
            let els = match m.get("else") {
                Some(s) => self.apply(cx, s, &child(ptr, "else")),
                None => TokenStream::new(),
            };
            if !(then.is_empty() && els.is_empty()) {
                out.push(quote!(if #cond { #then } else { #els }));
            }
        }
        if m.contains_key("$ref") {
            out.push(self.apply_ref(cx, &child(ptr, "$ref")));
        }
        out.retain(|t| !t.is_empty());
        out
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
            if let Some(limit) = m.get(keyword).filter(|v| v.is_number()) {
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

    fn string_checks(&mut self, cx: &Cx, m: &Map<String, Value>, _ptr: &str) -> Vec<TokenStream> {
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
        if let Some(source) = m.get("pattern").and_then(Value::as_str) {
            let id = self.pattern(source);
            out.push(Self::leaf(
                cx,
                quote!(#id.is_match(s)),
                "pattern",
                &format!("value does not match \"{source}\""),
            ));
        }
        if let Some(name) = m.get("format").and_then(Value::as_str) {
            let lit = Literal::string(name);
            out.push(Self::leaf(
                cx,
                quote!(format::check(#lit, s) != Some(false)),
                "format",
                &format!("value is not a \"{name}\""),
            ));
        }
        out
    }

    fn array_checks(&mut self, cx: &Cx, m: &Map<String, Value>, ptr: &str) -> Vec<TokenStream> {
        let draft = self.a.draft;
        let mut out = Vec::new();
        if let Some(min) = m.get("minItems").and_then(size_limit) {
            if min > 0 {
                out.push(Self::leaf(
                    cx,
                    quote!(a.len() as u64 >= #min),
                    "minItems",
                    &format!("value has less than {min} item{}", plural(min)),
                ));
            }
        }
        if let Some(max) = m.get("maxItems").and_then(size_limit) {
            out.push(Self::leaf(
                cx,
                quote!(a.len() as u64 <= #max),
                "maxItems",
                &format!("value has more than {max} item{}", plural(max)),
            ));
        }
        if m.get("uniqueItems") == Some(&Value::Bool(true)) {
            out.push(Self::leaf(
                cx,
                quote!(rt::unique(a)),
                "uniqueItems",
                "value has non-unique elements",
            ));
        }
        // Tuples: draft-07 `items` array and 2020-12 `prefixItems`.
        let mut tuple_len: Option<usize> = None;
        let prefix = m
            .get("prefixItems")
            .filter(|_| draft.knows("prefixItems"))
            .and_then(Value::as_array);
        for (keyword, list) in [
            ("items", m.get("items").and_then(Value::as_array)),
            ("prefixItems", prefix),
        ] {
            let Some(list) = list else { continue };
            if keyword == "items" {
                tuple_len = Some(list.len());
            }
            let at = child(ptr, keyword);
            for (n, sub) in list.iter().enumerate() {
                let check =
                    self.apply_child(cx, sub, &child(&at, &n.to_string()), quote!(index(#n)));
                if !check.is_empty() {
                    out.push(quote!(if let Some(i) = a.get(#n) { #check }));
                }
            }
        }
        if let Some(items) = m.get("items").filter(|v| !v.is_array()) {
            let skip = prefix.map_or(0, Vec::len);
            if items == &Value::Bool(false) && cx.mode == Mode::Valid {
                let fail = &cx.fail;
                out.push(quote!(if a.len() > #skip { #fail; }));
            } else {
                let check = self.apply_child(cx, items, &child(ptr, "items"), quote!(index(j)));
                if !check.is_empty() {
                    out.push(quote! {
                        for (j, i) in a.iter().enumerate().skip(#skip) { #check }
                    });
                }
            }
        }
        if let (Some(n), Some(additional)) = (tuple_len, m.get("additionalItems")) {
            match additional {
                Value::Bool(false) => match cx.mode {
                    Mode::Valid => {
                        let fail = &cx.fail;
                        out.push(quote!(if a.len() > #n { #fail; }));
                    }
                    Mode::Errors => {
                        out.push(quote!(if a.len() > #n { e.additional_items(p, a.len() - #n); }))
                    }
                },
                Value::Object(_) => {
                    let check = self.apply_child(
                        cx,
                        additional,
                        &child(ptr, "additionalItems"),
                        quote!(index(j)),
                    );
                    if !check.is_empty() {
                        out.push(quote! {
                            for (j, i) in a.iter().enumerate().skip(#n) { #check }
                        });
                    }
                }
                _ => {}
            }
        }
        if let Some(contains) = m.get("contains") {
            let (min, max) = if draft.knows("minContains") {
                (
                    m.get("minContains").and_then(size_limit),
                    m.get("maxContains").and_then(size_limit),
                )
            } else {
                (None, None)
            };
            let matches = self
                .valid_shared(contains, &child(ptr, "contains"))
                .unwrap_or_else(|| quote!(true));
            let message = "None of value are valid under the given schema";
            let (min, max) = (min.unwrap_or(1), max);
            if min > 0 || max.is_some() {
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
                out.push(quote! {
                    let ok = #label: {
                        let mut c = 0u64;
                        for i in a { if #matches { c += 1; #over } }
                        #enough
                    };
                    if !ok { #fail; }
                });
            }
        }
        out
    }

    fn object_checks(&mut self, cx: &Cx, m: &Map<String, Value>, ptr: &str) -> Vec<TokenStream> {
        let draft = self.a.draft;
        let mut out = Vec::new();
        if let Some(min) = m.get("minProperties").and_then(size_limit) {
            if min > 0 {
                out.push(Self::leaf(
                    cx,
                    quote!(o.len() as u64 >= #min),
                    "minProperties",
                    &format!("value has less than {min} propert{}", plural_y(min)),
                ));
            }
        }
        if let Some(max) = m.get("maxProperties").and_then(size_limit) {
            out.push(Self::leaf(
                cx,
                quote!(o.len() as u64 <= #max),
                "maxProperties",
                &format!("value has more than {max} propert{}", plural_y(max)),
            ));
        }
        let required_checks = |out: &mut Vec<TokenStream>,
                               names: &[Value],
                               trigger: Option<&str>| {
            let names: Vec<&str> = names.iter().filter_map(Value::as_str).collect();
            if names.is_empty() {
                return;
            }
            let checks: Vec<TokenStream> = names
                .iter()
                .map(|name| {
                    let lit = Literal::string(name);
                    match cx.mode {
                        Mode::Valid => {
                            let fail = &cx.fail;
                            quote!(if !o.contains_key(#lit) { #fail; })
                        }
                        Mode::Errors => {
                            let message = format!("{} is a required property", Value::from(*name));
                            quote!(if !o.contains_key(#lit) { e.required(p, #lit, #message); })
                        }
                    }
                })
                .collect();
            match trigger {
                None => out.extend(checks),
                Some(t) => {
                    let t = Literal::string(t);
                    out.push(quote!(if o.contains_key(#t) { #(#checks)* }));
                }
            }
        };
        if let Some(Value::Array(names)) = m.get("required") {
            required_checks(&mut out, names, None);
        }
        if draft.knows("dependentRequired") {
            if let Some(Value::Object(deps)) = m.get("dependentRequired") {
                for (trigger, names) in deps {
                    if let Value::Array(names) = names {
                        required_checks(&mut out, names, Some(trigger));
                    }
                }
            }
        }
        if let Some(Value::Object(deps)) = m.get("dependencies") {
            for (trigger, names) in deps {
                if let Value::Array(names) = names {
                    required_checks(&mut out, names, Some(trigger));
                }
            }
        }

        // properties
        let props = m.get("properties").and_then(Value::as_object);
        if let Some(props) = props {
            let at = child(ptr, "properties");
            for (name, sub) in props {
                let lit = Literal::string(name);
                let check = self.apply_child(cx, sub, &child(&at, name), quote!(key(#lit)));
                if !check.is_empty() {
                    out.push(quote!(if let Some(i) = o.get(#lit) { #check }));
                }
            }
        }
        // patternProperties and additionalProperties: one pass over the keys.
        let patterns = m.get("patternProperties").and_then(Value::as_object);
        let additional = m.get("additionalProperties");
        let additional = additional.filter(|a| **a != Value::Bool(true));
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
        }
        let additional = additional.filter(|_| !lone_false);
        if patterns.is_some_and(|p| !p.is_empty()) || additional.is_some() {
            let mut body = Vec::new();
            let track = additional.is_some();
            if let Some(patterns) = patterns {
                let at = child(ptr, "patternProperties");
                for (source, sub) in patterns {
                    let id = self.pattern(source);
                    let check = self.apply_child(cx, sub, &child(&at, source), quote!(key(k)));
                    let mark = if track {
                        quote!(matched = true;)
                    } else {
                        quote!()
                    };
                    if !check.is_empty() || track {
                        body.push(quote!(if #id.is_match(k) { #mark #check }));
                    }
                }
            }
            if let Some(additional) = additional {
                let names: Vec<Literal> = props
                    .map(|p| p.keys().map(|k| Literal::string(k)).collect())
                    .unwrap_or_default();
                let known = if names.is_empty() {
                    quote!(false)
                } else {
                    quote!(matches!(k.as_str(), #(#names)|*))
                };
                let has_patterns = patterns.is_some_and(|p| !p.is_empty());
                let prologue = if has_patterns {
                    quote!(let mut matched = #known;)
                } else {
                    quote!(let matched = #known;)
                };
                let tail = match (additional, cx.mode) {
                    (Value::Bool(false), Mode::Valid) => {
                        let fail = &cx.fail;
                        quote!(if !matched { #fail; })
                    }
                    (Value::Bool(false), Mode::Errors) => {
                        quote!(if !matched {
                            unexpected.push(k.as_str());
                        })
                    }
                    _ => {
                        let check = self.apply_child(
                            cx,
                            additional,
                            &child(ptr, "additionalProperties"),
                            quote!(key(k)),
                        );
                        quote!(if !matched { #check })
                    }
                };
                body.insert(0, prologue);
                body.push(tail);
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
        if let Some(names) = m.get("propertyNames") {
            let at = child(ptr, "propertyNames");
            match (names, cx.mode) {
                (Value::Bool(true), _) => {}
                (Value::Bool(false), _) => out.push(Self::leaf(
                    cx,
                    quote!(o.is_empty()),
                    "falseSchema",
                    "False schema does not allow value",
                )),
                (_, Mode::Valid) => {
                    if let Some(v) = self.valid(names, &at) {
                        let fail = &cx.fail;
                        out.push(quote! {
                            for k in o.keys() {
                                let i = &Value::String(k.clone());
                                if !(#v) { #fail; }
                            }
                        });
                    }
                }
                (_, Mode::Errors) => {
                    let errs = self.errors(names, &at);
                    if !errs.is_empty() {
                        out.push(quote! {
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
                        });
                    }
                }
            }
        }
        // Schema dependencies apply to the object itself.
        let mut dependent: Vec<(&String, &Value, String)> = Vec::new();
        if let Some(Value::Object(deps)) = m.get("dependencies") {
            for (trigger, sub) in deps {
                if !sub.is_array() {
                    dependent.push((trigger, sub, child(&child(ptr, "dependencies"), trigger)));
                }
            }
        }
        if draft.knows("dependentSchemas") {
            if let Some(Value::Object(deps)) = m.get("dependentSchemas") {
                for (trigger, sub) in deps {
                    dependent.push((
                        trigger,
                        sub,
                        child(&child(ptr, "dependentSchemas"), trigger),
                    ));
                }
            }
        }
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

fn plural_y(n: u64) -> &'static str {
    if n == 1 {
        "y"
    } else {
        "ies"
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
