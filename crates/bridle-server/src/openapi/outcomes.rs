//! The documented shapes of the verdict-carrying answers (`POST /v1/calls`, `/v1/check`,
//! `/v1/lab/*`). The types they describe live in `bridle-runtime` and `bridle-apps`, which know
//! nothing of OpenAPI, so each is mirrored here field for field; these mirrors are never
//! serialized (they derive `Serialize` only so that `ToSchema` reads the same `serde` attributes
//! as the originals). The suite's `openapi` tests hold them to the real answers: a drift is a failure.

use std::borrow::Cow;

use bridle_core::Code;
use serde::Serialize;
use serde_json::Value;
use utoipa::openapi::RefOr;
use utoipa::openapi::schema::{ObjectBuilder, Schema, Type};
use utoipa::{PartialSchema, ToSchema};

/// A stable reject code (`bridle_core::Code`), one of a closed list.
#[derive(Serialize)]
pub struct RejectCode;

impl PartialSchema for RejectCode {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .enum_values(Some(Code::ALL.iter().map(|c| c.as_str())))
            .description(Some("A stable snake_case reject code, never renamed once shipped."))
            .into()
    }
}

impl ToSchema for RejectCode {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("RejectCode")
    }
}

/// A refusal: why a call did not (or would not) run.
#[derive(Serialize, ToSchema)]
pub struct Rejection {
    /// Stable reject code.
    code: RejectCode,
    /// Lowercase message without a final period; user values in backticks.
    message: String,
    /// Structured extras (the budget that ran out, the deciding policies, a pending approval
    /// id); absent when there are none.
    #[schema(value_type = Object, required = false)]
    detail: Option<Value>,
}

/// How much human involvement a call needs.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalLevel {
    /// Runs without a human.
    Auto,
    /// One grant by an approver other than the requester.
    Approval,
    /// Two grants by distinct approvers, one holding `approval:sign_off`.
    SignOff,
}

/// What the gate decided, by `status`.
#[derive(Serialize, ToSchema)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Verdict {
    /// Executed: the adapter's result (masked).
    Ok {
        /// The adapter's result, any JSON.
        result: Value,
    },
    /// Refused.
    Rejected {
        /// Why.
        rejection: Rejection,
    },
    /// Dry run: nothing consumed, created or executed.
    DryRun {
        /// The rejection a real call would get now; null when it would execute.
        #[schema(required = true)]
        would_reject: Option<Rejection>,
    },
}

/// What the guard found in an untrusted result: its score and families, never the text.
#[derive(Serialize, ToSchema)]
pub struct InjectionHit {
    /// The detector's score.
    #[schema(minimum = 0.0, maximum = 1.0)]
    score: f64,
    /// The families found.
    categories: Vec<String>,
}

/// A result wrapped for a model between `<<UNTRUSTED D>>` and `<</UNTRUSTED D>>`.
#[derive(Serialize, ToSchema)]
pub struct Spotlight {
    /// The wrapped text.
    text: String,
    /// The run's delimiter `D`.
    delimiter: String,
    /// The result contains the delimiter or the closing marker.
    closing_delimiter_in_result: bool,
}

/// What the gate's output step did to an executed result.
#[derive(Serialize, ToSchema)]
pub struct OutputReport {
    /// Finding kinds masked (`pii:email`, `secret:<rule>` …) with their counts.
    #[schema(nullable = false)]
    masked: Option<std::collections::BTreeMap<String, u64>>,
    /// The masked result wrapped for a model, for a tool marked `untrusted_output`.
    #[schema(nullable = false)]
    spotlight: Option<Spotlight>,
    /// An instruction addressed to the model found in the untrusted result.
    #[schema(nullable = false)]
    injection: Option<InjectionHit>,
}

