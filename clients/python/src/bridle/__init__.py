"""Python client for Bridle: every tool call a model proposes goes through Bridle's gate.

`Client` (sync) and `AsyncClient` (asyncio) cover the `/v1` HTTP API: calls and raw model
answers, approvals (list, show, approve, reject, wait for a decision), runs and their events,
audit export and verification, guard scans. `bridle.langgraph` and `bridle.openai_agents` adapt
LangGraph / LangChain tools and OpenAI Agents SDK function tools.
"""

from .client import DEFAULT_URL, Answer, AsyncClient, Client
from .errors import (
    ApiError,
    ApprovalExpired,
    ApprovalReplayed,
    ApprovalRequired,
    ApprovalTimeout,
    ApproverDenied,
    BridleError,
    CallRejected,
    Forbidden,
    HumanChoiceRequired,
    NotFound,
    PlanChanged,
    PolicyDenied,
    RateLimited,
    Unauthenticated,
)
from .types import (
    AnswerOutcome,
    Approval,
    ApprovalDetail,
    AuditEvent,
    AuditPage,
    CallOutcome,
    ChainStatus,
    Plan,
    Rejection,
    RunDetail,
    RunEvent,
    RunPage,
    RunSummary,
    ScanResult,
    Tool,
)

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_URL",
    "Answer",
    "AnswerOutcome",
    "ApiError",
    "Approval",
    "ApprovalDetail",
    "ApprovalExpired",
    "ApprovalReplayed",
    "ApprovalRequired",
    "ApprovalTimeout",
    "ApproverDenied",
    "AsyncClient",
    "AuditEvent",
    "AuditPage",
    "BridleError",
    "CallOutcome",
    "CallRejected",
    "ChainStatus",
    "Client",
    "Forbidden",
    "HumanChoiceRequired",
    "NotFound",
    "Plan",
    "PlanChanged",
    "PolicyDenied",
    "RateLimited",
    "Rejection",
    "RunDetail",
    "RunEvent",
    "RunPage",
    "RunSummary",
    "ScanResult",
    "Tool",
    "Unauthenticated",
]
