//! Fuzz target: any UTF-8 text through the calculator; a value must be finite, an error must
//! carry one of the calculator's codes.
#![no_main]

use bridle_core::Code;
use bridle_tools::evaluate;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(expression) = std::str::from_utf8(data) else { return };
    match evaluate(expression) {
        Ok(v) => assert!(v.is_finite()),
        Err(r) => assert!(matches!(
            r.code,
            Code::CalcSyntaxError | Code::CalcDivisionByZero | Code::CalcDomainError | Code::CalcOverflow
        )),
    }
});
