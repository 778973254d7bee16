//! `convert_unit`: length, mass, force, angle and area by SI factors (1 kgf = 9.80665 N exactly,
//! the standard gravity). Unit names are exact and case-sensitive (`N`, `kN`, `kgf`).

use bridle_core::Code;
use bridle_core::verdict::{Rejection, clip};
use serde_json::json;

/// Every unit: name, dimension, factor to the dimension's SI unit.
pub const UNITS: [(&str, &str, f64); 14] = [
    ("mm", "length", 0.001),
    ("cm", "length", 0.01),
    ("m", "length", 1.0),
    ("km", "length", 1000.0),
    ("g", "mass", 0.001),
    ("kg", "mass", 1.0),
    ("t", "mass", 1000.0),
    ("N", "force", 1.0),
    ("kN", "force", 1000.0),
    ("kgf", "force", 9.80665),
    ("deg", "angle", std::f64::consts::PI / 180.0),
    ("rad", "angle", 1.0),
    ("cm2", "area", 0.0001),
    ("m2", "area", 1.0),
];

fn unit(name: &str) -> Result<(&'static str, f64), Rejection> {
    UNITS.iter().find(|(n, _, _)| *n == name).map(|(_, dim, f)| (*dim, *f)).ok_or_else(|| {
        let known: Vec<&str> = UNITS.iter().map(|(n, _, _)| *n).collect();
        Rejection::new(
            Code::UnknownUnit,
            format!("unknown unit `{}`; known units: {}", clip(name, 40), known.join(", ")),
        )
        .with_detail(json!({"unit": clip(name, 40)}))
    })
}

/// `value` in `from` expressed in `to`, to 15 significant digits.
pub fn convert(value: f64, from: &str, to: &str) -> Result<f64, Rejection> {
    let (from_dim, from_factor) = unit(from)?;
    let (to_dim, to_factor) = unit(to)?;
    if from_dim != to_dim {
        return Err(Rejection::new(
            Code::UnitMismatch,
            format!("cannot convert `{from}` ({from_dim}) to `{to}` ({to_dim})"),
        )
        .with_detail(json!({"from": from, "to": to})));
    }
    // Exact when the units are the same; otherwise through the SI unit.
    let v = if from == to { value } else { value * from_factor / to_factor };
    if !v.is_finite() {
        return Err(Rejection::new(Code::OutOfRange, format!("`{value}` {from} is out of range in {to}")));
    }
    Ok(crate::tidy(v))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_values() {
        assert_eq!(convert(100.0, "kgf", "N").ok(), Some(980.665));
        assert_eq!(convert(1500.0, "mm", "m").ok(), Some(1.5));
        let pi = convert(180.0, "deg", "rad").unwrap_or_default();
        assert!((pi - std::f64::consts::PI).abs() < 1e-12, "{pi}");
        assert_eq!(convert(1.0, "m2", "cm2").ok(), Some(10_000.0));
    }

    #[test]
    fn mismatch_and_unknown() {
        assert_eq!(convert(1.0, "kg", "m").err().map(|r| r.code), Some(Code::UnitMismatch));
        assert_eq!(convert(1.0, "ft", "m").err().map(|r| r.code), Some(Code::UnknownUnit));
        assert_eq!(convert(1.0, "n", "N").err().map(|r| r.code), Some(Code::UnknownUnit));
        assert_eq!(convert(f64::MAX, "km", "mm").err().map(|r| r.code), Some(Code::OutOfRange));
    }
}
