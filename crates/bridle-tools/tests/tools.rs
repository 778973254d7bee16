//! The built-in workbench tools, called directly: the calculator's grammar and error codes with
//! their messages, unit conversion, the law search, and properties (no panic, bounded time).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use std::time::{Duration, Instant};

use bridle_core::Code;
use bridle_tools::{self as tools, convert, evaluate, search};
use proptest::prelude::*;
use serde_json::json;

#[test]
fn calculator_grammar() {
    let cases: &[(&str, f64)] = &[
        ("1 + 2 * 3", 7.0),
        ("(1 + 2) * 3", 9.0),
        ("-2^2", -4.0),
        ("(-2)^2", 4.0),
        ("2^3^2", 512.0),
        ("2^-2", 0.25),
        ("--3", 3.0),
        ("+3 - -3", 6.0),
        ("7 % 3", 1.0),
        ("-7 % 3", -1.0),
        ("1.5e3", 1500.0),
        ("2E-3 * 1000", 2.0),
        (".5 + 0.25", 0.75),
        ("sqrt(16)", 4.0),
        ("abs(-3.5)", 3.5),
        ("floor(-1.5)", -2.0),
        ("ceil(1.2)", 2.0),
        ("round(2.5)", 3.0),
        ("round(-2.5)", -3.0),
        ("min(3, 1, 2)", 1.0),
        ("max(4, 5)", 5.0),
        ("sin(pi / 2)", 1.0),
        ("cos(0)", 1.0),
        ("tan(0)", 0.0),
        ("e^0", 1.0),
        ("0.1 + 0.2", 0.3),
        (" 150 / 3 * 10 ", 500.0),
    ];
    for (expr, want) in cases {
        let got = evaluate(expr).map_err(|r| r.to_string());
        assert_eq!(got, Ok(*want), "{expr}");
    }
}

#[test]
fn calculator_errors_have_codes_positions_and_messages() {
    let cases: &[(&str, Code, &str)] = &[
        ("__import__('os')", Code::CalcSyntaxError, "unknown name `__import__` at position 0"),
        ("2 +", Code::CalcSyntaxError, "unexpected end of expression at position 3"),
        ("(1 + 2", Code::CalcSyntaxError, "the `(` at position 0 is never closed"),
        ("1 + 2)", Code::CalcSyntaxError, "unexpected `)` at position 5"),
        ("2 3", Code::CalcSyntaxError, "unexpected `3` at position 2"),
        ("", Code::CalcSyntaxError, "empty expression"),
        ("sqrt 4", Code::CalcSyntaxError, "`sqrt` needs its arguments in parentheses at position 0"),
        ("pi(2)", Code::CalcSyntaxError, "`pi` is a constant, not a function, at position 0"),
        ("min()", Code::CalcSyntaxError, "unexpected `)` at position 4"),
        ("sqrt(1, 2)", Code::CalcSyntaxError, "`sqrt` takes 1 argument, not 2, at position 0"),
        ("2 ** 3", Code::CalcSyntaxError, "unexpected `*` at position 3"),
        ("1 / 0", Code::CalcDivisionByZero, "division by zero at position 2"),
        ("5 % (2 - 2)", Code::CalcDivisionByZero, "division by zero at position 2"),
        ("0^-1", Code::CalcDivisionByZero, "division by zero (zero to a negative power) at position 1"),
        ("sqrt(-4)", Code::CalcDomainError, "`sqrt` of a negative number at position 0"),
        ("(-8)^(1/3)", Code::CalcDomainError, "the result is not a real number at position 4"),
        ("1e400", Code::CalcOverflow, "the number `1e400` is too large at position 0"),
        ("10^400", Code::CalcOverflow, "the result is too large at position 2"),
        ("1e300 * 1e300", Code::CalcOverflow, "the result is too large at position 6"),
    ];
    for (expr, code, message) in cases {
        let r = evaluate(expr).unwrap_err();
        assert_eq!((r.code, r.message.as_str()), (*code, *message), "{expr}");
    }
    let long = "1+".repeat(100) + "1";
    let r = evaluate(&long).unwrap_err();
    assert_eq!(
        (r.code, r.message.as_str()),
        (Code::CalcSyntaxError, "the expression has `201` characters; at most 200 are allowed")
    );
    let deep = "(".repeat(100) + &")".repeat(100);
    assert_eq!(evaluate(&deep).unwrap_err().code, Code::CalcSyntaxError);
}

