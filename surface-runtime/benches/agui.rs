//! Reading an AG-UI run (docs/performance.md, "AG-UI"): a recorded
//! `@ag-ui/mastra` stream (`tests/fixtures/agui/parallel.sse`: two tool
//! calls, their arguments in two deltas each) plus 1,000 text chunks,
//! decoded and assembled by `agui::run::read_stream`, against a baseline
//! in the same run: `serde_json::from_str::<Value>` of every event's JSON
//! alone (no SSE framing, no assembly, no limits). Run with
//! `cargo bench -p surface-runtime --features ag-ui --bench agui`.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::Value;
use surface_runtime::agui::run::read_stream;
use surface_runtime::agui::AgUiLimits;

fn stream() -> String {
    let recorded = include_str!("../../tests/fixtures/agui/parallel.sse");
    let (head, finished) = recorded
        .rsplit_once("data: {\"type\":\"RUN_FINISHED\"")
        .expect("the recording ends with RUN_FINISHED");
    let mut body = head.to_string();
    for i in 0..1000 {
        body.push_str(&format!(
            "data: {{\"type\":\"TEXT_MESSAGE_CHUNK\",\"role\":\"assistant\",\"messageId\":\"m-1\",\"delta\":\"word {i} of the answer \"}}\n\n"
        ));
    }
    body.push_str("data: {\"type\":\"RUN_FINISHED\"");
    body.push_str(finished);
    body
}

fn bench(c: &mut Criterion) {
    let body = stream();
    let output = read_stream(body.as_bytes(), AgUiLimits::default()).expect("the stream reads");
    assert_eq!(output.calls.len(), 2);
    eprintln!("stream: {} bytes, {} events", body.len(), output.events);
    let datas: Vec<&str> = body
        .split("\n\n")
        .filter_map(|e| e.strip_prefix("data: "))
        .collect();
    let mut group = c.benchmark_group("agui");
    group.bench_function("baseline: serde_json::Value per event", |b| {
        b.iter(|| {
            for data in &datas {
                black_box(serde_json::from_str::<Value>(black_box(data)).unwrap());
            }
        })
    });
    group.bench_function("read_stream (SSE, events, assembly, limits)", |b| {
        b.iter(|| {
            black_box(read_stream(
                black_box(body.as_bytes()),
                AgUiLimits::default(),
            ))
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
