//! Criterion benchmarks of the hand-written `format` checks against zod's
//! own regex for the same format run through `pattern` (the alternative
//! docs/formats.md decided against), natively, on one valid and one
//! invalid value each.
//!
//! `format/<name>/{handwritten,zod_regex}/{valid,invalid}`.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use surface_runtime::format;
use surface_runtime::pattern::Pattern;

static UUID: Pattern =
    Pattern::new("^([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})$");
static DATE_TIME: Pattern = Pattern::new(
    "^(?:(?:\\d\\d[2468][048]|\\d\\d[13579][26]|\\d\\d0[48]|[02468][048]00|[13579][26]00)-02-29|\\d{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12]\\d|3[01])|(?:0[469]|11)-(?:0[1-9]|[12]\\d|30)|(?:02)-(?:0[1-9]|1\\d|2[0-8])))T(?:(?:[01]\\d|2[0-3]):[0-5]\\d:[0-5]\\d(?:\\.\\d+)?(?:Z|([+-](?:[01]\\d|2[0-3]):[0-5]\\d))|(?:[01]\\d|2[0-3]):[0-5]\\d(?::[0-5]\\d(?:\\.\\d+)?)?)$",
);
static EMAIL: Pattern = Pattern::new(
    "^(?:[A-Za-z0-9_'+\\-]+\\.)*[A-Za-z0-9_'+\\-]*[A-Za-z0-9_+-]@(?:[A-Za-z0-9][A-Za-z0-9\\-]*\\.)+[A-Za-z]{2,}$",
);
static HOSTNAME: Pattern = Pattern::new(
    "^(?=.{1,253}\\.?$)[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?(?:\\.[a-zA-Z0-9](?:[-0-9a-zA-Z]{0,61}[0-9a-zA-Z])?)*\\.?$",
);

/// (format, hand-written check, zod's regex, a valid value, an invalid value)
type Case = (
    &'static str,
    fn(&str) -> bool,
    &'static Pattern,
    &'static str,
    &'static str,
);

fn bench(c: &mut Criterion) {
    let cases: [Case; 4] = [
        (
            "uuid",
            format::is_uuid,
            &UUID,
            "123e4567-e89b-12d3-a456-426614174000",
            "not-a-uuid",
        ),
        (
            "date-time",
            format::is_date_time,
            &DATE_TIME,
            "2026-11-29T19:00:00.123+02:00",
            "tomorrow",
        ),
        (
            "email",
            format::is_email,
            &EMAIL,
            "first.last+tag@sub.example.org",
            "first.last@example",
        ),
        (
            "hostname",
            format::is_hostname,
            &HOSTNAME,
            "api.eu-west-1.example.com",
            "api..example.com",
        ),
    ];
    let mut group = c.benchmark_group("format");
    for (name, check, pattern, valid, invalid) in cases {
        assert!(
            check(valid)
                && pattern.is_match(valid)
                && !check(invalid)
                && !pattern.is_match(invalid)
        );
        for (label, value) in [("valid", valid), ("invalid", invalid)] {
            group.bench_function(format!("{name}/handwritten/{label}"), |b| {
                b.iter(|| check(black_box(value)))
            });
            group.bench_function(format!("{name}/zod_regex/{label}"), |b| {
                b.iter(|| pattern.is_match(black_box(value)))
            });
        }
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(std::time::Duration::from_millis(300))
        .measurement_time(std::time::Duration::from_secs(1));
    targets = bench
}
criterion_main!(benches);
