"""The shapes Bridle's HTTP API answers with, as frozen dataclasses.

Every type keeps the JSON it was read from in `raw`, so a field this client does not know yet
(the server adds fields, never renames them) is still reachable.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Mapping

JSON = Any
"""Any JSON value."""

APPROVAL_CODES = frozenset({"approval_required", "human_choice_required"})
"""Verdict codes meaning "a human has to decide first"; the outcome carries the approval id."""


def _str(data: Mapping[str, Any], key: str, default: str = "") -> str:
    value = data.get(key)
    return value if isinstance(value, str) else default


def _opt_str(data: Mapping[str, Any], key: str) -> str | None:
    value = data.get(key)
    return value if isinstance(value, str) else None


def _int(data: Mapping[str, Any], key: str, default: int = 0) -> int:
    value = data.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _dict(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list) else []


@dataclass(frozen=True)
class Rejection:
    """Why the gate refused a call: a stable snake_case `code`, a message, structured detail."""

    code: str
    message: str
    detail: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Rejection:
        return cls(code=_str(data, "code"), message=_str(data, "message"), detail=_dict(data.get("detail")))


@dataclass(frozen=True)
class CallOutcome:
    """The gate's answer to one call (`POST /v1/calls`).

    A refusal is an answer, not an error: `status` is `ok` (executed; `result` holds the adapter's
    masked result), `rejected` (`rejection` says why) or `dry_run` (`rejection` is what a real call
    would get now, or None when it would execute). `unwrap()` turns a refusal into the matching
    exception of `bridle.errors`.
    """

    call_id: str
    tool: str
    run_id: str
    status: Literal["ok", "rejected", "dry_run"] | str
    result: JSON = None
    rejection: Rejection | None = None
    plan_hash: str | None = None
    level: str | None = None
    approval_id: str | None = None
    job_id: str | None = None
    executor_identity: str | None = None
    idempotent_replay: bool = False
    tool_call_id: str | None = None
    output: dict[str, Any] | None = None
    approval_url: str | None = None
    """The console page of the pending approval (`BASE/approvals/ID`), when one is waiting."""
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, data: Mapping[str, Any], console_url: str | None = None) -> CallOutcome:
        status = _str(data, "status")
        rejection: Rejection | None = None
        if status == "rejected" and isinstance(data.get("rejection"), Mapping):
            rejection = Rejection.from_json(data["rejection"])
        elif status == "dry_run" and isinstance(data.get("would_reject"), Mapping):
            rejection = Rejection.from_json(data["would_reject"])
        approval_id = _opt_str(data, "approval_id")
        if approval_id is None and rejection is not None:
            approval_id = _opt_str(rejection.detail, "approval_id")
        # The server's own link (the console it is configured with), else one built from ours.
        url = _opt_str(data, "approval_url")
        if url is None and console_url and approval_id and rejection is not None and rejection.code in APPROVAL_CODES:
            url = f"{console_url.rstrip('/')}/approvals/{approval_id}"
        output = data.get("output")
        return cls(
            call_id=_str(data, "call_id"),
            tool=_str(data, "tool"),
            run_id=_str(data, "run_id"),
            status=status,
            result=data.get("result") if status == "ok" else None,
            rejection=rejection,
            plan_hash=_opt_str(data, "plan_hash"),
            level=_opt_str(data, "level"),
            approval_id=approval_id,
            job_id=_opt_str(data, "job_id"),
            executor_identity=_opt_str(data, "executor_identity"),
            idempotent_replay=bool(data.get("idempotent_replay", False)),
            tool_call_id=_opt_str(data, "tool_call_id"),
            output=dict(output) if isinstance(output, Mapping) else None,
            approval_url=url,
            raw=dict(data),
        )

    @property
    def executed(self) -> bool:
        """True when the tool ran (`status == "ok"`)."""
        return self.status == "ok"

    @property
    def code(self) -> str | None:
        """The refusal's code (for a dry run: the code a real call would get), else None."""
        return self.rejection.code if self.rejection else None

    @property
    def needs_approval(self) -> bool:
        """True when a human must decide first (`approval_required`, `human_choice_required`)."""
        return self.code in APPROVAL_CODES

    @property
    def spotlight(self) -> str | None:
        """For a tool with untrusted output: the spotlighted text to hand a model instead of `result`."""
        spot = (self.output or {}).get("spotlight")
        return _opt_str(spot, "text") if isinstance(spot, Mapping) else None

    def unwrap(self) -> JSON:
        """The result of an executed call; a refusal raises its `bridle.errors` exception."""
        if self.status == "ok":
            return self.result
        if self.status == "dry_run" and self.rejection is None:
            return None
        from .errors import rejection_error

        raise rejection_error(self)


