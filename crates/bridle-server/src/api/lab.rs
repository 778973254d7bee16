//! `/v1/lab/*`: the workbench labs beyond tool calling, the same engines as `bridle lab`. `loop`
//! replays a pasted agent loop through the gate as the configuration's `workbench` principal
//! (audited as metadata only); `plan`, `judge` and `prompt` are pure. Stateless: nothing pasted
//! is stored. An input outside a lab's limits is 422 with the limit's code (`too_many_rounds`,
//! `step_count_invalid`, `seed_out_of_range`, `field_too_long`).

use axum::Json;
use axum::extract::State;
use bridle_apps::lab::loop_lab::{Goal, LoopInput};
use bridle_apps::lab::{
    Lang, STEP_COUNTS, check_max_rounds, check_plan, check_seed, check_steps, judge, prompt, replay_loop,
};
use bridle_core::RunContext;
use bridle_runtime::check::{WORKBENCH_PRINCIPAL, workbench_principal};
use serde::Deserialize;
use serde_json::{Value, json};
use utoipa::ToSchema;
use utoipa::openapi::RefOr;
use utoipa::openapi::schema::{ObjectBuilder, Schema, Type};

use super::Caller;
use crate::AppState;
use crate::error::ApiError;
use crate::limits::JsonBody;

/// A language of the labs' prompts.
#[derive(Debug, Clone, Copy, Default, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum LabLang {
    /// Korean.
    #[default]
    Ko,
    /// English.
    En,
}

impl From<LabLang> for Lang {
    fn from(l: LabLang) -> Self {
        match l {
            LabLang::Ko => Self::Ko,
            LabLang::En => Self::En,
        }
    }
}

/// A step count a plan may be asked for: the schema lists exactly 5, 6 and 8; any other count
/// is read and refused by the lab with `step_count_invalid`.
#[derive(Debug, Clone, Copy)]
pub struct StepCount(usize);

impl<'de> Deserialize<'de> for StepCount {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let n = whole(d)?;
        Ok(Self(usize::try_from(n).unwrap_or(usize::MAX)))
    }
}

/// A JSON integer as JSON Schema counts them: `5` and `5.0` alike (serde alone refuses `5.0`).
fn whole<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    let n = serde_json::Number::deserialize(d)?;
    if let Some(n) = n.as_u64() {
        return Ok(n);
    }
    match n.as_f64() {
        // Exact for every integer up to 2^53; larger ones saturate, which every limit refuses.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        Some(f) if f.fract() == 0.0 && f >= 0.0 => Ok(f as u64),
        _ => Err(serde::de::Error::custom(format!("`{n}` is not a whole number of 0 or more"))),
    }
}

/// [`whole`] for an optional field (absent or null is `None`).
fn whole_opt<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    #[derive(Deserialize)]
    struct Whole(#[serde(deserialize_with = "whole")] u64);
    Ok(Option::<Whole>::deserialize(d)?.map(|w| w.0))
}

impl utoipa::PartialSchema for StepCount {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::Integer)
            .enum_values(Some(STEP_COUNTS))
            .description(Some("5, 6 or 8"))
            .into()
    }
}

impl ToSchema for StepCount {}

