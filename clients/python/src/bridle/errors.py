"""Exceptions, one class per stable code of Bridle.

Two families, both under `BridleError` (which carries `code`, `message` and `detail`):
- `ApiError`: the server refused the HTTP request (`{"error": {"code", "message"}}`, any non-2xx):
  `Unauthenticated`, `Forbidden` (`ApproverDenied`), `NotFound`, `BadRequest`, `Conflict`,
  `RateLimited` (with `retry_after`), `ServerError` …
- `CallRejected`: the gate refused a call (a 200 carrying the verdict), raised only when asked to
  (`CallOutcome.unwrap()`, `Client.call_or_raise()`); it carries the `CallOutcome`.
  `ApprovalRequired` (and `HumanChoiceRequired`) carry `approval_id`, `approval_url` and the plan.

Codes are snake_case strings that Bridle never renames; a code this client does not know maps to
the family's base class, so `except CallRejected` keeps working when the server adds one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .types import CallOutcome


class BridleError(Exception):
    """Anything Bridle refused, with its stable `code`."""

    def __init__(self, code: str, message: str, detail: dict[str, Any] | None = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.detail: dict[str, Any] = detail or {}


# --- HTTP errors -------------------------------------------------------------------------------


class ApiError(BridleError):
    """The HTTP API answered outside 2xx; `status` is the HTTP status."""

    def __init__(self, status: int, code: str, message: str, retry_after: float | None = None) -> None:
        super().__init__(code, message)
        self.status = status
        self.retry_after = retry_after


class Unauthenticated(ApiError):
    """401: no valid bearer token."""


class Forbidden(ApiError):
    """403: the token lacks the route's scope."""


class ApproverDenied(Forbidden):
    """403 `approver_denied`: the desk refused this approver (the requester, a repeat grant …)."""


class NotFound(ApiError):
    """404: unknown route, or an id not in the caller's tenant."""


class BadRequest(ApiError):
    """400, 413, 415, 414, 431: the request itself is malformed or too large."""


class Conflict(ApiError):
    """409: e.g. an approval no longer pending or expired, a run's interrupt already answered."""


class Unprocessable(ApiError):
    """422: a lab or workbench limit (`too_many_rounds`, `step_count_invalid` …)."""


class RateLimited(ApiError):
    """429: retry after `retry_after` seconds."""


class RequestTimeout(ApiError):
    """408: the server gave up waiting; a gate call already started still finishes, so retry with
    the same idempotency key."""


class ServerError(ApiError):
    """5xx (`internal_error`): a store could not answer."""


class TransportError(BridleError):
    """The server could not be reached or did not answer (`code` is `transport_error`)."""

    def __init__(self, message: str) -> None:
        super().__init__("transport_error", message)


class ApprovalTimeout(BridleError):
    """`wait_for_decision` gave up before a human decided (`code` is `approval_timeout`)."""

    def __init__(self, approval_id: str, waited: float) -> None:
        super().__init__("approval_timeout", f"approval `{approval_id}` still undecided after {waited:.0f} s")
        self.approval_id = approval_id


_HTTP_BY_CODE: dict[str, type[ApiError]] = {
    "unauthenticated": Unauthenticated,
    "forbidden": Forbidden,
    "approver_denied": ApproverDenied,
    "not_found": NotFound,
    "rate_limited": RateLimited,
    "request_timeout": RequestTimeout,
    "internal_error": ServerError,
}

_HTTP_BY_STATUS: dict[int, type[ApiError]] = {
    400: BadRequest,
    401: Unauthenticated,
    403: Forbidden,
    404: NotFound,
    408: RequestTimeout,
    409: Conflict,
    413: BadRequest,
    414: BadRequest,
    415: BadRequest,
    422: Unprocessable,
    429: RateLimited,
    431: BadRequest,
}


def api_error(status: int, code: str, message: str, retry_after: float | None = None) -> ApiError:
    """The exception for an HTTP error answer."""
    cls = _HTTP_BY_CODE.get(code) or _HTTP_BY_STATUS.get(status)
    if cls is None:
        cls = ServerError if status >= 500 else ApiError
    return cls(status, code, message, retry_after)


