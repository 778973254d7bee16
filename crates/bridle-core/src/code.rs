//! Stable reject codes: the public, never-renamed names of every way a call can be refused.
//!
//! A code is a value, not an error: the gate returns it inside a verdict. Shipped names are
//! part of the contract and must never change; new codes are appended.

use serde::{Deserialize, Serialize};

macro_rules! codes {
    ($( $(#[$doc:meta])* $variant:ident => $name:literal, )*) => {
        /// A stable reject code. `as_str` gives its snake_case wire name.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(rename_all = "snake_case")]
        pub enum Code {
            $( $(#[$doc])* $variant, )*
        }

        impl Code {
            /// Every code, in declaration order.
            pub const ALL: &'static [Code] = &[$(Code::$variant,)*];

            /// The stable snake_case name of this code.
            pub const fn as_str(self) -> &'static str {
                match self { $(Code::$variant => $name,)* }
            }

            /// Parses a stable name back into a code.
            pub fn parse(name: &str) -> Option<Code> {
                match name { $($name => Some(Code::$variant),)* _ => None }
            }
        }
    };
}

codes! {
    // 1. intake
    /// Nothing readable as a tool call in the model's answer.
    UnparseableAnswer => "unparseable_answer",
    /// More calls in one answer than allowed.
    TooManyCalls => "too_many_calls",
    /// The answer is longer than allowed.
    AnswerTooLong => "answer_too_long",
    // 2. run state
    /// A kill switch covers this scope.
    Killed => "killed",
    /// The run was cancelled.
    Cancelled => "cancelled",
    /// The run's deadline has passed.
    DeadlineExceeded => "deadline_exceeded",
    /// A call, token or cost budget is spent.
    BudgetExhausted => "budget_exhausted",
    /// The cost circuit breaker is open.
    CircuitOpen => "circuit_open",
    // 3. contract
    /// No tool of that name is registered.
    UnknownTool => "unknown_tool",
    /// The arguments fail the tool's JSON Schema.
    SchemaRejected => "schema_rejected",
    /// A numeric argument is outside its domain range.
    OutOfRange => "out_of_range",
    /// A numeric argument is not on its step grid.
    StepMismatch => "step_mismatch",
    // 4. guard
    /// Injection or obfuscation found in a scanned argument.
    InjectionDetected => "injection_detected",
    // 5. policy
    /// The policy engine did not allow the call.
    PolicyDenied => "policy_denied",
    // 6. state rules
    /// The change moves a value further than `max_delta` from its current value.
    DeltaTooLarge => "delta_too_large",
    /// The current state needed by a rule could not be read.
    StateUnavailable => "state_unavailable",
    // 8. idempotency
    /// The idempotency key was used for another plan.
    IdempotencyConflict => "idempotency_conflict",
    /// The outcome of an earlier attempt is not known yet.
    OutcomeUnknown => "outcome_unknown",
    /// The call with this idempotency key is still running (its job is reserved or dispatched);
    /// `detail.job_id` names it. Retry the identical call later for its stored result.
    InProgress => "in_progress",
    // 9. approval binding
    /// A human approval is needed; a pending request was created or found.
    ApprovalRequired => "approval_required",
    /// A human must choose among several candidates.
    HumanChoiceRequired => "human_choice_required",
    /// The approval has expired.
    ApprovalExpired => "approval_expired",
    /// The approval was granted for another plan.
    PlanChanged => "plan_changed",
    /// The approval was already used.
    ApprovalReplayed => "approval_replayed",
    /// The approver may not grant this approval.
    ApproverDenied => "approver_denied",
    // 10. execute
    /// The target changed since the plan was made (`resource_version` precondition failed).
    ResourceVersionChanged => "resource_version_changed",
    /// The adapter did not answer in time.
    AdapterTimeout => "adapter_timeout",
    /// The adapter reported a failure.
    AdapterFailed => "adapter_failed",
    // guard, outside the gate
    /// Input longer than its channel allows.
    InputTooLong => "input_too_long",
    /// Output blocked (canary leak).
    OutputBlocked => "output_blocked",
    // built-in workbench tools (a tool error is a rejected call carrying its code)
    /// `calculate`: the expression is not in the grammar.
    CalcSyntaxError => "calc_syntax_error",
    /// `calculate`: division (or remainder) by zero.
    CalcDivisionByZero => "calc_division_by_zero",
    /// `calculate`: a function outside its domain (e.g. `sqrt` of a negative number).
    CalcDomainError => "calc_domain_error",
    /// `calculate`: a number or result too large for a double.
    CalcOverflow => "calc_overflow",
    /// `convert_unit`: the units measure different things.
    UnitMismatch => "unit_mismatch",
    /// `convert_unit`: a unit name that is not known.
    UnknownUnit => "unknown_unit",
    // runtime (graph runs, agents, LLM calls)
    /// A loop passed its node's iteration bound.
    MaxIterationsExceeded => "max_iterations_exceeded",
    /// A run passed its super-step limit.
    RecursionLimit => "recursion_limit",
    /// An agent asked for more tool calls than its turn allows.
    TooManyToolCalls => "too_many_tool_calls",
    /// A node did not finish within its timeout.
    NodeTimeout => "node_timeout",
    /// A node failed and had no error handler.
    NodeFailed => "node_failed",
    /// A node's update does not fit the state's schema.
    InvalidUpdate => "invalid_update",
    /// A model call did not answer within its deadline.
    LlmTimeout => "llm_timeout",
    /// The model endpoint failed or refused (after retries).
    LlmUnavailable => "llm_unavailable",
    /// The model's output failed its schema (after the retry).
    LlmInvalidOutput => "llm_invalid_output",
    /// No pending interrupt has that id.
    UnknownInterrupt => "unknown_interrupt",
    /// The checkpoint is not the thread's latest, or was written by another graph.
    StaleCheckpoint => "stale_checkpoint",
    /// A workflow file was refused at load (every problem is listed with its path).
    WorkflowInvalid => "workflow_invalid",
    // server (HTTP API edge: authentication, limits, routing)
    /// No valid bearer token: missing, expired, forged, or for another issuer or audience.
    Unauthenticated => "unauthenticated",
    /// The token is valid but lacks the scope this route needs.
    Forbidden => "forbidden",
    /// The request body is larger than allowed.
    PayloadTooLarge => "payload_too_large",
    /// The request's JSON nests deeper than allowed.
    JsonTooDeep => "json_too_deep",
    /// Too many requests from this principal; retry later.
    RateLimited => "rate_limited",
    /// No such route, or no such id for the caller's tenant.
    NotFound => "not_found",
    /// The request is malformed: not JSON, missing or mistyped fields, bad query parameters.
    BadRequest => "bad_request",
    /// The request took longer than the server allows.
    RequestTimeout => "request_timeout",
    /// The server could not evaluate the request (a store failed); never an allow.
    InternalError => "internal_error",
    /// The route exists but not for this HTTP method (the `Allow` header lists the ones it takes).
    MethodNotAllowed => "method_not_allowed",
    /// The request target (path and query) is longer than the server accepts.
    UriTooLong => "uri_too_long",
    /// More request header lines, or more header bytes, than the server accepts.
    HeadersTooLarge => "headers_too_large",
    /// A JSON route was sent a body declared as something other than JSON, or with no type.
    UnsupportedMediaType => "unsupported_media_type",
    /// The route needs a request body of declared length.
    LengthRequired => "length_required",
    /// The client does not accept any type the route answers with (`/mcp`'s `Accept` check).
    NotAcceptable => "not_acceptable",
    // lab (seed 003's workbench: agent loop, planning, prompt injection)
    /// A delimiter seed outside 1–999999.
    SeedOutOfRange => "seed_out_of_range",
    /// A round limit outside its range (max rounds 1–10, failure stop 2–3).
    TooManyRounds => "too_many_rounds",
    /// A requested plan step count other than 5, 6 or 8.
    StepCountInvalid => "step_count_invalid",
    /// A pasted field longer than 20,000 characters.
    FieldTooLong => "field_too_long",
    // model registry (the feedback loop's promotions)
    /// A promotion not to the model's next stage (stages move forward one at a time).
    StageNotNext => "stage_not_next",
    /// A promotion whose validation failed (replay agreement below the threshold, nothing
    /// replayed, or a model file changed since registration); the stage is unchanged.
    ValidationFailed => "validation_failed",
    // command-line input (`bridle guard scan|mask` lines)
    /// An input line that is not valid UTF-8.
    InvalidUtf8 => "invalid_utf8",
    // who acts and in which run (gate step 2: the credential and the server's run records)
    /// The request named an agent other than the one its credential belongs to (the token's
    /// `agent` claim or the subject's `[[agents]] principals` binding).
    AgentMismatch => "agent_mismatch",
    /// `[identity] require_agent`: a `change` call by a credential that names no agent.
    AgentRequired => "agent_required",
    /// The run id belongs to another subject of the tenant (runs are bound at their first call).
    RunNotOwned => "run_not_owned",
    /// The run has as many calls in flight as `[limits] run_concurrency` allows.
    TooManyConcurrentCalls => "too_many_concurrent_calls",
    /// The definition of an upstream MCP tool the gateway fronts is not the pinned one (a new
    /// description or schema since review); nothing was sent.
    UpstreamChanged => "upstream_changed",
    // server readiness (`GET /readyz`)
    /// The store did not answer a readiness probe (unreachable, or its schema is gone): this
    /// replica should not be sent traffic until it does. A 503 of `/readyz`, never a verdict.
    StoreUnavailable => "store_unavailable",
    // operator chat (`POST /v1/chat`)
    /// The conversation has as many turns as it may hold; open a new one.
    ConversationFull => "conversation_full",
}

impl std::fmt::Display for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_match_serde() {
        for code in Code::ALL {
            assert_eq!(Code::parse(code.as_str()), Some(*code));
            let json = serde_json::to_string(code).unwrap_or_default();
            assert_eq!(json, format!("\"{}\"", code.as_str()));
        }
    }

    #[test]
    fn names_are_unique() {
        let mut names: Vec<_> = Code::ALL.iter().map(|c| c.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Code::ALL.len());
    }
}
