use serde_json::json;

use super::*;

fn unsupported(schema: Value) -> Vec<(String, String)> {
    validator_tokens(&schema, &ValidatorOptions::default())
        .err()
        .unwrap_or_default()
        .into_iter()
        .map(|u| (u.keyword, u.pointer))
        .collect()
}