/// The gate's answer to one call: a verdict (`status` with `result`, `rejection` or
/// `would_reject`) beside the call's ids.
#[derive(Serialize, ToSchema)]
pub struct CallOutcome {
    /// Call id (the audit event and tracing span carry it too).
    call_id: String,
    /// The caller's own id of the call, echoed; absent when it gave none.
    #[schema(nullable = false)]
    tool_call_id: Option<String>,
    /// Tool named.
    tool: String,
    /// The run the call was made in (the caller's, or one the server minted).
    run_id: String,
    /// The verdict.
    #[serde(flatten)]
    verdict: Verdict,
    /// Plan hash (hex SHA-256), once the call got that far.
    #[schema(required = true)]
    plan_hash: Option<String>,
    /// Level the call needed.
    #[schema(required = true)]
    level: Option<ApprovalLevel>,
    /// Approval used, or the pending request created for it.
    #[schema(required = true)]
    approval_id: Option<String>,
    /// Where a call waiting for a human is decided (the console's `/approvals/{id}`); absent
    /// otherwise.
    #[schema(nullable = false)]
    approval_url: Option<String>,
    /// Job of a change: its id is the call's own (`call_id`) for the call that dispatched it, and
    /// the original call's for an idempotent replay.
    #[schema(required = true)]
    job_id: Option<String>,
    /// Executor identity used.
    #[schema(required = true)]
    executor_identity: Option<String>,
    /// True when this answer is the stored result of an earlier call with the same key.
    idempotent_replay: bool,
    /// What was masked or spotlighted in the result; absent when nothing was.
    #[schema(nullable = false)]
    output: Option<OutputReport>,
}

/// Where an answer's calls were read from.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum AnswerFormat {
    /// The whole answer is JSON.
    Json,
    /// JSON inside a fenced code block.
    Fenced,
    /// A balanced JSON candidate inside prose.
    Bracket,
    /// `Action:` / `Action Input:` lines.
    React,
    /// An OpenAI `tool_calls` entry.
    Openai,
    /// An Anthropic `tool_use` block.
    Anthropic,
}

/// How reading a model's answer went.
#[derive(Serialize, ToSchema)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum AnswerParse {
    /// Read; the format of its first call.
    Ok {
        /// Format.
        format: AnswerFormat,
    },
    /// Refused by the parser; no call ran.
    Rejected {
        /// The intake code.
        code: RejectCode,
        /// Why.
        message: String,
    },
}

/// `POST /v1/calls` with an `answer`: the parse and one outcome per call read.
#[derive(Serialize, ToSchema)]
pub struct AnswerOutcomes {
    /// Reading the answer.
    parse: AnswerParse,
    /// One outcome per call, in order (empty when reading failed).
    calls: Vec<CallOutcome>,
}

/// `POST /v1/calls`: one CallOutcome for a structured call, `{parse, calls}` for an answer.
#[derive(Serialize, ToSchema)]
#[serde(untagged)]
pub enum CallAnswer {
    /// A structured call (`tool`).
    One(Box<CallOutcome>),
    /// A model's answer (`answer`).
    Answer(AnswerOutcomes),
}

/// Accepted or not.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum CheckStatus {
    /// Read (parse) or executed (call).
    Ok,
    /// Refused, with a code.
    Rejected,
}

/// How reading the checked answer went.
#[derive(Serialize, ToSchema)]
pub struct CheckParse {
    /// `ok` or `rejected`.
    status: CheckStatus,
    /// The intake code when rejected.
    #[schema(required = true)]
    code: Option<RejectCode>,
    /// Format of the first call when read.
    #[schema(required = true)]
    format: Option<AnswerFormat>,
}

/// One checked call and its verdict.
#[derive(Serialize, ToSchema)]
pub struct CheckedCall {
    /// The answer's own id of the call, when it gave one.
    #[schema(nullable = false)]
    tool_call_id: Option<String>,
    /// Tool named.
    tool: String,
    /// Arguments as read (any JSON).
    arguments: Value,
    /// `ok` or `rejected`.
    status: CheckStatus,
    /// Reject code.
    #[schema(required = true)]
    code: Option<RejectCode>,
    /// Reject message.
    #[schema(required = true)]
    message: Option<String>,
    /// The tool's result when executed (any JSON, null otherwise).
    #[schema(required = true)]
    result: Value,
}

/// `POST /v1/check`: the shape of `bridle check --json`.
#[derive(Serialize, ToSchema)]
pub struct CheckReport {
    /// Reading the answer.
    parse: CheckParse,
    /// Each call read, in order (empty when reading failed).
    calls: Vec<CheckedCall>,
}
