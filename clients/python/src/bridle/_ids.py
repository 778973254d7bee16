"""Ids the adapters derive (run ids, idempotency keys), kept inside Bridle's id bounds:
at most 128 characters of ASCII letters, digits and `-_.:/@`."""

from __future__ import annotations

import hashlib
import re

_ID = re.compile(r"^[A-Za-z0-9_.:/@-]{1,128}$")


def is_id(text: str) -> bool:
    """True when `text` is a valid Bridle id."""
    return bool(_ID.match(text))


def as_id(text: str, prefix: str) -> str:
    """`text` itself when it is a valid id, else `prefix-` and 40 hex digits of its SHA-256."""
    if is_id(text):
        return text
    return f"{prefix}-{hashlib.sha256(text.encode()).hexdigest()[:40]}"


def call_key(run_id: str, tool_call_id: str) -> str:
    """The idempotency key of one model tool call in one run: a replay of the same call (a graph
    re-run after a crash or a resume) gets the stored result instead of a second execution."""
    return as_id(f"{run_id}/{tool_call_id}", "key")
