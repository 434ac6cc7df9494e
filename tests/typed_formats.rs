//! Typed formats (docs/codegen.md, "Typed formats"): with
//! `manifest!(…, typed_formats = [uuid, chrono, url])` and the facade's
//! `typed-uuid`, `typed-chrono`, `typed-url` features (enabled for this
//! package's tests by its self dev-dependency), `format: uuid` is
//! `uuid::Uuid`, `date-time` `chrono::DateTime<FixedOffset>`, `date`
//! `chrono::NaiveDate`, `uri`/`url` `url::Url`; without the argument the
//! same manifest gives `String`s.

use agent_surface::chrono::{DateTime, FixedOffset, NaiveDate};
use agent_surface::url::Url;
use agent_surface::uuid::Uuid;
use serde_json::{json, Value};

mod typed {
    agent_surface::manifest!(
        "tests/fixtures/typed_formats.manifest.json",
        typed_formats = [uuid, chrono, url]
    );
}

mod strings {
    agent_surface::manifest!("tests/fixtures/typed_formats.manifest.json");
}

fn value_through<T: serde::de::DeserializeOwned + serde::Serialize>(value: &Value) -> Value {
    let typed: T = serde_json::from_value(value.clone()).unwrap_or_else(|e| panic!("{value}: {e}"));
    serde_json::to_value(&typed).unwrap()
}

/// `(instancePath, keyword)` of the generated input validator's errors.
fn validator_errors(instance: &Value) -> Vec<(String, String)> {
    let validator = typed::authority()
        .input_validator("tickets.schedule")
        .expect("generated validator");
    let mut errors: Vec<_> = validator
        .errors(instance)
        .into_iter()
        .map(|e| (e.instance_path, e.keyword.to_string()))
        .collect();
    errors.sort();
    errors
}

const ID: &str = "3b241101-e2bb-4255-8caf-4136c566a962";

#[test]
fn formats_are_typed_values_with_the_argument_and_strings_without() {
    let value = json!({
        "ticketId": ID,
        "related": ["00000000-0000-0000-0000-000000000000"],
        "dueAt": "2026-03-01T09:30:00+02:00",
        "day": "2026-03-01",
        "link": "https://example.com/t/1?x=1",
        "site": "https://example.com/",
        "note": "a@example.com"
    });
    let input: typed::tickets::schedule::Input = serde_json::from_value(value.clone()).unwrap();
    assert_eq!(input.ticket_id, Uuid::parse_str(ID).unwrap());
    assert_eq!(input.related, Some(vec![Uuid::nil()]));
    let due: DateTime<FixedOffset> = input.due_at;
    assert_eq!(due.offset().local_minus_utc(), 2 * 3600);
    assert_eq!(due.to_utc().to_rfc3339(), "2026-03-01T07:30:00+00:00");
    assert_eq!(
        input.day,
        Some(Some(NaiveDate::from_ymd_opt(2026, 3, 1).unwrap()))
    );
    let link: &Url = input.link.as_ref().unwrap();
    assert_eq!(link.host_str(), Some("example.com"));
    // Formats without a typed mapping stay `String`.
    let note: &Option<String> = &input.note;
    assert_eq!(note.as_deref(), Some("a@example.com"));
    assert_eq!(serde_json::to_value(&input).unwrap(), value);

    let output: typed::tickets::schedule::Output =
        serde_json::from_value(json!({ "id": ID })).unwrap();
    assert_eq!(output.id.to_string(), ID);

    let plain: strings::tickets::schedule::Input = serde_json::from_value(value.clone()).unwrap();
    let (id, due, link): (&String, &String, &Option<String>) =
        (&plain.ticket_id, &plain.due_at, &plain.link);
    assert_eq!(
        (id.as_str(), due.as_str()),
        (ID, "2026-03-01T09:30:00+02:00")
    );
    assert!(link.is_some());
}

