"""What the adapters show a model for an outcome, and when a call still waits for a human."""

from __future__ import annotations

import json

from .types import CallOutcome


def still_pending(outcome: CallOutcome) -> bool:
    """True when the call waits for a human on a request that is still pending (a rejected or
    expired approval answers without a pending id: that is a refusal to report, not to wait on)."""
    return outcome.needs_approval and bool(outcome.rejection and outcome.rejection.detail.get("approval_id"))


def render(outcome: CallOutcome) -> str:
    """What the model is shown: the result as JSON (an untrusted tool's spotlighted text), or the
    refusal with its stable code."""
    if outcome.executed:
        spotlight = outcome.spotlight
        return spotlight if spotlight is not None else json.dumps(outcome.result, ensure_ascii=False)
    return f"refused by Bridle ({outcome.code}): {outcome.rejection.message if outcome.rejection else ''}"