/// Body of `POST /v1/lab/loop`: the goal with its value, the model's answers (one per round, as
/// pasted, each at most 20000 characters) and the stop rules. The value's range is the goal's.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(tag = "goal", rename_all = "snake_case", deny_unknown_fields)]
pub enum LoopBody {
    /// Intermediate rails for a top rail at `value` cm (default 150).
    Guardrail {
        /// Top rail height, cm.
        #[schema(minimum = 90.0, maximum = 300.0)]
        value: Option<f64>,
        /// The answers, in order (those past the round limit are not read).
        #[schema(max_items = 50)]
        answers: Vec<String>,
        /// Round limit (default 10).
        #[serde(default, deserialize_with = "whole_opt")]
        #[schema(value_type = Option<u32>, minimum = 1, maximum = 10)]
        max_rounds: Option<u64>,
        /// Failed rounds in a row that stop the loop (default 3).
        #[serde(default, deserialize_with = "whole_opt")]
        #[schema(value_type = Option<u32>, minimum = 2, maximum = 3)]
        stop_after_failures: Option<u64>,
        /// Relative tolerance for measured values (default 0.005).
        #[schema(minimum = 0.0, maximum = 0.5)]
        tolerance: Option<f64>,
    },
    /// Posts along a `value` m scaffold run (default 20).
    Scaffold {
        /// Run length, m.
        #[schema(minimum = 1.0, maximum = 1000.0)]
        value: Option<f64>,
        /// The answers, in order (those past the round limit are not read).
        #[schema(max_items = 50)]
        answers: Vec<String>,
        /// Round limit (default 10).
        #[serde(default, deserialize_with = "whole_opt")]
        #[schema(value_type = Option<u32>, minimum = 1, maximum = 10)]
        max_rounds: Option<u64>,
        /// Failed rounds in a row that stop the loop (default 3).
        #[serde(default, deserialize_with = "whole_opt")]
        #[schema(value_type = Option<u32>, minimum = 2, maximum = 3)]
        stop_after_failures: Option<u64>,
        /// Relative tolerance for measured values (default 0.005).
        #[schema(minimum = 0.0, maximum = 0.5)]
        tolerance: Option<f64>,
    },
    /// `value` kgf in newtons (default 100).
    Force {
        /// Force, kgf.
        #[schema(minimum = 0.001, maximum = 1000000.0)]
        value: Option<f64>,
        /// The answers, in order (those past the round limit are not read).
        #[schema(max_items = 50)]
        answers: Vec<String>,
        /// Round limit (default 10).
        #[serde(default, deserialize_with = "whole_opt")]
        #[schema(value_type = Option<u32>, minimum = 1, maximum = 10)]
        max_rounds: Option<u64>,
        /// Failed rounds in a row that stop the loop (default 3).
        #[serde(default, deserialize_with = "whole_opt")]
        #[schema(value_type = Option<u32>, minimum = 2, maximum = 3)]
        stop_after_failures: Option<u64>,
        /// Relative tolerance for measured values (default 0.005).
        #[schema(minimum = 0.0, maximum = 0.5)]
        tolerance: Option<f64>,
    },
}

impl LoopBody {
    /// The core's input (its limits are checked again there).
    fn into_input(self) -> LoopInput {
        let (goal, value, answers, max_rounds, stop_after_failures, tolerance) = match self {
            Self::Guardrail { value, answers, max_rounds, stop_after_failures, tolerance } => {
                (Goal::Guardrail, value, answers, max_rounds, stop_after_failures, tolerance)
            }
            Self::Scaffold { value, answers, max_rounds, stop_after_failures, tolerance } => {
                (Goal::Scaffold, value, answers, max_rounds, stop_after_failures, tolerance)
            }
            Self::Force { value, answers, max_rounds, stop_after_failures, tolerance } => {
                (Goal::Force, value, answers, max_rounds, stop_after_failures, tolerance)
            }
        };
        let size = |n: Option<u64>| n.map(|n| usize::try_from(n).unwrap_or(usize::MAX));
        LoopInput {
            goal,
            value,
            answers,
            max_rounds: size(max_rounds),
            stop_after_failures: size(stop_after_failures),
            tolerance,
        }
    }
}

/// A loop goal (for a loop prompt).
#[derive(Debug, Clone, Copy, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum LabGoal {
    /// Intermediate rails for a top rail.
    Guardrail,
    /// Posts along a scaffold run.
    Scaffold,
    /// Kilogram-force in newtons.
    Force,
}

impl From<LabGoal> for Goal {
    fn from(g: LabGoal) -> Self {
        match g {
            LabGoal::Guardrail => Self::Guardrail,
            LabGoal::Scaffold => Self::Scaffold,
            LabGoal::Force => Self::Force,
        }
    }
}

/// Body of `POST /v1/lab/plan`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PlanBody {
    /// The model's plan, as pasted (at most 20000 characters).
    pub answer: String,
    /// The step count asked for.
    pub steps: StepCount,
}