#[test]
fn typed_values_round_trip_the_canonical_texts_exactly() {
    for value in [
        json!({"ticketId": ID, "dueAt": "2026-03-01T09:30:00Z"}),
        json!({"ticketId": ID, "dueAt": "2026-03-01T09:30:00.123Z", "day": null}),
        json!({"ticketId": ID, "dueAt": "2026-03-01T09:30:00.123456-05:30"}),
        json!({"ticketId": ID, "dueAt": "1999-12-31T23:59:59.999999999+14:00", "related": []}),
        json!({"ticketId": ID, "dueAt": "2026-03-01T09:30:00Z", "link": "urn:isbn:0451450523", "site": "https://example.com/a%20b?q=1#f"}),
    ] {
        assert_eq!(
            value_through::<typed::tickets::schedule::Input>(&value),
            value
        );
    }
}

/// What the typed values write differently from what they read (the
/// documented cost of the typed formats; `String` keeps every text).
#[test]
fn typed_values_write_their_own_canonical_form() {
    let written = |due: &str, id: &str, link: &str| {
        let value = json!({"ticketId": id, "dueAt": due, "link": link});
        let back = value_through::<typed::tickets::schedule::Input>(&value);
        (
            back["dueAt"].as_str().unwrap().to_string(),
            back["ticketId"].as_str().unwrap().to_string(),
            back["link"].as_str().unwrap().to_string(),
        )
    };
    assert_eq!(
        written(
            "2026-03-01T09:30:00.000Z",
            "3B241101-E2BB-4255-8CAF-4136C566A962",
            "HTTPS://Example.COM"
        ),
        (
            // A zero fraction is dropped (JavaScript's `toISOString` writes
            // `.000`), other fractions have 3, 6 or 9 digits, `+00:00` is `Z`.
            "2026-03-01T09:30:00Z".to_string(),
            // UUIDs are written lowercase.
            ID.to_string(),
            // URLs are WHATWG-normalized: scheme and host lowercase, `/`
            // for an empty path.
            "https://example.com/".to_string()
        )
    );
    assert_eq!(
        written("2026-03-01T09:30:00.5+00:00", ID, "https://example.com/x").0,
        "2026-03-01T09:30:00.500Z"
    );
}

#[test]
fn the_validator_checks_the_format_before_the_type_reads_it() {
    let mut refusals = Vec::new();
    for (bad, expected) in [
        (
            json!({"ticketId": "not-a-uuid", "dueAt": "2026-03-01T09:30:00Z"}),
            vec![("/ticketId", "format"), ("/ticketId", "pattern")],
        ),
        (
            json!({"ticketId": ID, "dueAt": "tomorrow"}),
            vec![("/dueAt", "format")],
        ),
        // `format: date` inside `anyOf [date, null]`.
        (
            json!({"ticketId": ID, "dueAt": "2026-03-01T09:30:00Z", "day": "2026-02-30"}),
            vec![("/day", "anyOf")],
        ),
    ] {
        let expected: Vec<(String, String)> = expected
            .into_iter()
            .map(|(p, k)| (p.to_string(), k.to_string()))
            .collect();
        assert_eq!(validator_errors(&bad), expected, "{bad}");
        // The typed field refuses it too, each with its own reason.
        refusals.push(
            serde_json::from_value::<typed::tickets::schedule::Input>(bad)
                .unwrap_err()
                .to_string(),
        );
    }
    assert_eq!(
        refusals,
        [
            "UUID parsing failed: invalid character: found `n` at 0",
            "input contains invalid characters",
            "input is out of range"
        ]
    );
    let good = json!({"ticketId": ID, "dueAt": "2026-03-01T09:30:00Z", "day": "2026-02-28"});
    assert_eq!(validator_errors(&good), []);
}

/// A UI binding names the typed field with the facade's re-export.
#[agent_surface::agent_procedure(typed, "tickets.schedule", overridable(due_at))]
struct ScheduleSelection {
    ticket_id: Uuid,
    due_at: DateTime<FixedOffset>,
}

#[test]
fn typed_fields_bind_and_are_written_as_their_json_text() {
    use agent_surface::BoundInput;
    let bound = ScheduleSelection {
        ticket_id: Uuid::parse_str(ID).unwrap(),
        due_at: DateTime::parse_from_rfc3339("2026-03-01T09:30:00Z").unwrap(),
    };
    assert_eq!(
        Value::Object(bound.to_bound_json().unwrap()),
        json!({"ticketId": ID, "dueAt": "2026-03-01T09:30:00Z"})
    );
}