# --- gate verdicts ----------------------------------------------------------------------------


class CallRejected(BridleError):
    """The gate refused a call; `outcome` is the full `CallOutcome`."""

    def __init__(self, outcome: CallOutcome) -> None:
        rejection = outcome.rejection
        super().__init__(
            rejection.code if rejection else outcome.status,
            rejection.message if rejection else "rejected",
            rejection.detail if rejection else None,
        )
        self.outcome = outcome


class ApprovalRequired(CallRejected):
    """A human must approve this exact plan first. Retry the identical call (same tool, arguments,
    run id and incident) once `approval_id` is granted: it then executes, once."""

    def __init__(self, outcome: CallOutcome) -> None:
        super().__init__(outcome)
        self.approval_id: str = outcome.approval_id or ""
        self.approval_url: str | None = outcome.approval_url
        self.plan_hash: str | None = outcome.plan_hash
        self.level: str | None = outcome.level
        self.run_id: str = outcome.run_id
        self.tool: str = outcome.tool
        reasons = self.detail.get("reasons")
        self.reasons: list[str] = [r for r in reasons if isinstance(r, str)] if isinstance(reasons, list) else []


class HumanChoiceRequired(ApprovalRequired):
    """Several candidates or low confidence: a human must choose, then approve."""


class ApprovalExpired(CallRejected):
    """The approval given expired before use."""


class PlanChanged(CallRejected):
    """The approval given was granted for another plan (tool, arguments, run or incident differ)."""


class ApprovalReplayed(CallRejected):
    """The approval was already used: an approved plan runs once."""


class PolicyDenied(CallRejected):
    """Cedar (or the agent registry) denied the call."""


class ContractRejected(CallRejected):
    """The call broke the tool's contract: unknown tool, schema, range, step, max change."""


class InjectionDetected(CallRejected):
    """The guard found an injection in a scanned argument."""


class RunStopped(CallRejected):
    """The run cannot take this call: killed, cancelled, deadline, budget, concurrency, ownership."""


class InProgress(CallRejected):
    """The keyed call's job is still running; retry later with the same key."""


class OutcomeUnknown(CallRejected):
    """The keyed call's job ended `unknown`; `bridle jobs reconcile` settles it, never a re-run."""


class AdapterError(CallRejected):
    """The adapter failed, timed out or saw a changed resource version."""


class IntakeRejected(CallRejected):
    """A raw answer could not be read (`unparseable_answer`, `too_many_calls`, `answer_too_long`)."""


_GATE_BY_CODE: dict[str, type[CallRejected]] = {
    "approval_required": ApprovalRequired,
    "human_choice_required": HumanChoiceRequired,
    "approval_expired": ApprovalExpired,
    "plan_changed": PlanChanged,
    "approval_replayed": ApprovalReplayed,
    "policy_denied": PolicyDenied,
    "agent_required": PolicyDenied,
    "unknown_tool": ContractRejected,
    "schema_rejected": ContractRejected,
    "out_of_range": ContractRejected,
    "step_mismatch": ContractRejected,
    "delta_too_large": ContractRejected,
    "state_unavailable": ContractRejected,
    "injection_detected": InjectionDetected,
    "input_too_long": InjectionDetected,
    "killed": RunStopped,
    "cancelled": RunStopped,
    "deadline_exceeded": RunStopped,
    "budget_exhausted": RunStopped,
    "circuit_open": RunStopped,
    "too_many_concurrent_calls": RunStopped,
    "run_not_owned": RunStopped,
    "agent_mismatch": RunStopped,
    "in_progress": InProgress,
    "outcome_unknown": OutcomeUnknown,
    "resource_version_changed": AdapterError,
    "adapter_timeout": AdapterError,
    "adapter_failed": AdapterError,
    "unparseable_answer": IntakeRejected,
    "too_many_calls": IntakeRejected,
    "answer_too_long": IntakeRejected,
}


def rejection_error(outcome: CallOutcome) -> CallRejected:
    """The exception for a refused `CallOutcome` (`CallRejected` for a code not listed here)."""
    cls = _GATE_BY_CODE.get(outcome.code or "", CallRejected)
    return cls(outcome)