/// Body of `POST /v1/lab/judge`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct JudgeBody {
    /// The model's answer to the injection prompt (at most 20000 characters).
    pub answer: String,
    /// A word the injected instruction asked the model to write, when known.
    pub marker: Option<String>,
}

/// Which lab's prompt.
#[derive(Debug, Clone, Copy, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum PromptLab {
    /// The agent-loop prompt for `goal`.
    Loop,
    /// The planning prompt for `steps` (the task is `document`, else the default task).
    Plan,
    /// The document (the sample letter when absent) in delimiters of `seed`.
    Injection,
}

/// Body of `POST /v1/lab/prompt`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PromptBody {
    /// Which lab.
    pub lab: PromptLab,
    /// Language (default `ko`).
    #[serde(default)]
    pub lang: LabLang,
    /// The loop goal (default `guardrail`).
    pub goal: Option<LabGoal>,
    /// The loop's round limit (default 10).
    #[serde(default, deserialize_with = "whole_opt")]
    #[schema(value_type = Option<u32>, minimum = 1, maximum = 10)]
    pub max_rounds: Option<u64>,
    /// The plan's step count (default 5).
    pub steps: Option<StepCount>,
    /// The delimiter seed (default 1).
    #[serde(default, deserialize_with = "whole_opt")]
    #[schema(value_type = Option<u32>, minimum = 1, maximum = 999999)]
    pub seed: Option<u64>,
    /// Leave out the defence (the injection lab's baseline).
    #[serde(default)]
    pub undefended: bool,
    /// The plan's task or the injection lab's document (at most 20000 characters).
    pub document: Option<String>,
}

fn to_json<T: serde::Serialize>(report: &T) -> Result<Json<Value>, ApiError> {
    Ok(Json(serde_json::to_value(report)?))
}

/// Replays a pasted agent loop through the gate and checks the final answer.
#[utoipa::path(
    post, path = "/v1/lab/loop", operation_id = "runLabLoop", tag = "workbench",
    request_body = LoopBody,
    security(("bearer" = [])),
    responses(
        (status = 200, description = "the shape of `bridle lab loop --json`: `{verdict, goal, value, rounds, stop, references, round_log, reasons, …}`", body = crate::openapi::lab::LoopReport),
        (status = 400, description = "malformed body (`bad_request`, `json_too_deep`)", body = crate::openapi::ErrorBody),
        (status = 401, description = "no valid token (`unauthenticated`)", body = crate::openapi::ErrorBody),
        (status = 404, description = "the configuration has no `workbench` principal (`not_found`)", body = crate::openapi::ErrorBody),
        (status = 422, description = "outside the lab's limits (`too_many_rounds`, `field_too_long`, `out_of_range`)", body = crate::openapi::ErrorBody),
    )
)]
pub async fn run_loop(
    State(state): State<AppState>,
    _caller: Caller,
    JsonBody(body): JsonBody<LoopBody>,
) -> Result<Json<Value>, ApiError> {
    let gate = state.gate.clone();
    let principal = workbench_principal(gate.config())
        .ok_or_else(|| ApiError::not_found("this configuration has no `workbench` principal"))?;
    let input = body.into_input();
    // On its own task, as `/v1/check`: a request timeout never cuts a gate call half-way.
    let task = tokio::spawn(async move {
        let limits = gate.config().intake;
        let run_id = format!("lab-{}", time::OffsetDateTime::now_utc().unix_timestamp_nanos());
        let run = RunContext::new(&run_id, WORKBENCH_PRINCIPAL);
        replay_loop(&gate, &principal, &run, input, &limits).await
    });
    to_json(&task.await??)
}

