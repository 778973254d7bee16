//! Seed 003's workbench through the gate (`bridle check`'s engine): 22+ valid calls with their
//! results, 27+ invalid calls and answers each with its code and message, the reference values,
//! and the audit, which records metadata only, never the pasted text.

use std::sync::Arc;

use bridle_core::answer::{Format, IntakeLimits};
use bridle_core::audit::EventKind;
use bridle_core::{Code, Principal, RunContext};
use bridle_runtime::check::{CheckReport, Status, WORKBENCH_PRINCIPAL, check, gate, workbench_principal};
use bridle_runtime::gate::Gate;
use bridle_runtime::store::Stores;
use serde_json::{Value, json};

struct Bench {
    gate: Gate,
    principal: Principal,
    run: RunContext,
}

impl Bench {
    fn new() -> Bench {
        let config = Arc::new(bridle_runtime::bundled::checkout().unwrap());
        let principal = workbench_principal(&config).unwrap();
        Bench {
            gate: gate(config, Stores::memory(), std::sync::Arc::new(bridle_tools::Workbench)).unwrap(),
            principal,
            run: RunContext::new("run-wb", "workbench"),
        }
    }

    async fn check(&self, answer: &str) -> CheckReport {
        check(&self.gate, &self.principal, &self.run, answer, &IntakeLimits::default()).await.unwrap()
    }

    /// One call, written as Bridle's JSON, through parse and gate.
    async fn call(&self, tool: &str, args: Value) -> CheckReport {
        self.check(&json!({"tool": tool, "arguments": args}).to_string()).await
    }
}

