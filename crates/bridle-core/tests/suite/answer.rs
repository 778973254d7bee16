//! Answer intake (seed 003's paste parser): answers in many formats, each read or rejected as
//! expected; byte spans; bad input with clear codes, no panic and linear time; properties.

use std::time::{Duration, Instant};

use bridle_core::Code;
use bridle_core::answer::{Format, IntakeLimits, ParsedAnswer, parse_answer};
use proptest::prelude::*;
use serde_json::json;

fn parse(text: &str) -> Result<ParsedAnswer, bridle_core::Rejection> {
    parse_answer(text, &IntakeLimits::default())
}

const CALC: &str = r#"{"tool": "calculate", "arguments": {"expression": "150 / 3 * 10"}}"#;

enum Want {
    /// Read: the answer's format and the tools of its calls, in order.
    Read(Format, &'static [&'static str]),
    /// Rejected with this code.
    Rejected(Code),
}

/// Seed 003's format set: 22+ answers, 18+ to read and 4+ to reject.
fn formats() -> Vec<(&'static str, String, Want)> {
    use Format::*;
    use Want::*;
    let long = format!("{}{CALC}", "x".repeat(20_001));
    vec![
        ("whole json object", CALC.to_owned(), Read(Json, &["calculate"])),
        (
            "whole json array of two",
            format!(r#"[{CALC}, {{"tool": "convert_unit", "arguments": {{"value": 100, "from": "kgf", "to": "N"}}}}]"#),
            Read(Json, &["calculate", "convert_unit"]),
        ),
        ("fenced json", format!("Here you go:\n```json\n{CALC}\n```\n"), Read(Fenced, &["calculate"])),
        ("fenced without a tag", format!("```\n{CALC}\n```"), Read(Fenced, &["calculate"])),
        ("tilde fence", format!("~~~json\n{CALC}\n~~~\nDone."), Read(Fenced, &["calculate"])),
        (
            "prose around two fenced blocks",
            format!(
                "First the gap:\n```json\n{CALC}\n```\nThen the load:\n```\n{{\"tool\": \"convert_unit\", \"arguments\": {{\"value\": 100, \"from\": \"kgf\", \"to\": \"N\"}}}}\n```\nThat's all."
            ),
            Read(Fenced, &["calculate", "convert_unit"]),
        ),
        ("prose around bare json", format!("I will compute it. {CALC} Let me know."), Read(Bracket, &["calculate"])),
        (
            "other braces in the prose first",
            format!("Sets like {{a, b}} and [1, 2] aside, the call is {CALC}."),
            Read(Bracket, &["calculate"]),
        ),
        (
            "react single step",
            "Thought: I need the gap.\nAction: calculate\nAction Input: {\"expression\": \"150 / 3 * 10\"}\n".to_owned(),
            Read(React, &["calculate"]),
        ),
        (
            "react two steps with observations",
            "Thought: first search\nAction: search_law\nAction Input: {\"query\": \"안전난간 제13조제2호\"}\nObservation: ...\nThought: now convert\nAction: `convert_unit`\nAction Input: {\"value\": 100, \"from\": \"kgf\", \"to\": \"N\"}\n".to_owned(),
            Read(React, &["search_law", "convert_unit"]),
        ),
        (
            "curly quotes",
            "{\u{201C}tool\u{201D}: \u{201C}calculate\u{201D}, \u{201C}arguments\u{201D}: {\u{201C}expression\u{201D}: \u{201C}2 + 2\u{201D}}}".to_owned(),
            Read(Json, &["calculate"]),
        ),
        (
            "curly quotes inside prose",
            "Sure \u{2014} {\u{201C}tool\u{201D}: \u{201C}convert_unit\u{201D}, \u{201C}arguments\u{201D}: {\u{201C}value\u{201D}: 1, \u{201C}from\u{201D}: \u{201C}m\u{201D}, \u{201C}to\u{201D}: \u{201C}mm\u{201D}}} is the call.".to_owned(),
            Read(Bracket, &["convert_unit"]),
        ),
        (
            "trailing commas in a fence",
            "```json\n{\"tool\": \"calculate\", \"arguments\": {\"expression\": \"1+1\",},}\n```".to_owned(),
            Read(Fenced, &["calculate"]),
        ),
        (
            "curly quotes and trailing commas in an array",
            "[{\u{201C}tool\u{201D}: \u{201C}calculate\u{201D}, \u{201C}arguments\u{201D}: {\u{201C}expression\u{201D}: \u{201C}1\u{201D},},},]".to_owned(),
            Read(Json, &["calculate"]),
        ),
        (
            "openai message with arguments as a string",
            json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "calculate", "arguments": "{\"expression\": \"2^10\"}"}},
                {"id": "call_2", "type": "function", "function": {"name": "search_law", "arguments": "{\"query\": \"조도\"}"}}
            ]})
            .to_string(),
            Read(Openai, &["calculate", "search_law"]),
        ),
        (
            "openai completion in a fence",
            format!(
                "```json\n{}\n```",
                json!({"choices": [{"index": 0, "message": {"role": "assistant", "tool_calls": [
                    {"id": "c", "type": "function", "function": {"name": "convert_unit", "arguments": "{\"value\": 5, \"from\": \"km\", \"to\": \"m\"}"}}
                ]}}]})
            ),
            Read(Openai, &["convert_unit"]),
        ),
        (
            "openai legacy function_call",
            json!({"role": "assistant", "function_call": {"name": "calculate", "arguments": "{\"expression\": \"1\"}"}})
                .to_string(),
            Read(Openai, &["calculate"]),
        ),
        (
            "anthropic message",
            json!({"role": "assistant", "content": [
                {"type": "text", "text": "Let me calculate."},
                {"type": "tool_use", "id": "toolu_1", "name": "calculate", "input": {"expression": "sqrt(2)"}}
            ]})
            .to_string(),
            Read(Anthropic, &["calculate"]),
        ),
        (
            "anthropic block in prose",
            r#"I'll look it up: {"type": "tool_use", "id": "toolu_2", "name": "search_law", "input": {"query": "비계"}}"#.to_owned(),
            Read(Anthropic, &["search_law"]),
        ),
        (
            "name and parameters",
            r#"{"name": "calculate", "parameters": {"expression": "3*3"}}"#.to_owned(),
            Read(Json, &["calculate"]),
        ),
        ("tool and args", r#"Call: {"tool": "calculate", "args": {"expression": "3*3"}}"#.to_owned(), Read(Bracket, &["calculate"])),
        (
            "tool and input",
            "```\n{\"tool\": \"search_law\", \"input\": {\"query\": \"계단참\"}}\n```".to_owned(),
            Read(Fenced, &["search_law"]),
        ),
        (
            "an unregistered tool still parses",
            r#"{"tool": "delete_everything", "arguments": {}}"#.to_owned(),
            Read(Json, &["delete_everything"]),
        ),
        (
            "braces inside strings",
            r#"Try {"tool": "calculate", "arguments": {"expression": "}{ ]["}} please"#.to_owned(),
            Read(Bracket, &["calculate"]),
        ),
        ("exactly three calls", format!("[{CALC}, {CALC}, {CALC}]"), Read(Json, &["calculate", "calculate", "calculate"])),
        // rejected
        ("plain prose", "The answer is 500 mm; no tool is needed.".to_owned(), Rejected(Code::UnparseableAnswer)),
        ("empty", String::new(), Rejected(Code::UnparseableAnswer)),
        ("json without a call", r#"{"answer": 42, "unit": "mm"}"#.to_owned(), Rejected(Code::UnparseableAnswer)),
        (
            "unbalanced brackets",
            r#"{"tool": "calculate", "arguments": {"expression": "1+1""#.to_owned(),
            Rejected(Code::UnparseableAnswer),
        ),
        (
            "react action without input",
            "Action: calculate\nI think the result is 4.".to_owned(),
            Rejected(Code::UnparseableAnswer),
        ),
        ("four calls", format!("[{CALC}, {CALC}, {CALC}, {CALC}]"), Rejected(Code::TooManyCalls)),
        ("too long", long, Rejected(Code::AnswerTooLong)),
    ]
}