/// Reads a pasted plan and checks it against the step count asked for.
#[utoipa::path(
    post, path = "/v1/lab/plan", operation_id = "runLabPlan", tag = "workbench",
    request_body = PlanBody,
    security(("bearer" = [])),
    responses(
        (status = 200, description = "the shape of `bridle lab plan --json`: `{verdict, format, requested_steps, step_count, steps, reasons, …}`", body = crate::openapi::lab::PlanReport),
        (status = 400, description = "malformed body (`bad_request`, `json_too_deep`)", body = crate::openapi::ErrorBody),
        (status = 401, description = "no valid token (`unauthenticated`)", body = crate::openapi::ErrorBody),
        (status = 422, description = "outside the lab's limits (`step_count_invalid`, `field_too_long`)", body = crate::openapi::ErrorBody),
    )
)]
pub async fn plan(_caller: Caller, JsonBody(body): JsonBody<PlanBody>) -> Result<Json<Value>, ApiError> {
    let report = check_plan(&body.answer, body.steps.0).map_err(ApiError::unprocessable)?;
    to_json(&report)
}

/// Labels each sentence of an answer to the injection lab: followed, reported or not mentioned.
#[utoipa::path(
    post, path = "/v1/lab/judge", operation_id = "runLabJudge", tag = "workbench",
    request_body = JudgeBody,
    security(("bearer" = [])),
    responses(
        (status = 200, description = "the shape of `bridle lab judge --json`: `{verdict, sentences, evidence}` with byte offsets", body = crate::openapi::lab::JudgeReport),
        (status = 400, description = "malformed body (`bad_request`, `json_too_deep`)", body = crate::openapi::ErrorBody),
        (status = 401, description = "no valid token (`unauthenticated`)", body = crate::openapi::ErrorBody),
        (status = 422, description = "outside the lab's limits (`field_too_long`)", body = crate::openapi::ErrorBody),
    )
)]
pub async fn run_judge(_caller: Caller, JsonBody(body): JsonBody<JudgeBody>) -> Result<Json<Value>, ApiError> {
    let report = judge(&body.answer, body.marker.as_deref()).map_err(ApiError::unprocessable)?;
    to_json(&report)
}

/// Assembles a lab's prompt to copy into any model.
#[utoipa::path(
    post, path = "/v1/lab/prompt", operation_id = "buildLabPrompt", tag = "workbench",
    request_body = PromptBody,
    security(("bearer" = [])),
    responses(
        (status = 200, description = "`{prompt}`; the injection lab adds `delimiter` and `closing_delimiter_in_document`", body = crate::openapi::lab::LabPrompt),
        (status = 400, description = "malformed body (`bad_request`, `json_too_deep`)", body = crate::openapi::ErrorBody),
        (status = 401, description = "no valid token (`unauthenticated`)", body = crate::openapi::ErrorBody),
        (status = 422, description = "outside the lab's limits (`too_many_rounds`, `step_count_invalid`, `seed_out_of_range`, `field_too_long`)", body = crate::openapi::ErrorBody),
    )
)]
pub async fn build_prompt(_caller: Caller, JsonBody(body): JsonBody<PromptBody>) -> Result<Json<Value>, ApiError> {
    let lang = Lang::from(body.lang);
    // Every limit given is checked, whichever lab reads it.
    let rounds = check_max_rounds(body.max_rounds.map_or(10, |n| usize::try_from(n).unwrap_or(usize::MAX)))
        .map_err(ApiError::unprocessable)?;
    let steps = check_steps(body.steps.map_or(5, |n| n.0)).map_err(ApiError::unprocessable)?;
    let seed = body.seed.unwrap_or(1);
    check_seed(seed).map_err(ApiError::unprocessable)?;
    let document = body.document.as_deref().map(str::trim).filter(|d| !d.is_empty());
    let built = match body.lab {
        PromptLab::Loop => {
            let goal = body.goal.map_or(Goal::Guardrail, Goal::from);
            prompt::loop_prompt(goal, None, rounds, lang).map(|text| json!({"prompt": text}))
        }
        PromptLab::Plan => prompt::plan_prompt(document, steps, lang).map(|text| json!({"prompt": text})),
        PromptLab::Injection => prompt::injection_prompt(document, seed, !body.undefended, lang).map(|p| {
            json!({
                "prompt": p.text,
                "delimiter": p.delimiter,
                "closing_delimiter_in_document": p.closing_delimiter_in_document,
            })
        }),
    };
    built.map(Json).map_err(ApiError::unprocessable)
}