@dataclass(frozen=True)
class ParseReport:
    """How a raw model answer was read: `status` `ok` (with `format`) or `rejected` (with `code`)."""

    status: str
    format: str | None = None
    code: str | None = None
    message: str | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ParseReport:
        return cls(
            status=_str(data, "status"),
            format=_opt_str(data, "format"),
            code=_opt_str(data, "code"),
            message=_opt_str(data, "message"),
        )


@dataclass(frozen=True)
class AnswerOutcome:
    """`POST /v1/calls` with a raw model answer: how it was read, and one outcome per call in it."""

    parse: ParseReport
    calls: list[CallOutcome]
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, data: Mapping[str, Any], console_url: str | None = None) -> AnswerOutcome:
        calls = [CallOutcome.from_json(c, console_url) for c in _list(data.get("calls")) if isinstance(c, Mapping)]
        return cls(parse=ParseReport.from_json(_dict(data.get("parse"))), calls=calls, raw=dict(data))


@dataclass(frozen=True)
class Plan:
    """What an approval binds: its SHA-256 over the RFC 8785 form is the approval's `plan_hash`."""

    tool: str
    arguments: JSON
    tenant: str
    subject: str
    incident: str
    run_id: str

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Plan:
        return cls(
            tool=_str(data, "tool"),
            arguments=data.get("arguments"),
            tenant=_str(data, "tenant"),
            subject=_str(data, "subject"),
            incident=_str(data, "incident"),
            run_id=_str(data, "run_id"),
        )


@dataclass(frozen=True)
class Grant:
    """One approver's grant."""

    approver: str
    sign_off: bool
    at: str

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Grant:
        return cls(approver=_str(data, "approver"), sign_off=bool(data.get("sign_off")), at=_str(data, "at"))


ApprovalStatus = Literal["pending", "granted", "rejected", "consumed"]


@dataclass(frozen=True)
class Approval:
    """An approval request (and, once granted, the approval itself)."""

    id: str
    tenant: str
    plan: Plan
    plan_hash: str
    requester: str
    level: str
    status: ApprovalStatus | str
    grants: list[Grant]
    rejection_reason: str | None
    created_at: str
    expires_at: str
    consumed_by: str | None = None
    context: dict[str, Any] | None = None
    risk: str | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Approval:
        context = data.get("context")
        return cls(
            id=_str(data, "id"),
            tenant=_str(data, "tenant"),
            plan=Plan.from_json(_dict(data.get("plan"))),
            plan_hash=_str(data, "plan_hash"),
            requester=_str(data, "requester"),
            level=_str(data, "level"),
            status=_str(data, "status"),
            grants=[Grant.from_json(g) for g in _list(data.get("grants")) if isinstance(g, Mapping)],
            rejection_reason=_opt_str(data, "rejection_reason"),
            created_at=_str(data, "created_at"),
            expires_at=_str(data, "expires_at"),
            consumed_by=_opt_str(data, "consumed_by"),
            context=dict(context) if isinstance(context, Mapping) else None,
            risk=_opt_str(data, "risk"),
            raw=dict(data),
        )

    @property
    def decided(self) -> bool:
        """True once a human decided: granted (or already used) or rejected."""
        return self.status in ("granted", "rejected", "consumed")

    @property
    def reasons(self) -> list[str]:
        """Why approval is needed (the escalation rules that fired, else the tool's default level)."""
        return [r for r in _list((self.context or {}).get("reasons")) if isinstance(r, str)]

    @property
    def why(self) -> list[dict[str, JSON]]:
        """The same reasons as codes with their values (`{"code": "above_limit", "param": …}`), in order."""
        return [dict(w) for w in _list((self.context or {}).get("why")) if isinstance(w, Mapping) and "code" in w]


@dataclass(frozen=True)
class FieldChange:
    """One field of a plan's diff against the current state."""

    field: str
    current: JSON
    proposed: JSON


@dataclass(frozen=True)
class ApprovalDetail:
    """`GET /v1/approvals/{id}`: the request, the current state of its resource and the diff."""

    approval: Approval
    current: JSON
    diff: list[FieldChange]
    diff_error: str | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ApprovalDetail:
        diff = [
            FieldChange(field=_str(d, "field"), current=d.get("current"), proposed=d.get("proposed"))
            for d in _list(data.get("diff"))
            if isinstance(d, Mapping)
        ]
        return cls(
            approval=Approval.from_json(_dict(data.get("approval"))),
            current=data.get("current"),
            diff=diff,
            diff_error=_opt_str(data, "diff_error"),
        )


