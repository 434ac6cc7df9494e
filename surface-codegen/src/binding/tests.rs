use super::*;

fn facts(role: &str, item: TokenStream, overridable: TokenStream) -> TokenStream {
    let role: TokenStream = role.parse().unwrap();
    quote! {
        api = (crate::api),
        path = "devices.disable",
        module = (devices::disable),
        input = object {
            additional_properties = forbidden,
            fields = [
                ("deviceIds", device_ids, required, not_nullable, 0, "Vec<String>"),
                ("reason", reason, optional, not_nullable, 0, "String"),
                ("type", r#type, optional, nullable, 1, "Option<String>"),
            ]
        },
        user_path = "devices.disable",
        role = #role,
        overridable = [#overridable],
        item = { #item }
    }
}

fn errors_of(tokens: TokenStream) -> Vec<String> {
    let input: ImplInput = syn::parse2(tokens).unwrap();
    match check_and_expand(&input).1.finish() {
        Ok(()) => vec![],
        Err(e) => e.into_iter().map(|e| e.to_string()).collect(),
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
    assert!(errors.is_empty());
    let out = out.to_string();
    let a = out.find("name : \"reason\" , locked : false").unwrap();
    let b = out.find("name : \"deviceIds\" , locked : true").unwrap();
    assert!(a < b, "{out}");
    // `why: Option<String>` binds an optional property: None is omitted.
    assert!(out.contains("if let :: core :: option :: Option :: Some (value) = & self . why"));
    assert!(out.contains(
        ":: core :: option :: Option < crate :: api :: devices :: disable :: __fields :: reason >"
    ));
    // Support items are named through the `api` path the user wrote.
    assert!(out.contains("impl crate :: api :: __agent_surface_private :: BoundInput for B"));
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
            "crate :: api :: __agent_surface_procedures ! { \"a.b\" (crate :: api) user_path = \"a.b\" , role = bound , overridable = [a] ,"
        ),
        "{out}"
    );
}

#[test]
fn attribute_with_a_bad_option_still_binds_the_valid_arguments() {
    let out = expand_attribute(
        quote!(api, "a.b", overridable(a), bogus),
        quote!(
            struct S {
                a: u8,
            }
        ),
    )
    .to_string();
    assert!(
        out.contains("api :: __agent_surface_procedures ! { \"a.b\" (api) user_path = \"a.b\" , role = bound , overridable = [a] ,"),
        "{out}"
    );
    assert!(out.contains(
        "compile_error ! { \"unknown `agent_procedure` option `bogus`; expected `input` or `overridable(field, …)`\" }"
    ), "{out}");
}

#[test]
fn unmappable_item_still_gets_an_impl_without_fields() {
    let input: ImplInput = syn::parse2(facts(
        "bound",
        quote!(
            struct T(u8);
        ),
        quote!(),
    ))
    .unwrap();
    let (out, errors) = check_and_expand(&input);
    let errs: Vec<String> = errors
        .finish()
        .unwrap_err()
        .into_iter()
        .map(|e| e.to_string())
        .collect();
    assert_eq!(
        errs,
        ["`#[agent_procedure]` needs a struct with named fields, one per input property"]
    );
    let out = out.to_string();
    assert!(out.contains("impl crate :: api :: __agent_surface_private :: BoundInput for T"));
    assert!(
        out.contains(
            "const FIELDS : & [crate :: api :: __agent_surface_private :: BoundField] = & [] ;"
        ),
        "{out}"
    );
}

#[test]
fn generic_struct_gets_no_impl_and_both_shape_errors() {
    let input: ImplInput = syn::parse2(facts(
        "bound",
        quote!(
            struct T<X>(X);
        ),
        quote!(),
    ))
    .unwrap();
    let (out, errors) = check_and_expand(&input);
    assert!(out.is_empty());
    assert_eq!(errors.finish().unwrap_err().into_iter().count(), 2);
}
