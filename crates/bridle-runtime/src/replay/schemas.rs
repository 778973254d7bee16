//! The output schemas of the agents whose recorded decisions the replayer can validate: the fab
//! pipeline's Diagnostician and every analyst of the analysis pipeline (the Advisor's is
//! [`crate::agent::advisor_output_schema`]). The pipelines themselves live in `bridle-apps`.

use serde_json::{Value, json};

/// The Diagnostician's answer: one to five candidate causes.
pub fn diagnosis_schema() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "Diagnosis",
        "type": "object",
        "properties": {
            "candidates": {
                "type": "array",
                "minItems": 1,
                "maxItems": 5,
                "items": {
                    "type": "object",
                    "properties": {
                        "cause": {"type": "string", "minLength": 3, "maxLength": 200},
                        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
                        "evidence": {"type": "string", "maxLength": 1000}
                    },
                    "required": ["cause", "confidence", "evidence"],
                    "additionalProperties": false
                }
            }
        },
        "required": ["candidates"],
        "additionalProperties": false
    })
}

/// The output schema of every analyst.
pub fn analyst_schema() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {
            "score": {"type": "number", "minimum": 0, "maximum": 100},
            "confidence": {"type": "number", "minimum": 0, "maximum": 1},
            "findings": {"type": "string", "minLength": 10}
        },
        "required": ["score", "confidence", "findings"],
        "additionalProperties": false
    })
}