#[test]
fn unit_conversion() {
    let cases: &[(f64, &str, &str, f64)] = &[
        (100.0, "kgf", "N", 980.665),
        (1.0, "kgf", "N", 9.80665),
        (980.665, "N", "kgf", 100.0),
        (1500.0, "mm", "m", 1.5),
        (150.0, "cm", "mm", 1500.0),
        (2.5, "km", "m", 2500.0),
        (3.0, "t", "kg", 3000.0),
        (500.0, "g", "kg", 0.5),
        (2.0, "kN", "N", 2000.0),
        (1.0, "m2", "cm2", 10_000.0),
        (90.0, "deg", "deg", 90.0),
    ];
    for (v, from, to, want) in cases {
        assert_eq!(convert(*v, from, to).map_err(|r| r.to_string()), Ok(*want), "{v} {from} -> {to}");
    }
    let r = convert(1.0, "kg", "m").unwrap_err();
    assert_eq!((r.code, r.message.as_str()), (Code::UnitMismatch, "cannot convert `kg` (mass) to `m` (length)"));
    let r = convert(1.0, "ft", "m").unwrap_err();
    assert_eq!(
        (r.code, r.message.as_str()),
        (Code::UnknownUnit, "unknown unit `ft`; known units: mm, cm, m, km, g, kg, t, N, kN, kgf, deg, rad, cm2, m2")
    );
}

#[test]
fn law_search_results_and_references() {
    let v = search("안전난간 중간 난간대 제13조제2호", 3).unwrap();
    let results = v["results"].as_array().unwrap();
    assert_eq!(results.len(), 3);
    assert_eq!(results[0]["id"], "제13조제2호");
    for key in ["id", "title", "score", "text", "text_en"] {
        assert!(results[0].get(key).is_some(), "{key}");
    }
    assert!(results[0]["text"].as_str().unwrap().contains("60센티미터 이하"));
    let v = search("비계기둥 간격 제60조제1호", 1).unwrap();
    assert_eq!(v["results"][0]["id"], "제60조제1호");
    assert!(v["results"][0]["text"].as_str().unwrap().contains("1.85미터 이하"));
    let v = search("100킬로그램 하중 13조", 1).unwrap();
    assert_eq!(v["results"][0]["id"], "제13조제7호");
    // Particles: "난간의" finds the unit that says "난간".
    let v = search("난간의 상하 간격은", 5).unwrap();
    assert!(v["results"].as_array().unwrap().iter().any(|r| r["id"] == "제13조제2호"), "{v}");
    // English glosses are searchable too.
    let v = search("article 8 item 2 precision work", 1).unwrap();
    assert_eq!(v["results"][0]["id"], "제8조제2호");
    assert_eq!(search("xyzzy", 3).unwrap(), json!({"results": []}));
    assert_eq!(tools::units_count(), 46);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1024, ..ProptestConfig::default() })]

    #[test]
    fn calculator_never_panics(expr in "[0-9a-z+\\-*/%^()., eE_]{0,220}") {
        let started = Instant::now();
        if let Ok(v) = evaluate(&expr) {
            prop_assert!(v.is_finite());
        }
        prop_assert!(started.elapsed() < Duration::from_millis(200));
    }

    #[test]
    fn calculator_never_panics_on_any_text(expr in "\\PC{0,250}") {
        let _ = evaluate(&expr);
    }

    #[test]
    fn sums_evaluate_exactly(a in -1000i32..1000, b in -1000i32..1000) {
        prop_assert_eq!(evaluate(&format!("{a} + {b}")).ok(), Some(f64::from(a + b)));
        prop_assert_eq!(evaluate(&format!("({a}) * ({b})")).ok(), Some(f64::from(a) * f64::from(b)));
    }

    #[test]
    fn conversion_round_trips(v in -1.0e6f64..1.0e6, i in 0usize..14, j in 0usize..14) {
        let (from, dim_a, _) = tools::UNITS[i];
        let (to, dim_b, _) = tools::UNITS[j];
        let there = convert(v, from, to);
        if dim_a == dim_b {
            let back = convert(there.unwrap(), to, from).unwrap();
            prop_assert!((back - v).abs() <= 1e-9 * v.abs().max(1.0), "{v} {from} {to} {back}");
        } else {
            prop_assert_eq!(there.unwrap_err().code, Code::UnitMismatch);
        }
    }

    #[test]
    fn search_never_panics(query in "\\PC{1,200}", k in 1usize..6) {
        let v = search(&query, k).unwrap();
        prop_assert!(v["results"].as_array().unwrap().len() <= k);
    }
}