/// What a valid call must return.
enum Expect {
    /// `{"value": v}` (within 1e-9).
    Value(f64),
    /// `{"value": v, "unit": u}`.
    Converted(f64, &'static str),
    /// Search results: the first id and how many.
    Found(&'static str, usize),
}

fn valid_calls() -> Vec<(&'static str, Value, Expect)> {
    use Expect::*;
    vec![
        ("calculate", json!({"expression": "1 + 2 * 3"}), Value(7.0)),
        ("calculate", json!({"expression": "(1 + 2) * 3"}), Value(9.0)),
        ("calculate", json!({"expression": "-2^2"}), Value(-4.0)),
        ("calculate", json!({"expression": "2^3^2"}), Value(512.0)),
        ("calculate", json!({"expression": "10 % 4"}), Value(2.0)),
        ("calculate", json!({"expression": "sqrt(16) + abs(-3)"}), Value(7.0)),
        ("calculate", json!({"expression": "round(2.5) + round(-2.5)"}), Value(0.0)),
        ("calculate", json!({"expression": "floor(-1.5) + ceil(1.2)"}), Value(0.0)),
        ("calculate", json!({"expression": "min(3, 1, 2) * max(4, 5)"}), Value(5.0)),
        ("calculate", json!({"expression": "sin(pi / 2) + cos(0) + tan(0)"}), Value(2.0)),
        ("calculate", json!({"expression": "1.5e3 / 3"}), Value(500.0)),
        ("calculate", json!({"expression": "0.1 + 0.2"}), Value(0.3)),
        // references: the guardrail's intermediate rails and the scaffold's posts
        ("calculate", json!({"expression": "150 / (2 + 1) * 10"}), Value(500.0)),
        ("calculate", json!({"expression": "ceil(20 / 1.85) + 1"}), Value(12.0)),
        ("calculate", json!({"expression": "round(20000 / ceil(20 / 1.85) * 100) / 100"}), Value(1818.18)),
        ("convert_unit", json!({"value": 100, "from": "kgf", "to": "N"}), Converted(980.665, "N")),
        ("convert_unit", json!({"value": 1500, "from": "mm", "to": "m"}), Converted(1.5, "m")),
        ("convert_unit", json!({"value": 150, "from": "cm", "to": "mm"}), Converted(1500.0, "mm")),
        ("convert_unit", json!({"value": 2.5, "from": "km", "to": "m"}), Converted(2500.0, "m")),
        ("convert_unit", json!({"value": 3, "from": "t", "to": "kg"}), Converted(3000.0, "kg")),
        ("convert_unit", json!({"value": 500, "from": "g", "to": "kg"}), Converted(0.5, "kg")),
        ("convert_unit", json!({"value": 1.2, "from": "kN", "to": "N"}), Converted(1200.0, "N")),
        ("convert_unit", json!({"value": 180, "from": "deg", "to": "rad"}), Converted(std::f64::consts::PI, "rad")),
        ("convert_unit", json!({"value": 1, "from": "m2", "to": "cm2"}), Converted(10_000.0, "cm2")),
        ("search_law", json!({"query": "안전난간 중간 난간대 간격 제13조제2호"}), Found("제13조제2호", 3)),
        ("search_law", json!({"query": "강관비계 비계기둥 간격 제60조제1호", "top_k": 1}), Found("제60조제1호", 1)),
        ("search_law", json!({"query": "난간의 하중 100킬로그램", "top_k": 5}), Found("제13조제7호", 5)),
        ("search_law", json!({"query": "초정밀작업 조도", "top_k": 2}), Found("제8조제1호", 2)),
        ("search_law", json!({"query": "article 28 stair landing"}), Found("제28조", 3)),
    ]
}

#[tokio::test]
async fn seed_003_valid_calls() {
    let bench = Bench::new();
    let cases = valid_calls();
    assert!(cases.len() >= 22);
    for (tool, args, expect) in cases {
        let report = bench.call(tool, args.clone()).await;
        assert_eq!(report.parse.status, Status::Ok);
        let call = &report.calls[0];
        assert_eq!(call.status, Status::Ok, "{tool} {args}: {:?}", call.message);
        let result = call.result.clone().unwrap();
        match expect {
            Expect::Value(v) => {
                let got = result["value"].as_f64().unwrap();
                assert!((got - v).abs() < 1e-9, "{tool} {args}: {got} != {v}");
            }
            Expect::Converted(v, unit) => {
                let got = result["value"].as_f64().unwrap();
                assert!((got - v).abs() < 1e-9 * v.abs().max(1.0), "{tool} {args}: {got} != {v}");
                assert_eq!(result["unit"], unit);
            }
            Expect::Found(id, n) => {
                let results = result["results"].as_array().unwrap();
                assert_eq!(results.len(), n, "{args}");
                assert_eq!(results[0]["id"], id, "{args}: {result}");
            }
        }
    }
}

#[tokio::test]
async fn seed_003_references() {
    let bench = Bench::new();
    // A top rail at 150 cm needs 2 intermediate rails at 500 mm gaps (제13조제2호: 2 tiers or more
    // when at 120 cm or higher, gaps of at most 60 cm).
    let law = bench
        .call("search_law", json!({"query": "상부 난간대 120센티미터 이상 중간 난간대 제13조제2호", "top_k": 1}))
        .await;
    let unit = &law.calls[0].result.as_ref().unwrap()["results"][0];
    assert_eq!(unit["id"], "제13조제2호");
    assert!(unit["text"].as_str().unwrap().contains("2단 이상으로 균등하게"));
    let gap = bench.call("convert_unit", json!({"value": 150.0 / 3.0, "from": "cm", "to": "mm"})).await;
    assert_eq!(gap.calls[0].result, Some(json!({"value": 500.0, "unit": "mm"})));
    // A 20 m scaffold run needs 12 posts at 1818.18 mm (제60조제1호: at most 1.85 m apart).
    let law = bench.call("search_law", json!({"query": "비계기둥의 간격 띠장 방향 제60조제1호", "top_k": 1})).await;
    let unit = &law.calls[0].result.as_ref().unwrap()["results"][0];
    assert_eq!(unit["id"], "제60조제1호");
    assert!(unit["text"].as_str().unwrap().contains("1.85미터 이하"));
    let answer = r#"Thought: 20 m at most 1.85 m apart.
Action: calculate
Action Input: {"expression": "ceil(20 / 1.85) + 1"}
Observation: 12
Action: calculate
Action Input: {"expression": "round(20000 / ceil(20 / 1.85) * 100) / 100"}"#;
    let r = bench.check(answer).await;
    assert_eq!(r.parse.format, Some(Format::React));
    let values: Vec<_> = r.calls.iter().map(|c| c.result.as_ref().unwrap()["value"].as_f64().unwrap()).collect();
    assert_eq!(values, [12.0, 1818.18]);
    let spacing_mm = r.calls[1].result.as_ref().unwrap()["value"].as_f64().unwrap();
    let limit_mm = bench.call("convert_unit", json!({"value": 1.85, "from": "m", "to": "mm"})).await.calls[0]
        .result
        .as_ref()
        .unwrap()["value"]
        .as_f64()
        .unwrap();
    assert_eq!(limit_mm, 1850.0);
    assert!(spacing_mm <= limit_mm);
    // 100 kgf = 980.665 N (제13조제7호's 100 킬로그램 load).
    let r = bench.call("convert_unit", json!({"value": 100, "from": "kgf", "to": "N"})).await;
    assert_eq!(r.calls[0].result, Some(json!({"value": 980.665, "unit": "N"})));
}

/// An answer, the code it must get (from the parser or the call) and the exact message.
fn invalid() -> Vec<(&'static str, String, Code, &'static str)> {
    let call = |tool: &str, args: Value| json!({"tool": tool, "arguments": args}).to_string();
    let calc = |e: &str| call("calculate", json!({"expression": e}));
    let conv = |v: Value, from: &str, to: &str| call("convert_unit", json!({"value": v, "from": from, "to": to}));
    vec![
        // missing argument
        (
            "missing expression",
            call("calculate", json!({})),
            Code::SchemaRejected,
            "at `/`: \"expression\" is a required property",
        ),
        (
            "missing unit",
            call("convert_unit", json!({"value": 1, "from": "m"})),
            Code::SchemaRejected,
            "at `/`: \"to\" is a required property",
        ),
        (
            "missing query",
            call("search_law", json!({"top_k": 2})),
            Code::SchemaRejected,
            "at `/`: \"query\" is a required property",
        ),
        (
            "no arguments at all",
            r#"{"tool": "calculate"}"#.to_owned(),
            Code::SchemaRejected,
            "at `/`: \"expression\" is a required property",
        ),
        // wrong type
        (
            "expression as a number",
            calc_value(42),
            Code::SchemaRejected,
            "at `/expression`: value is not of type \"string\"",
        ),
        (
            "value as a string",
            conv(json!("100"), "kgf", "N"),
            Code::SchemaRejected,
            "at `/value`: value is not of type \"number\"",
        ),
        (
            "top_k as a string",
            call("search_law", json!({"query": "난간", "top_k": "3"})),
            Code::SchemaRejected,
            "at `/top_k`: value is not of type \"integer\"",
        ),
        (
            "top_k as a fraction",
            call("search_law", json!({"query": "난간", "top_k": 2.5})),
            Code::SchemaRejected,
            "at `/top_k`: value is not of type \"integer\"",
        ),
        (
            "arguments as an array",
            call("calculate", json!(["1+1"])),
            Code::SchemaRejected,
            "at `/`: value is not of type \"object\"",
        ),
        // out of range
        (
            "top_k zero",
            call("search_law", json!({"query": "난간", "top_k": 0})),
            Code::OutOfRange,
            "`top_k` = `0` is outside [1, 5]",
        ),
        (
            "top_k nine",
            call("search_law", json!({"query": "난간", "top_k": 9})),
            Code::OutOfRange,
            "`top_k` = `9` is outside [1, 5]",
        ),
        (
            "empty query",
            call("search_law", json!({"query": ""})),
            Code::SchemaRejected,
            "at `/query`: value is shorter than 1 character",
        ),
        (
            "query too long",
            call("search_law", json!({"query": "난".repeat(201)})),
            Code::SchemaRejected,
            "at `/query`: value is longer than 200 characters",
        ),
        (
            "expression too long",
            calc(&"1+".repeat(100).add("1")),
            Code::SchemaRejected,
            "at `/expression`: value is longer than 200 characters",
        ),
        (
            "value too large",
            conv(json!(1e13), "m", "mm"),
            Code::OutOfRange,
            "`value` = `10000000000000` is outside [-1000000000000, 1000000000000]",
        ),
        // unknown tool
        (
            "unknown tool",
            call("delete_everything", json!({})),
            Code::UnknownTool,
            "no tool `delete_everything` is registered",
        ),
        (
            "tool name case",
            call("Calculate", json!({"expression": "1"})),
            Code::UnknownTool,
            "no tool `Calculate` is registered",
        ),
        (
            "a tool outside the workbench scope",
            call("get_service_snapshot", json!({"service": "checkout"})),
            Code::PolicyDenied,
            "no policy permits `workbench` to call `get_service_snapshot` here",
        ),
        // extra argument
        (
            "extra argument",
            call("calculate", json!({"expression": "1", "precision": 2})),
            Code::SchemaRejected,
            "at `/`: Additional properties are not allowed ('precision' was unexpected)",
        ),
        (
            "tenant smuggled in",
            call("convert_unit", json!({"value": 1, "from": "m", "to": "cm", "tenant": "tenant-a"})),
            Code::SchemaRejected,
            "at `/`: Additional properties are not allowed ('tenant' was unexpected)",
        ),
        // bad expression
        ("python import", calc("__import__('os')"), Code::CalcSyntaxError, "unknown name `__import__` at position 0"),
        ("dangling operator", calc("2 +"), Code::CalcSyntaxError, "unexpected end of expression at position 3"),
        ("unclosed parenthesis", calc("(1 + 2"), Code::CalcSyntaxError, "the `(` at position 0 is never closed"),
        ("division by zero", calc("1 / 0"), Code::CalcDivisionByZero, "division by zero at position 2"),
        ("modulo by zero", calc("5 % 0"), Code::CalcDivisionByZero, "division by zero at position 2"),
        (
            "square root of a negative",
            calc("sqrt(-4)"),
            Code::CalcDomainError,
            "`sqrt` of a negative number at position 0",
        ),
        ("huge literal", calc("1e400"), Code::CalcOverflow, "the number `1e400` is too large at position 0"),
        ("huge power", calc("10^400"), Code::CalcOverflow, "the result is too large at position 2"),
        // unknown unit
        (
            "unknown unit",
            conv(json!(1), "ft", "m"),
            Code::UnknownUnit,
            "unknown unit `ft`; known units: mm, cm, m, km, g, kg, t, N, kN, kgf, deg, rad, cm2, m2",
        ),
        (
            "unit names are case-sensitive",
            conv(json!(1), "kgf", "n"),
            Code::UnknownUnit,
            "unknown unit `n`; known units: mm, cm, m, km, g, kg, t, N, kN, kgf, deg, rad, cm2, m2",
        ),
        (
            "units of different dimensions",
            conv(json!(1), "kg", "m"),
            Code::UnitMismatch,
            "cannot convert `kg` (mass) to `m` (length)",
        ),
        // unreadable answer
        ("prose only", "Let me think. The gap is 500 mm.".to_owned(), Code::UnparseableAnswer, UNPARSEABLE),
        (
            "unbalanced json",
            r#"{"tool": "calculate", "arguments": {"expression": "1""#.to_owned(),
            Code::UnparseableAnswer,
            UNPARSEABLE,
        ),
        (
            "too many calls",
            format!("[{}]", vec![calc("1"); 4].join(",")),
            Code::TooManyCalls,
            "the answer holds `4` calls; at most 3 are allowed",
        ),
        (
            "too long",
            "a".repeat(20_001),
            Code::AnswerTooLong,
            "the answer has `20001` characters; at most 20000 are read",
        ),
    ]
}

const UNPARSEABLE: &str =
    "no tool call could be read from the answer (tried JSON, fenced blocks, ReAct lines and bracket candidates)";

fn calc_value(v: i64) -> String {
    json!({"tool": "calculate", "arguments": {"expression": v}}).to_string()
}

trait Add {
    fn add(self, s: &str) -> String;
}

impl Add for String {
    fn add(mut self, s: &str) -> String {
        self.push_str(s);
        self
    }
}

#[tokio::test]
async fn seed_003_invalid_calls() {
    let bench = Bench::new();
    let cases = invalid();
    assert!(cases.len() >= 27);
    let mut wrong = Vec::new();
    for (name, answer, code, message) in cases {
        let r = bench.check(&answer).await;
        let (got_code, got_message) = match (r.parse.code, r.calls.first()) {
            (Some(c), _) => (c, r.parse.message.clone().unwrap_or_default()),
            (None, Some(call)) => {
                assert_eq!(call.status, Status::Rejected, "{name}");
                (call.code.unwrap(), call.message.clone().unwrap_or_default())
            }
            (None, None) => panic!("{name}: no verdict"),
        };
        if (got_code, got_message.as_str()) != (code, message) {
            wrong.push(format!("{name}: got {got_code} {got_message:?}, want {code} {message:?}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[tokio::test]
async fn workbench_calls_are_audited_without_the_pasted_text() {
    let bench = Bench::new();
    let secret = "PASTED-ANSWER-MARKER-7d1f";
    let answer = format!(
        "{secret} prose.\n```json\n[{{\"tool\": \"calculate\", \"arguments\": {{\"expression\": \"{secret}\"}}}}, \
         {{\"tool\": \"search_law\", \"arguments\": {{\"query\": \"{secret} 난간\"}}}}, \
         {{\"tool\": \"{secret}\", \"arguments\": {{\"note\": \"{secret}\"}}}}]\n```"
    );
    let r = bench.check(&answer).await;
    assert_eq!(r.calls.len(), 3);
    let codes: Vec<_> = r.calls.iter().map(|c| c.code).collect();
    assert_eq!(codes, [Some(Code::CalcSyntaxError), None, Some(Code::UnknownTool)]);
    let events = bridle_runtime::audit::export(bench.gate.stores().audit.as_ref(), None).await.unwrap();
    assert_eq!(events.len(), 3);
    for e in &events {
        assert_eq!(e.record.kind, EventKind::ToolCall);
        assert_eq!((e.record.tenant.as_str(), e.record.subject.as_str()), ("workbench", WORKBENCH_PRINCIPAL));
    }
    // Metadata is there: tool, code, plan hash.
    assert_eq!(events[0].record.tool, "calculate");
    assert_eq!(events[0].record.code.as_deref(), Some("calc_syntax_error"));
    assert!(events[0].record.plan_hash.is_some() && events[1].record.plan_hash.is_some());
    assert_eq!(events[1].record.executor_identity.as_deref(), Some("workbench-reader"));
    assert_eq!(events[2].record.tool, bridle_runtime::gate::UNREGISTERED);
    assert_eq!(events[2].record.code.as_deref(), Some("unknown_tool"));
    assert!(events.iter().all(|e| e.record.reason.is_none()));
    // The pasted text is not, anywhere in the exported events.
    let exported: String = events.iter().map(|e| serde_json::to_string(e).unwrap()).collect();
    assert!(!exported.contains("PASTED-ANSWER"), "{exported}");
    assert!(!exported.contains("난간"), "{exported}");
}
