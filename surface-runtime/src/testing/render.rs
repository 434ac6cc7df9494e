//! How a test surface shows a snapshot: [`serialize_surface_snapshot`] for
//! golden files, and the one-line-per-capability listing the assertions
//! print when they fail.

use serde_json::{Map, Value};

use crate::snapshot::SurfaceSnapshot;

/// The snapshot as pretty JSON (two-space indent, keys sorted at every
/// level, a final newline), stable across runs: `surfaceId` (random per
/// registry) is written `"<surface-id>"` and `capturedAt` (the clock's)
/// `"<captured-at>"`. Everything else — `surfaceVersion`, registration ids
/// (`r1`, `r2`, … in registration order), descriptions, schemas,
/// availability — is kept, so a golden file changes exactly when what the
/// agent is shown changes.
pub fn serialize_surface_snapshot(snapshot: &SurfaceSnapshot) -> String {
    let mut value = serde_json::to_value(snapshot).unwrap_or(Value::Null);
    if let Value::Object(top) = &mut value {
        top.insert("surfaceId".into(), Value::from("<surface-id>"));
        top.insert("capturedAt".into(), Value::from("<captured-at>"));
    }
    let mut text = serde_json::to_string_pretty(&sorted(value)).unwrap_or_default();
    text.push('\n');
    text
}

/// `value` with every object's keys in sorted order.
fn sorted(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(
                entries
                    .into_iter()
                    .map(|(k, v)| (k, sorted(v)))
                    .collect::<Map<_, _>>(),
            )
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sorted).collect()),
        other => other,
    }
}

/// One line per capability of `snapshot`, as the assertions print it:
///
/// ```text
/// surfaceVersion 4
///   domain:devices.disable  r3  unavailable: Select at least one device  confirmation required  locked: deviceIds
///   view:devices.table.select  r1  available
/// ```
pub fn describe_surface(snapshot: &SurfaceSnapshot) -> String {
    let mut out = format!("surfaceVersion {}\n", snapshot.surface_version);
    for p in &snapshot.procedures {
        let locked: Vec<&str> = p
            .bound_fields
            .iter()
            .filter(|b| b.locked)
            .map(|b| b.path.as_str())
            .collect();
        out.push_str(&line(
            &p.procedure_id,
            &p.registration_id,
            p.available,
            p.unavailable_reason.as_deref(),
        ));
        out.push_str(&format!("  confirmation {}", p.confirmation.as_str()));
        if !locked.is_empty() {
            out.push_str(&format!("  locked: {}", locked.join(", ")));
        }
        out.push('\n');
    }
    for c in &snapshot.components {
        for o in &c.observations {
            out.push_str(&line(
                &o.capability_id,
                &c.registration_id,
                o.available,
                o.unavailable_reason.as_deref(),
            ));
            out.push('\n');
        }
        for a in &c.actions {
            out.push_str(&line(
                &a.capability_id,
                &c.registration_id,
                a.available,
                a.unavailable_reason.as_deref(),
            ));
            out.push_str(&format!("  confirmation {}", a.confirmation.as_str()));
            out.push('\n');
        }
    }
    if snapshot.procedures.is_empty() && snapshot.components.is_empty() {
        out.push_str("  (no capability)\n");
    }
    out
}

fn line(id: &str, registration: &str, available: bool, reason: Option<&str>) -> String {
    let state = match (available, reason) {
        (true, _) => "available".to_string(),
        (false, Some(reason)) => format!("unavailable: {}", reason.escape_debug()),
        (false, None) => "unavailable".to_string(),
    };
    format!("  {}  {registration}  {state}", id.escape_debug())
}