@dataclass(frozen=True)
class AuditEvent:
    """One event of the tenant's hash-chained audit log (`GET /v1/audit`)."""

    seq: int
    kind: str
    hash: str
    prev_hash: str
    at: str
    call_id: str
    tenant: str
    subject: str
    run_id: str
    tool: str
    decision: str | None
    code: str | None
    approval_id: str | None
    approver: str | None
    plan_hash: str | None
    display: str | None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> AuditEvent:
        return cls(
            seq=_int(data, "seq"),
            kind=_str(data, "kind"),
            hash=_str(data, "hash"),
            prev_hash=_str(data, "prev_hash"),
            at=_str(data, "at"),
            call_id=_str(data, "call_id"),
            tenant=_str(data, "tenant"),
            subject=_str(data, "subject"),
            run_id=_str(data, "run_id"),
            tool=_str(data, "tool"),
            decision=_opt_str(data, "decision"),
            code=_opt_str(data, "code"),
            approval_id=_opt_str(data, "approval_id"),
            approver=_opt_str(data, "approver"),
            plan_hash=_opt_str(data, "plan_hash"),
            display=_opt_str(data, "display"),
            raw=dict(data),
        )


@dataclass(frozen=True)
class AuditPage:
    """One page of audit events; pass `next_after` as `after` for the next (None: last page)."""

    events: list[AuditEvent]
    next_after: int | None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> AuditPage:
        events = [AuditEvent.from_json(e) for e in _list(data.get("events")) if isinstance(e, Mapping)]
        nxt = data.get("next_after")
        return cls(events=events, next_after=nxt if isinstance(nxt, int) else None)


@dataclass(frozen=True)
class ChainStatus:
    """`GET /v1/audit/verify`: whether the tenant's chain verifies, and its tail's anchoring."""

    tenant: str
    ok: bool
    verified: int
    broken: dict[str, Any] | None
    tail: dict[str, Any]

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ChainStatus:
        broken = data.get("broken")
        return cls(
            tenant=_str(data, "tenant"),
            ok=bool(data.get("ok")),
            verified=_int(data, "verified"),
            broken=dict(broken) if isinstance(broken, Mapping) else None,
            tail=_dict(data.get("tail")),
        )


@dataclass(frozen=True)
class ScanResult:
    """`POST /v1/guard/scan`: `verdict` `allow` or `block` (with `code`), score and findings."""

    verdict: Literal["allow", "block"] | str
    code: str | None
    message: str | None
    score: float
    categories: list[str]
    spans: list[dict[str, Any]]

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ScanResult:
        score = data.get("score")
        return cls(
            verdict=_str(data, "verdict"),
            code=_opt_str(data, "code"),
            message=_opt_str(data, "message"),
            score=float(score) if isinstance(score, (int, float)) else 0.0,
            categories=[c for c in _list(data.get("categories")) if isinstance(c, str)],
            spans=[dict(s) for s in _list(data.get("spans")) if isinstance(s, Mapping)],
        )

    @property
    def blocked(self) -> bool:
        return self.verdict == "block"


@dataclass(frozen=True)
class RunSummary:
    """One run of `GET /v1/runs`."""

    run_id: str
    pipeline: str
    status: str
    steps: int

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RunSummary:
        return cls(
            run_id=_str(data, "run_id"),
            pipeline=_str(data, "pipeline"),
            status=_str(data, "status"),
            steps=_int(data, "steps"),
        )


@dataclass(frozen=True)
class RunPage:
    """One page of runs, newest first; pass `next_after` as `after` for the next."""

    runs: list[RunSummary]
    next_after: str | None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RunPage:
        runs = [RunSummary.from_json(r) for r in _list(data.get("runs")) if isinstance(r, Mapping)]
        return cls(runs=runs, next_after=_opt_str(data, "next_after"))


@dataclass(frozen=True)
class RunDetail:
    """`GET /v1/runs/{id}`: the run's latest checkpoint."""

    run_id: str
    pipeline: str
    status: str
    steps: int
    interrupts: JSON
    state: JSON
    error: JSON
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RunDetail:
        return cls(
            run_id=_str(data, "run_id"),
            pipeline=_str(data, "pipeline"),
            status=_str(data, "status"),
            steps=_int(data, "steps"),
            interrupts=data.get("interrupts"),
            state=data.get("state"),
            error=data.get("error"),
            raw=dict(data),
        )


@dataclass(frozen=True)
class RunEvent:
    """One Server-Sent Event of `GET /v1/runs/{id}/events` (`finished` is the last)."""

    event: str
    data: JSON


@dataclass(frozen=True)
class Tool:
    """One tool the caller may call (`GET /v1/tools`, MCP form)."""

    name: str
    description: str
    input_schema: dict[str, Any]
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Tool:
        schema = data.get("inputSchema", data.get("input_schema"))
        return cls(
            name=_str(data, "name"),
            description=_str(data, "description"),
            input_schema=_dict(schema),
            raw=dict(data),
        )