#[test]
fn seed_003_format_set() {
    let cases = formats();
    let read = cases.iter().filter(|c| matches!(c.2, Want::Read(..))).count();
    assert!(cases.len() >= 22 && read >= 18 && cases.len() - read >= 4, "{} cases, {read} read", cases.len());
    for (name, text, want) in &cases {
        let got = parse(text);
        match (want, got) {
            (Want::Read(format, tools), Ok(p)) => {
                assert_eq!(p.format, *format, "{name}");
                let names: Vec<&str> = p.calls.iter().map(|c| c.tool.as_str()).collect();
                assert_eq!(names, *tools, "{name}");
                for c in &p.calls {
                    assert!(text.get(c.span.start..c.span.end).is_some_and(|s| !s.is_empty()), "{name}: {:?}", c.span);
                }
            }
            (Want::Rejected(code), Err(r)) => assert_eq!(r.code, *code, "{name}: {}", r.message),
            (_, other) => panic!("{name}: unexpected {other:?}"),
        }
    }
}

#[test]
fn spans_are_byte_offsets_into_the_original() {
    // Korean prose before the call: spans count bytes, not characters.
    let text = format!("계산합니다 \u{201C}quoted\u{201D}: {CALC} 끝");
    let p = parse(&text).unwrap();
    let c = &p.calls[0];
    assert_eq!(&text[c.span.start..c.span.end], CALC);
    assert_eq!(c.format, Format::Bracket);
    // Each element of an array has its own span, even with curly quotes and a trailing comma.
    let text = "[{\u{201C}tool\u{201D}: \u{201C}a\u{201D}}, {\"tool\": \"b\"},]";
    let p = parse(text).unwrap();
    let parts: Vec<_> = p.calls.iter().map(|c| &text[c.span.start..c.span.end]).collect();
    assert_eq!(parts, ["{\u{201C}tool\u{201D}: \u{201C}a\u{201D}}", "{\"tool\": \"b\"}"]);
    // A ReAct step spans from its Action line to the end of its input.
    let text = "Thought: x\nAction: calculate\nAction Input: {\"expression\": \"1\"} trailing";
    let c = &parse(text).unwrap().calls[0];
    assert_eq!(&text[c.span.start..c.span.end], "Action: calculate\nAction Input: {\"expression\": \"1\"}");
}

