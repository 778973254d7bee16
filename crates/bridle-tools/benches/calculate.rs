//! The calculator on seed 003's scaffold-post expression.
//!
//! `cargo bench -p bridle-tools --bench calculate`; BENCHMARKS.md holds the figures.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;

use bridle_tools::evaluate;
use criterion::Criterion;

fn main() {
    let mut c = Criterion::default().configure_from_args();
    let mut calc = c.benchmark_group("calculate");
    calc.bench_function("scaffold_posts", |b| {
        b.iter(|| evaluate(black_box("round(20000 / ceil(20 / 1.85) * 100) / 100")))
    });
    calc.finish();
    c.final_summary();
}
