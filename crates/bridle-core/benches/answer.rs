//! Answer intake throughput: a 20,000-character answer (the default limit) of prose with three
//! calls, in the shapes a model writes them, read by `parse_answer`. Also the worst layer case
//! (prose full of brackets that are not JSON).
//!
//! `cargo bench -p bridle-core --bench answer`; BENCHMARKS.md holds the figures.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use std::hint::black_box;

use bridle_core::answer::{IntakeLimits, parse_answer};
use criterion::{Criterion, Throughput};

const PROSE: &str = "The guardrail standard asks for a top rail at 90 cm or more; at 120 cm or higher the \
intermediate rails go in two or more even tiers (see 제13조제2호, 난간의 상하 간격은 60센티미터 이하). ";

/// Prose up to `chars` characters with the three calls spread through it.
fn answer(calls: [&str; 3], chars: usize) -> String {
    let used: usize = calls.iter().map(|c| c.chars().count()).sum();
    let filler = chars - used;
    let mut out = String::new();
    for (i, call) in calls.iter().enumerate() {
        let mut part = String::new();
        while part.chars().count() + PROSE.chars().count() <= filler / 3 {
            part.push_str(PROSE);
        }
        let missing = filler / 3 - part.chars().count() + if i == 2 { filler % 3 } else { 0 };
        part.push_str(&"x".repeat(missing));
        out.push_str(&part);
        out.push_str(call);
    }
    assert_eq!(out.chars().count(), chars);
    out
}

fn bench(c: &mut Criterion) {
    let limits = IntakeLimits::default();
    let fenced = [
        "\n```json\n{\"tool\": \"search_law\", \"arguments\": {\"query\": \"안전난간 제13조제2호\"}}\n```\n",
        "\n```\n{\"tool\": \"calculate\", \"arguments\": {\"expression\": \"150 / 3 * 10\"}}\n```\n",
        "\n~~~json\n{\"tool\": \"convert_unit\", \"arguments\": {\"value\": 100, \"from\": \"kgf\", \"to\": \"N\"}}\n~~~\n",
    ];
    let bracket = [
        " {\"tool\": \"search_law\", \"arguments\": {\"query\": \"안전난간 제13조제2호\"}} ",
        " {\u{201C}tool\u{201D}: \u{201C}calculate\u{201D}, \u{201C}arguments\u{201D}: {\u{201C}expression\u{201D}: \u{201C}150 / 3 * 10\u{201D}},} ",
        " {\"tool\": \"convert_unit\", \"arguments\": {\"value\": 100, \"from\": \"kgf\", \"to\": \"N\",}} ",
    ];
    let react = [
        "\nAction: search_law\nAction Input: {\"query\": \"안전난간 제13조제2호\"}\nObservation: ok\n",
        "\nAction: calculate\nAction Input: {\"expression\": \"150 / 3 * 10\"}\nObservation: ok\n",
        "\nAction: convert_unit\nAction Input: {\"value\": 100, \"from\": \"kgf\", \"to\": \"N\"}\n",
    ];
    let mut group = c.benchmark_group("answer");
    for (name, calls) in [("fenced", fenced), ("bracket", bracket), ("react", react)] {
        let text = answer(calls, 20_000);
        assert_eq!(parse_answer(&text, &limits).unwrap().calls.len(), 3, "{name}");
        group.throughput(Throughput::Bytes(text.len() as u64));
        group.bench_function(format!("parse_20k/{name}"), |b| b.iter(|| parse_answer(black_box(&text), &limits)));
    }
    // No call at all, brackets everywhere: every layer runs and fails.
    let noise = "{see [note 3] and {appendix (b)}} ".repeat(20_000 / 34);
    group.throughput(Throughput::Bytes(noise.len() as u64));
    group.bench_function("parse_20k/unparseable", |b| b.iter(|| parse_answer(black_box(&noise), &limits)));
    group.finish();
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    bench(&mut c);
    c.final_summary();
}