#[test]
fn arguments_are_kept_as_written() {
    let p =
        parse(r#"{"tool_calls": [{"type": "function", "function": {"name": "calculate", "arguments": "not json"}}]}"#)
            .unwrap();
    assert_eq!(p.calls[0].arguments, json!("not json"));
    let p = parse(r#"{"tool": "calculate"}"#).unwrap();
    assert_eq!(p.calls[0].arguments, json!({}));
}

#[test]
fn responses_api_items_and_the_callers_call_ids_are_read() {
    // One Responses API `function_call` item, its arguments a JSON string; `call_id` wins over
    // the item's own `id`.
    let item = json!({"type": "function_call", "id": "fc_1", "call_id": "call_A1", "name": "calculate",
                      "arguments": "{\"expression\": \"2*3\"}"});
    let p = parse(&item.to_string()).unwrap();
    assert_eq!((p.format, p.calls[0].tool.as_str()), (Format::Openai, "calculate"));
    assert_eq!(p.calls[0].arguments, json!({"expression": "2*3"}));
    assert_eq!(p.calls[0].call_id.as_deref(), Some("call_A1"));
    // A whole response: reasoning and message items are passed over, both calls read in order.
    let response = json!({"id": "resp_1", "object": "response", "output": [
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Checking."}]},
        {"type": "function_call", "call_id": "call_B", "name": "convert_unit",
         "arguments": "{\"value\": 1, \"from\": \"m\", \"to\": \"cm\"}"},
        {"type": "function_call", "call_id": "call_C", "name": "calculate", "arguments": "{\"expression\": \"1\"}"}
    ]});
    let p = parse(&response.to_string()).unwrap();
    let read: Vec<_> = p.calls.iter().map(|c| (c.tool.as_str(), c.call_id.as_deref())).collect();
    assert_eq!(read, [("convert_unit", Some("call_B")), ("calculate", Some("call_C"))]);
    // The output items alone, as an array.
    let items = response["output"].to_string();
    assert_eq!(parse(&items).unwrap().calls.len(), 2);
    // Chat Completions and Anthropic ids, and Bridle's own `tool_call_id`.
    let chat = json!({"role": "assistant", "tool_calls": [{"id": "call_9", "type": "function",
                      "function": {"name": "calculate", "arguments": "{}"}}]});
    assert_eq!(parse(&chat.to_string()).unwrap().calls[0].call_id.as_deref(), Some("call_9"));
    let anthropic = json!({"role": "assistant", "content": [{"type": "text", "text": "ok"},
                           {"type": "tool_use", "id": "toolu_01", "name": "calculate", "input": {}}]});
    assert_eq!(parse(&anthropic.to_string()).unwrap().calls[0].call_id.as_deref(), Some("toolu_01"));
    let own = json!({"tool": "calculate", "arguments": {}, "tool_call_id": "c-7"});
    assert_eq!(parse(&own.to_string()).unwrap().calls[0].call_id.as_deref(), Some("c-7"));
    // An id that is not a well-formed id is read past, never echoed; the call still is.
    for bad in [json!("has space"), json!("x".repeat(129)), json!(7), json!("")] {
        let call = json!({"tool": "calculate", "arguments": {}, "id": bad});
        let p = parse(&call.to_string()).unwrap();
        assert_eq!((p.calls.len(), p.calls[0].call_id.as_deref()), (1, None), "{bad}");
    }
    // ReAct lines carry no id.
    assert_eq!(parse("Action: calculate\nAction Input: {}").unwrap().calls[0].call_id, None);
}

#[test]
fn limits_are_configurable() {
    let five = format!("[{CALC}, {CALC}, {CALC}, {CALC}, {CALC}]");
    let r = parse(&five).unwrap_err();
    assert_eq!((r.code, r.message.as_str()), (Code::TooManyCalls, "the answer holds `5` calls; at most 3 are allowed"));
    assert!(parse_answer(&five, &IntakeLimits { max_calls: 5, max_chars: 20_000 }).is_ok());
    // Characters are Unicode scalar values, not bytes: 20,000 Hangul syllables fit.
    let korean = format!("{}{CALC}", "가".repeat(20_000 - CALC.len()));
    assert!(parse(&korean).is_ok());
    let r = parse_answer(CALC, &IntakeLimits { max_calls: 3, max_chars: 10 }).unwrap_err();
    assert_eq!(
        (r.code, r.message.as_str()),
        (Code::AnswerTooLong, format!("the answer has `{}` characters; at most 10 are read", CALC.len()).as_str())
    );
}

const BIG: IntakeLimits = IntakeLimits { max_calls: 3, max_chars: 2_000_000 };

/// Parses within `limit`, returning the code or format.
fn timed(name: &str, text: &str, limit: Duration) -> Result<Format, Code> {
    let started = Instant::now();
    let r = parse_answer(text, &BIG);
    let took = started.elapsed();
    eprintln!("{name}: {} bytes in {took:?}", text.len());
    assert!(took < limit, "{name}: {took:?} for {} bytes", text.len());
    r.map(|p| p.format).map_err(|r| r.code)
}

#[test]
fn bad_input_gets_a_clear_code_in_linear_time() {
    const MB: usize = 1 << 20;
    // A ceiling against a hang or a quadratic blow-up (minutes at 1 MB), loose enough for a busy
    // 2-core machine; `time_grows_linearly` checks the growth itself.
    let second = Duration::from_secs(30);
    // A 1 MB answer under the default limit.
    assert_eq!(parse(&"a".repeat(MB)).unwrap_err().code, Code::AnswerTooLong);
    // With the limit raised, adversarial megabytes still finish quickly.
    let cases: Vec<(&str, String)> = vec![
        ("open braces", "{".repeat(MB)),
        ("open brackets", "[".repeat(MB)),
        ("10,000 nested", format!("{}{}", "[".repeat(10_000), "]".repeat(10_000))),
        ("10,000 nested objects", format!("{}{}", "{\"a\":".repeat(10_000), "}".repeat(10_000))),
        ("nested then a call", format!("{}{CALC}", "[".repeat(200_000))),
        ("many small candidates", "{\"a\": [1, {\"b\": 2}]} ".repeat(MB / 20)),
        ("unclosed strings", "{\"".repeat(MB / 2)),
        ("quotes in prose", "say \"hi\" {".repeat(MB / 10)),
        ("nul bytes", "\0".repeat(MB)),
        ("react spam", "Action: calculate\nAction Input: {\n".repeat(MB / 35)),
        ("fence spam", "```\n{\n".repeat(MB / 6)),
        ("curly spam", "{\u{201C}".repeat(MB / 4)),
        ("trailing commas", "[1,,,,]".repeat(MB / 7)),
    ];
    for (name, text) in &cases {
        let r = timed(name, text, second);
        assert!(matches!(r, Err(Code::UnparseableAnswer) | Ok(_)), "{name}: {r:?}");
    }
    assert_eq!(timed("nested then a call", &cases[4].1, second), Ok(Format::Bracket));
    // NUL bytes in prose do not hide a call; NUL inside the JSON makes it unreadable.
    assert_eq!(parse(&format!("\0\0 {CALC} \0")).map(|p| p.format), Ok(Format::Bracket));
    assert_eq!(parse("{\"tool\": \"calc\0\"}").unwrap_err().code, Code::UnparseableAnswer);
    // 1e400 cannot be read as a JSON number.
    let r = parse(r#"{"tool": "convert_unit", "arguments": {"value": 1e400, "from": "m", "to": "mm"}}"#);
    assert_eq!(r.unwrap_err().code, Code::UnparseableAnswer);
}

#[test]
fn time_grows_linearly() {
    // Same adversarial shape at 100 kB and 1 MB: ten times the input, not a hundred times the time.
    let shape = |n: usize| format!("{}{}", "{\"a\": [".repeat(n / 7), "x".repeat(10));
    // Best of three, so a busy machine does not decide the ratio.
    let measure = |text: &str| {
        (0..3)
            .map(|_| {
                let started = Instant::now();
                let _ = parse_answer(text, &BIG);
                started.elapsed()
            })
            .min()
            .unwrap_or_default()
    };
    let small = shape(100_000);
    let large = shape(1_000_000);
    let t_small = measure(&small).max(Duration::from_micros(200));
    let t_large = measure(&large);
    eprintln!("100 kB: {t_small:?}, 1 MB: {t_large:?}");
    assert!(t_large < t_small * 40, "100 kB: {t_small:?}, 1 MB: {t_large:?}");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn never_panics_on_any_text(text in "\\PC{0,400}") {
        let started = Instant::now();
        let _ = parse(&text);
        prop_assert!(started.elapsed() < Duration::from_millis(200));
    }

    #[test]
    fn never_panics_on_json_like_text(text in "[{}\\[\\]\"\\\\,:\u{201C}\u{201D}\u{2018}\u{2019}a-c0-9 \n`~]{0,300}") {
        let started = Instant::now();
        let r = parse(&text);
        prop_assert!(started.elapsed() < Duration::from_millis(200));
        if let Ok(p) = r {
            prop_assert!(!p.calls.is_empty() && p.calls.len() <= 3);
            for c in &p.calls {
                prop_assert!(c.span.start < c.span.end && c.span.end <= text.len());
                prop_assert!(text.is_char_boundary(c.span.start) && text.is_char_boundary(c.span.end));
            }
        }
    }

    #[test]
    fn a_call_in_any_prose_is_found(prefix in "[a-zA-Z .,!?가-힣]{0,80}", suffix in "[a-zA-Z .,!?가-힣]{0,80}", n in 0u32..1000) {
        let call = format!(r#"{{"tool": "calculate", "arguments": {{"expression": "{n} + 1"}}}}"#);
        let text = format!("{prefix} {call} {suffix}");
        let p = parse(&text).map_err(|r| TestCaseError::fail(r.message))?;
        prop_assert_eq!(p.calls.len(), 1);
        prop_assert_eq!(&p.calls[0].arguments, &json!({"expression": format!("{n} + 1")}));
        prop_assert_eq!(&text[p.calls[0].span.start..p.calls[0].span.end], call.as_str());
    }
}
