use serde_json::json;

use super::rt::{self, Limit};
use super::*;

#[test]
fn path_renders_json_pointer_with_escapes() {
    let root = Path::ROOT;
    let a = root.key("a/b");
    let b = a.index(3);
    let c = b.key("~x");
    assert_eq!(root.to_pointer(), "");
    assert_eq!(c.to_pointer(), "/a~1b/3/~0x");
}

#[test]
fn error_field_is_first_key_or_missing_required_property() {
    let mut e = Errors::default();
    let root = Path::ROOT;
    e.required(&root, "id", "\"id\" is a required property");
    let tags = root.key("tags");
    let item = tags.index(0);
    e.push(&item, "type", "value is not of type \"string\"");
    e.required(&item, "x", "\"x\" is a required property");
    let arr = root.index(1);
    e.required(&arr, "y", "\"y\" is a required property");
    e.additional_properties(&root, &["zz", "yy"]);
    let errors = e.into_vec();
    let fields: Vec<Option<&str>> = errors.iter().map(|e| e.field.as_deref()).collect();
    assert_eq!(
        fields,
        vec![Some("id"), Some("tags"), Some("tags"), Some("y"), None]
    );
    assert_eq!(errors[1].instance_path, "/tags/0");
    assert_eq!(
        errors[4].to_json(),
        json!({"instancePath": "", "keyword": "additionalProperties",
               "message": "Additional properties are not allowed ('zz', 'yy' were unexpected)"})
    );
}

#[test]
fn compare_is_exact_across_integer_and_float_forms() {
    let n = |v: serde_json::Value| match v {
        serde_json::Value::Number(n) => n,
        _ => unreachable!(),
    };
    // 2^53 + 1 is above 2^53 as a float, though it rounds to it.
    assert!(rt::gt(
        &n(json!(9_007_199_254_740_993u64)),
        Limit::F(9_007_199_254_740_992.0)
    ));
    assert!(rt::ge(&n(json!(1.0)), Limit::U(1)));
    assert!(!rt::gt(&n(json!(1.0)), Limit::U(1)));
    assert!(rt::lt(&n(json!(-1)), Limit::F(-0.5)));
    assert!(rt::le(&n(json!(u64::MAX)), Limit::U(u64::MAX)));
    assert!(rt::lt(&n(json!(i64::MIN)), Limit::I(i64::MIN + 1)));
    assert!(rt::gt(&n(json!(1e300)), Limit::U(u64::MAX)));
    assert!(rt::lt(&n(json!(0.5)), Limit::U(1)));
}

#[test]
fn integer_includes_floats_with_zero_fraction() {
    assert!(rt::is_integer(&serde_json::Number::from_f64(2.0).unwrap()));
    assert!(!rt::is_integer(&serde_json::Number::from_f64(2.5).unwrap()));
    assert!(rt::is_integer(&serde_json::Number::from(-3)));
}

#[test]
fn multiple_of_float_is_exact_in_decimal() {
    let f = |v: f64| serde_json::Number::from_f64(v).unwrap();
    assert!(rt::multiple_of_float(&f(0.3), 0.1));
    assert!(rt::multiple_of_float(&f(4.5), 1.5));
    assert!(!rt::multiple_of_float(&f(35.0), 1.5));
    assert!(rt::multiple_of_float(&f(0.0075), 0.0001));
    assert!(!rt::multiple_of_float(&f(0.00751), 0.0001));
    assert!(rt::multiple_of_float(&f(1e300), 0.5));
    assert!(rt::multiple_of_float(&f(1070468.14), 0.01));
    assert!(rt::multiple_of_integer(&serde_json::Number::from(-10), 5.0));
    assert!(!rt::multiple_of_integer(&f(7.5), 2.0));
    assert!(rt::multiple_of_integer(&f(1e20), 4.0));
}

#[test]
fn lengths_count_code_points() {
    assert!(rt::max_length("💩💩", 2));
    assert!(!rt::min_length("💩", 2));
    assert!(rt::min_length("ab", 2));
    assert!(!rt::max_length("abc", 2));
}

#[test]
fn json_equality_is_numeric_and_order_free() {
    assert!(rt::json_eq(
        &json!({"a": [1, {"b": 2.0}]}),
        &json!({"a": [1.0, {"b": 2}]})
    ));
    assert!(!rt::json_eq(&json!([1, 2]), &json!([2, 1])));
    assert!(!rt::json_eq(&json!(0), &json!(false)));
}

#[test]
fn unique_items_small_and_hashed_paths_agree() {
    let mut many: Vec<serde_json::Value> = (0..40).map(|i| json!({"i": i})).collect();
    assert!(rt::unique(&many));
    many.push(json!({"i": 7.0}));
    assert!(!rt::unique(&many));
    assert!(!rt::unique(&[json!(1), json!(1.0)]));
    assert!(rt::unique(&[json!([1]), json!([true])]));
}

#[test]
fn pattern_shim_searches_unanchored_in_unicode_mode() {
    static P: crate::pattern::Pattern = crate::pattern::Pattern::new("^\\p{L}+$");
    static Q: crate::pattern::Pattern = crate::pattern::Pattern::new("b");
    assert!(P.is_match("été"));
    assert!(!P.is_match("a1"));
    assert!(Q.is_match("abc"));
}

/// `{"properties": {"ids": {"items": {"type": "string"}}}, "required": ["bound"]}`, by hand.
fn ids_are_strings_valid(i: &Value, _: u32) -> bool {
    i.get("bound").is_some()
        && i.get("ids")
            .and_then(Value::as_array)
            .is_none_or(|ids| ids.iter().all(Value::is_string))
}

fn ids_are_strings_collect(i: &Value, p: &Path<'_>, e: &mut Errors, _: u32) {
    if let Some(ids) = i.get("ids").and_then(Value::as_array) {
        let at = p.key("ids");
        for (n, id) in ids.iter().enumerate() {
            if !id.is_string() {
                e.push(&at.index(n), "type", "value is not of type \"string\"");
            }
        }
    }
    if i.get("bound").is_none() {
        e.required(p, "bound", "\"bound\" is a required property");
    }
}

const IDS_ARE_STRINGS: Validator = Validator::new(ids_are_strings_valid, ids_are_strings_collect);

#[test]
fn errors_limited_lists_the_first_errors_and_the_fields_of_the_rest() {
    let many = json!({"ids": vec![1; 1000]});
    let limited = IDS_ARE_STRINGS.errors_limited(&many, 3);
    assert_eq!(
        limited
            .errors
            .iter()
            .map(|e| e.instance_path.as_str())
            .collect::<Vec<_>>(),
        ["/ids/0", "/ids/1", "/ids/2"]
    );
    assert!(limited.truncated);
    // The 997 unlisted `type` errors and the unlisted `required` one.
    assert_eq!(limited.unlisted_fields, ["bound", "ids"]);
    // Exactly the limit: nothing left out.
    let exactly = json!({"ids": [1, 2], "bound": 0});
    let limited = IDS_ARE_STRINGS.errors_limited(&exactly, 2);
    assert_eq!(limited.errors.len(), 2);
    assert!(!limited.truncated && limited.unlisted_fields.is_empty());
    assert_eq!(limited.errors, IDS_ARE_STRINGS.errors(&exactly));
    // Valid: nothing.
    let valid = json!({"ids": ["a"], "bound": 0});
    assert_eq!(
        IDS_ARE_STRINGS.errors_limited(&valid, 2),
        LimitedErrors::default()
    );
}
