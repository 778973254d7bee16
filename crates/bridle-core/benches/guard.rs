//! Guard detector speed: a 2,000-character chat message (English and Korean apart), benign prose
//! throughput, and a 1 MB adversarial input (linear time, no backtracking blow-up); the rules
//! alone, the learned model alone, and the combined decision the guard runs (`with_model`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;

use bridle_core::guard::Detector;
use bridle_core::guard::combine;
use bridle_core::guard::model::Model;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

const EN: &str = "The checkout service scaled to three replicas after the morning deploy, and latency went back \
under two hundred milliseconds. Please review the dashboard for the payment queue before the weekly meeting, \
then summarize the error budget for the team. ";
const KO: &str = "오늘 오전 배포 이후 체크아웃 서비스의 레플리카를 세 개로 늘렸고 지연 시간은 다시 정상 범위로 돌아왔습니다. \
주간 회의 전에 결제 대기열 대시보드를 확인하고 팀에 오류 예산을 정리해 주세요. ";

fn repeat_to_chars(unit: &str, chars: usize) -> String {
    unit.chars().cycle().take(chars).collect()
}

fn bench(c: &mut Criterion) {
    let d = Detector::new().unwrap();
    let m = Model::bundled().unwrap();
    let t = combine::Thresholds::BUNDLED.document;
    let en = repeat_to_chars(EN, 2000);
    let ko = repeat_to_chars(KO, 2000);
    let mut g = c.benchmark_group("chat_2000_chars");
    g.bench_function("english", |b| b.iter(|| black_box(d.detect(black_box(&en)))));
    g.bench_function("korean", |b| b.iter(|| black_box(d.detect(black_box(&ko)))));
    g.bench_function("english_model_only", |b| b.iter(|| black_box(m.score(black_box(&en)))));
    g.bench_function("korean_model_only", |b| b.iter(|| black_box(m.score(black_box(&ko)))));
    g.bench_function("english_with_model", |b| b.iter(|| black_box(combine::decide(&d, m, t, black_box(&en)))));
    g.bench_function("korean_with_model", |b| b.iter(|| black_box(combine::decide(&d, m, t, black_box(&ko)))));
    g.finish();

    let prose_en = repeat_to_chars(EN, 1_000_000);
    let prose_ko = repeat_to_chars(KO, 330_000);
    let mut g = c.benchmark_group("benign_prose");
    g.sample_size(10);
    g.throughput(Throughput::Bytes(prose_en.len() as u64));
    g.bench_function("english_1mb", |b| b.iter(|| black_box(d.detect(black_box(&prose_en)))));
    g.throughput(Throughput::Bytes(prose_ko.len() as u64));
    g.bench_function("korean_1mb", |b| b.iter(|| black_box(d.detect(black_box(&prose_ko)))));
    g.throughput(Throughput::Bytes(prose_en.len() as u64));
    g.bench_function("english_1mb_with_model", |b| {
        b.iter(|| black_box(combine::decide(&d, m, t, black_box(&prose_en))))
    });
    g.throughput(Throughput::Bytes(prose_ko.len() as u64));
    g.bench_function("korean_1mb_with_model", |b| {
        b.iter(|| black_box(combine::decide(&d, m, t, black_box(&prose_ko))))
    });
    g.finish();

    // Adversarial: near-miss prefixes of many rules, repeated, plus invisible characters and
    // spaced letters, 1 MB.
    let unit = "ignore the previous ignore all of your earlier i g n o r e ![a](http://x ‍ 이전 지시를 ";
    let adversarial = repeat_to_chars(unit, 1_000_000);
    let mut g = c.benchmark_group("adversarial");
    g.sample_size(10);
    g.throughput(Throughput::Bytes(adversarial.len() as u64));
    g.bench_function("mixed_1mb", |b| b.iter(|| black_box(d.detect(black_box(&adversarial)))));
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
