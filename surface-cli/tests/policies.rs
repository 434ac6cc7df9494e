//! Policies in `check`: names are compared as a multiset, so removing one
//! of two policies of one name is a change (a review found it was not).

mod support;

use serde_json::json;
use support::*;

/// The contract names a binding's policies by `name()` (plus ` [hides]` /
/// ` [discloses]`), and `check` compares them as a SET. Built-ins are
/// named after their kind, not their argument: `has_permission("a")` and
/// `has_permission("b")` are both "has-permission [hides]". Dropping one
/// of two same-named policies — here the second permission check on
/// `devices.disable` — is therefore no change at all (exit 0, nothing
/// listed), though the agent may now call what it could not.
/// Right behaviour: `policy-removed` (widening, exit 1): compare the
/// policies as a multiset (and, better, let built-ins name their argument,
/// e.g. "has-permission(devices:admin) [hides]", so that a changed
/// permission, tenant rule, environment list or rate is visible too).
#[test]
fn removing_one_of_two_same_named_policies_is_widening() {
    let mut base = devices_contract();
    let mut current = base.clone();
    entry(&mut base, "procedures", "domain:devices.disable")["policies"] =
        json!(["has-permission [hides]", "has-permission [hides]"]);
    entry(&mut current, "procedures", "domain:devices.disable")["policies"] =
        json!(["has-permission [hides]"]);
    let (code, pairs) = classes("review-same-named-policies", &base, &current);
    assert_eq!(
        pairs,
        [(
            "widening".to_string(),
            "policy-removed:domain:devices.disable:has-permission [hides]".to_string()
        )],
        "a policy was removed and check saw nothing"
    );
    assert_eq!(code, 1);
}
