"""`Client` (sync) and `AsyncClient` (asyncio) over Bridle's `/v1` HTTP API, built on httpx.

Both share one description of every route (`_Route`: method, path, query, body and how to read
the answer), so the two cannot drift apart. The token comes from the `token` argument or
`BRIDLE_TOKEN`, the server from `base_url` or `BRIDLE_URL` (default `http://127.0.0.1:8080`).
A gate verdict, a refusal included, is a return value (`CallOutcome`); only HTTP errors raise
(`bridle.errors.ApiError` and its subclasses).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Generic, Literal, TypeVar

import httpx

from .errors import ApprovalTimeout, TransportError, api_error
from .types import (
    JSON,
    Approval,
    ApprovalDetail,
    AnswerOutcome,
    AuditEvent,
    AuditPage,
    CallOutcome,
    ChainStatus,
    RunDetail,
    RunEvent,
    RunPage,
    ScanResult,
    Tool,
)

DEFAULT_URL = "http://127.0.0.1:8080"
T = TypeVar("T")

Answer = str | Mapping[str, Any] | list[Mapping[str, Any]]
"""A model's raw answer: its text, or the JSON its API returned (a Chat Completions message, a
Responses API response or `output` items, an Anthropic message or content blocks)."""


@dataclass(frozen=True)
class _Route(Generic[T]):
    """One request and how to read its answer."""

    method: Literal["GET", "POST"]
    path: str
    read: Callable[[Any], T]
    params: dict[str, Any] | None = None
    body: Any = None


def _drop_none(fields: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if v is not None}


def _transport_error(route: _Route[Any], attempt: int, e: httpx.HTTPError) -> TransportError | None:
    """The error to raise for `e` on `route`'s attempt `attempt`, or None to send it once more: a
    GET (which reading twice cannot change) the server dropped unanswered, as a kept-alive
    connection closed while the request went out."""
    if isinstance(e, httpx.RemoteProtocolError) and attempt == 0 and route.method == "GET":
        return None
    return TransportError(f"{route.method} {route.path}: {e}")


def _expired(approval: Approval) -> bool:
    """True once the request's `expires_at` (RFC 3339, nanoseconds) has passed."""
    text = re.sub(r"(\.\d{6})\d+", r"\1", approval.expires_at.replace("Z", "+00:00"))
    try:
        at = datetime.fromisoformat(text)
    except ValueError:
        return False
    return datetime.now(timezone.utc) >= at


class _Api:
    """Settings and the route table shared by both clients."""

    def __init__(self, base_url: str | None, token: str | None, console_url: str | None) -> None:
        self.base_url = (base_url or os.environ.get("BRIDLE_URL") or DEFAULT_URL).rstrip("/")
        self.token = token if token is not None else os.environ.get("BRIDLE_TOKEN")
        self.console_url = (console_url or os.environ.get("BRIDLE_CONSOLE_URL") or self.base_url).rstrip("/")

    def headers(self) -> dict[str, str]:
        headers = {"Accept": "application/json", "User-Agent": "bridle-client-python/0.1"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        return headers

    def request(self, route: _Route[Any]) -> dict[str, Any]:
        """The arguments of `httpx.Client.request` (and the async one's) for `route`."""
        return {
            "method": route.method,
            "url": self.base_url + route.path,
            "params": route.params,
            "json": route.body,
            "headers": self.headers(),
        }

    @staticmethod
    def answer(response: httpx.Response) -> Any:
        """The JSON of a 2xx answer; anything else raises the matching `ApiError`."""
        if response.is_success:
            return response.json() if response.content else None
        code, message = "internal_error" if response.status_code >= 500 else "bad_request", response.reason_phrase
        try:
            error = response.json().get("error", {})
            code, message = str(error.get("code") or code), str(error.get("message") or message)
        except (ValueError, AttributeError):
            pass
        retry = response.headers.get("Retry-After")
        retry_after = float(retry) if retry and retry.replace(".", "", 1).isdigit() else None
        raise api_error(response.status_code, code, message, retry_after)

    # Routes -----------------------------------------------------------------------------------

    def call(
        self,
        tool: str,
        arguments: Mapping[str, Any] | None,
        *,
        run_id: str | None,
        incident: str | None,
        idempotency_key: str | None,
        approval_id: str | None,
        dry_run: bool,
        agent: str | None,
        tool_call_id: str | None,
    ) -> _Route[CallOutcome]:
        body = _drop_none(
            {
                "tool": tool,
                "arguments": dict(arguments or {}),
                "run_id": run_id,
                "incident": incident,
                "idempotency_key": idempotency_key,
                "approval_id": approval_id,
                "agent": agent,
                "tool_call_id": tool_call_id,
            }
        )
        if dry_run:
            body["dry_run"] = True
        return _Route("POST", "/v1/calls", lambda d: CallOutcome.from_json(d, self.console_url), body=body)

    def call_answer(
        self,
        answer: Answer,
        *,
        run_id: str | None,
        incident: str | None,
        idempotency_key: str | None,
        approval_id: str | None,
        dry_run: bool,
        agent: str | None,
    ) -> _Route[AnswerOutcome]:
        body = _drop_none(
            {
                "answer": answer,
                "run_id": run_id,
                "incident": incident,
                "idempotency_key": idempotency_key,
                "approval_id": approval_id,
                "agent": agent,
            }
        )
        if dry_run:
            body["dry_run"] = True
        return _Route("POST", "/v1/calls", lambda d: AnswerOutcome.from_json(d, self.console_url), body=body)

    def tools(self) -> _Route[list[Tool]]:
        return _Route("GET", "/v1/tools", lambda d: [Tool.from_json(t) for t in d.get("tools", [])])

    def openai_tools(self) -> _Route[list[dict[str, Any]]]:
        return _Route("GET", "/v1/tools", lambda d: list(d.get("tools", [])), params={"format": "openai"})

    def approvals(self) -> _Route[list[Approval]]:
        return _Route("GET", "/v1/approvals", lambda d: [Approval.from_json(a) for a in d.get("approvals", [])])

    def approval(self, approval_id: str) -> _Route[ApprovalDetail]:
        return _Route("GET", f"/v1/approvals/{_segment(approval_id)}", ApprovalDetail.from_json)

    def approve(self, approval_id: str) -> _Route[Approval]:
        path = f"/v1/approvals/{_segment(approval_id)}/approve"
        return _Route("POST", path, lambda d: Approval.from_json(d["approval"]), body={})

    def reject(self, approval_id: str, reason: str) -> _Route[Approval]:
        path = f"/v1/approvals/{_segment(approval_id)}/reject"
        return _Route("POST", path, lambda d: Approval.from_json(d["approval"]), body={"reason": reason})

    def audit(self, after: int | None, limit: int | None) -> _Route[AuditPage]:
        return _Route("GET", "/v1/audit", AuditPage.from_json, params=_drop_none({"after": after, "limit": limit}))

    def verify_audit(self) -> _Route[ChainStatus]:
        return _Route("GET", "/v1/audit/verify", ChainStatus.from_json)

    def guard_scan(self, text: str, channel: str | None) -> _Route[ScanResult]:
        return _Route("POST", "/v1/guard/scan", ScanResult.from_json, body=_drop_none({"text": text, "channel": channel}))

    def runs(self, status: str | None, after: str | None, limit: int | None) -> _Route[RunPage]:
        params = _drop_none({"status": status, "after": after, "limit": limit})
        return _Route("GET", "/v1/runs", RunPage.from_json, params=params)

    def run(self, run_id: str) -> _Route[RunDetail]:
        return _Route("GET", f"/v1/runs/{_segment(run_id)}", RunDetail.from_json)

    def start_run(self, pipeline: str, input: Mapping[str, Any]) -> _Route[dict[str, Any]]:
        return _Route("POST", "/v1/runs", dict, body={"pipeline": pipeline, "input": dict(input)})

    def resume_run(self, run_id: str, interrupt_id: str, value: JSON) -> _Route[dict[str, Any]]:
        body = {"interrupt_id": interrupt_id, "value": value}
        return _Route("POST", f"/v1/runs/{_segment(run_id)}/resume", dict, body=body)

    def decisions(self, limit: int | None) -> _Route[list[dict[str, Any]]]:
        params = _drop_none({"limit": limit})
        return _Route("GET", "/v1/decisions", lambda d: list(d.get("decisions", [])), params=params)

    def healthz(self) -> _Route[dict[str, Any]]:
        return _Route("GET", "/healthz", dict)

    def readyz(self) -> _Route[dict[str, Any]]:
        return _Route("GET", "/readyz", dict)


def _segment(value: str) -> str:
    """`value` as one path segment (ids are `[A-Za-z0-9_.:/@-]`; `/` must not split the path)."""
    from urllib.parse import quote

    return quote(value, safe="")


class _SseReader:
    """Server-Sent Events from lines: `event:` and `data:` fields, a blank line ends an event."""

    def __init__(self) -> None:
        self.event = "message"
        self.data: list[str] = []

    def feed(self, line: str) -> RunEvent | None:
        if line == "":
            if not self.data:
                self.event = "message"
                return None
            text = "\n".join(self.data)
            try:
                data: JSON = json.loads(text)
            except ValueError:
                data = text
            out = RunEvent(self.event, data)
            self.event, self.data = "message", []
            return out
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "event":
            self.event = value
        elif name == "data":
            self.data.append(value)
        return None


class Client:
    """Synchronous client. Use as a context manager, or call `close()`.

    ```python
    with bridle.Client() as client:                  # BRIDLE_URL, BRIDLE_TOKEN
        outcome = client.call("get_service_snapshot", {"service": "checkout"}, run_id="run-1")
        print(outcome.unwrap())
    ```
    """

    def __init__(
        self,
        base_url: str | None = None,
        token: str | None = None,
        *,
        console_url: str | None = None,
        timeout: float = 30.0,
        http_client: httpx.Client | None = None,
    ) -> None:
        self._api = _Api(base_url, token, console_url)
        self._http = http_client or httpx.Client(timeout=timeout)
        self._owns_http = http_client is None

    @property
    def base_url(self) -> str:
        return self._api.base_url

    @property
    def console_url(self) -> str:
        return self._api.console_url

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._owns_http:
            self._http.close()

    def _send(self, route: _Route[T]) -> T:
        for attempt in range(2):
            try:
                response = self._http.request(**self._api.request(route))
            except httpx.HTTPError as e:
                error = _transport_error(route, attempt, e)
                if error is None:
                    continue
                raise error from e
            return route.read(self._api.answer(response))
        raise AssertionError("unreachable: the second attempt returns or raises")

    # Calls ------------------------------------------------------------------------------------

    def call(
        self,
        tool: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        run_id: str | None = None,
        incident: str | None = None,
        idempotency_key: str | None = None,
        approval_id: str | None = None,
        dry_run: bool = False,
        agent: str | None = None,
        tool_call_id: str | None = None,
    ) -> CallOutcome:
        """One structured call through the gate. A refusal is returned, not raised: look at
        `outcome.executed` / `outcome.code`, or `outcome.unwrap()`. Without `run_id` the server
        mints one (`outcome.run_id`): send it back for the identical call after an approval."""
        return self._send(
            self._api.call(
                tool,
                arguments,
                run_id=run_id,
                incident=incident,
                idempotency_key=idempotency_key,
                approval_id=approval_id,
                dry_run=dry_run,
                agent=agent,
                tool_call_id=tool_call_id,
            )
        )

    def call_or_raise(
        self,
        tool: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        run_id: str | None = None,
        incident: str | None = None,
        idempotency_key: str | None = None,
        approval_id: str | None = None,
        agent: str | None = None,
        tool_call_id: str | None = None,
    ) -> JSON:
        """`call(...).unwrap()`: the result, or the refusal's exception (`ApprovalRequired` …)."""
        return self.call(
            tool,
            arguments,
            run_id=run_id,
            incident=incident,
            idempotency_key=idempotency_key,
            approval_id=approval_id,
            agent=agent,
            tool_call_id=tool_call_id,
        ).unwrap()

    def call_answer(
        self,
        answer: Answer,
        *,
        run_id: str | None = None,
        incident: str | None = None,
        idempotency_key: str | None = None,
        approval_id: str | None = None,
        dry_run: bool = False,
        agent: str | None = None,
    ) -> AnswerOutcome:
        """A model's raw answer (text or its API's JSON) read into calls, each through the gate."""
        return self._send(
            self._api.call_answer(
                answer,
                run_id=run_id,
                incident=incident,
                idempotency_key=idempotency_key,
                approval_id=approval_id,
                dry_run=dry_run,
                agent=agent,
            )
        )

    def tools(self) -> list[Tool]:
        """The tools the token may call (MCP form, with JSON Schemas)."""
        return self._send(self._api.tools())

    def openai_tools(self) -> list[dict[str, Any]]:
        """The same tools as OpenAI function definitions."""
        return self._send(self._api.openai_tools())

    # Approvals (an approver's token: `approval:grant` or `approval:sign_off`) -----------------

    def approvals(self) -> list[Approval]:
        """Pending, unexpired requests of the token's tenant."""
        return self._send(self._api.approvals())

    def approval(self, approval_id: str) -> ApprovalDetail:
        """One request (any status) with the plan's diff against the current state."""
        return self._send(self._api.approval(approval_id))

    def approve(self, approval_id: str) -> Approval:
        """Adds this token's grant (the approver must not be the requester)."""
        return self._send(self._api.approve(approval_id))

    def reject(self, approval_id: str, reason: str) -> Approval:
        """Rejects a pending request with a reason (shown to the requester, audited)."""
        return self._send(self._api.reject(approval_id, reason))

    def wait_for_decision(self, approval_id: str, *, timeout: float = 300.0, interval: float = 1.0) -> Approval:
        """Polls the request until a human decided (`granted`, `rejected`, or already `consumed`)
        or it expired; raises `ApprovalTimeout` after `timeout` seconds."""
        started = time.monotonic()
        while True:
            approval = self.approval(approval_id).approval
            if approval.decided or _expired(approval):
                return approval
            waited = time.monotonic() - started
            if waited >= timeout:
                raise ApprovalTimeout(approval_id, waited)
            time.sleep(min(interval, max(timeout - waited, 0.0)))

    # Audit, guard, runs -----------------------------------------------------------------------

    def audit(self, *, after: int | None = None, limit: int | None = None) -> AuditPage:
        """One page of the tenant's audit events (`audit:read` or `approval:grant`)."""
        return self._send(self._api.audit(after, limit))

    def iter_audit(self, *, after: int = 0, page_size: int = 1000) -> Iterator[AuditEvent]:
        """Every audit event after `after`, in chain order, page by page (an export)."""
        cursor: int | None = after
        while cursor is not None:
            page = self.audit(after=cursor, limit=page_size)
            yield from page.events
            cursor = page.next_after

    def verify_audit(self) -> ChainStatus:
        """Verifies the tenant's hash chain and its signed heads."""
        return self._send(self._api.verify_audit())

    def guard_scan(self, text: str, channel: Literal["chat", "workflow", "document"] | None = None) -> ScanResult:
        """The guard's verdict on a text (injection and obfuscation; length per channel)."""
        return self._send(self._api.guard_scan(text, channel))

    def runs(self, *, status: str | None = None, after: str | None = None, limit: int | None = None) -> RunPage:
        """The tenant's graph runs, newest first (`runs:read` or `runs:start`)."""
        return self._send(self._api.runs(status, after, limit))

    def run(self, run_id: str) -> RunDetail:
        """One run from its latest checkpoint."""
        return self._send(self._api.run(run_id))

    def start_run(self, pipeline: str, input: Mapping[str, Any]) -> dict[str, Any]:
        """Starts a pipeline (`analysis`, `fab`, `workflow`): `{run_id, status}` (`runs:start`)."""
        return self._send(self._api.start_run(pipeline, input))

    def resume_run(self, run_id: str, interrupt_id: str, value: JSON) -> dict[str, Any]:
        """Answers a paused run's interrupt."""
        return self._send(self._api.resume_run(run_id, interrupt_id, value))

    def run_events(self, run_id: str) -> Iterator[RunEvent]:
        """The run's events as they happen, ending with `finished`."""
        path = f"/v1/runs/{_segment(run_id)}/events"
        headers = {**self._api.headers(), "Accept": "text/event-stream"}
        try:
            with self._http.stream("GET", self._api.base_url + path, headers=headers, timeout=None) as response:
                if not response.is_success:
                    response.read()
                    self._api.answer(response)
                reader = _SseReader()
                for line in response.iter_lines():
                    event = reader.feed(line)
                    if event is not None:
                        yield event
                        if event.event == "finished":
                            return
        except httpx.HTTPError as e:
            raise TransportError(f"GET {path}: {e}") from e

    def decisions(self, *, limit: int | None = None) -> list[dict[str, Any]]:
        """The tenant's most recent decision records."""
        return self._send(self._api.decisions(limit))

    def healthz(self) -> dict[str, Any]:
        """Liveness: `{"status": "ok", "version"}` while the process serves (asks no store)."""
        return self._send(self._api.healthz())

    def readyz(self) -> dict[str, Any]:
        """Readiness: `{"status": "ready"}` while the store answers; `ServerError` (503
        `store_unavailable`) when it does not."""
        return self._send(self._api.readyz())


class AsyncClient:
    """The same API for asyncio. Use `async with`, or `await client.aclose()`."""

    def __init__(
        self,
        base_url: str | None = None,
        token: str | None = None,
        *,
        console_url: str | None = None,
        timeout: float = 30.0,
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        self._api = _Api(base_url, token, console_url)
        self._http = http_client or httpx.AsyncClient(timeout=timeout)
        self._owns_http = http_client is None

    @property
    def base_url(self) -> str:
        return self._api.base_url

    @property
    def console_url(self) -> str:
        return self._api.console_url

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._owns_http:
            await self._http.aclose()

    async def _send(self, route: _Route[T]) -> T:
        for attempt in range(2):
            try:
                response = await self._http.request(**self._api.request(route))
            except httpx.HTTPError as e:
                error = _transport_error(route, attempt, e)
                if error is None:
                    continue
                raise error from e
            return route.read(self._api.answer(response))
        raise AssertionError("unreachable: the second attempt returns or raises")

    async def call(
        self,
        tool: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        run_id: str | None = None,
        incident: str | None = None,
        idempotency_key: str | None = None,
        approval_id: str | None = None,
        dry_run: bool = False,
        agent: str | None = None,
        tool_call_id: str | None = None,
    ) -> CallOutcome:
        """See `Client.call`."""
        return await self._send(
            self._api.call(
                tool,
                arguments,
                run_id=run_id,
                incident=incident,
                idempotency_key=idempotency_key,
                approval_id=approval_id,
                dry_run=dry_run,
                agent=agent,
                tool_call_id=tool_call_id,
            )
        )

    async def call_or_raise(
        self,
        tool: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        run_id: str | None = None,
        incident: str | None = None,
        idempotency_key: str | None = None,
        approval_id: str | None = None,
        agent: str | None = None,
        tool_call_id: str | None = None,
    ) -> JSON:
        """See `Client.call_or_raise`."""
        outcome = await self.call(
            tool,
            arguments,
            run_id=run_id,
            incident=incident,
            idempotency_key=idempotency_key,
            approval_id=approval_id,
            agent=agent,
            tool_call_id=tool_call_id,
        )
        return outcome.unwrap()

    async def call_answer(
        self,
        answer: Answer,
        *,
        run_id: str | None = None,
        incident: str | None = None,
        idempotency_key: str | None = None,
        approval_id: str | None = None,
        dry_run: bool = False,
        agent: str | None = None,
    ) -> AnswerOutcome:
        """See `Client.call_answer`."""
        return await self._send(
            self._api.call_answer(
                answer,
                run_id=run_id,
                incident=incident,
                idempotency_key=idempotency_key,
                approval_id=approval_id,
                dry_run=dry_run,
                agent=agent,
            )
        )

    async def tools(self) -> list[Tool]:
        return await self._send(self._api.tools())

    async def openai_tools(self) -> list[dict[str, Any]]:
        return await self._send(self._api.openai_tools())

    async def approvals(self) -> list[Approval]:
        return await self._send(self._api.approvals())

    async def approval(self, approval_id: str) -> ApprovalDetail:
        return await self._send(self._api.approval(approval_id))

    async def approve(self, approval_id: str) -> Approval:
        return await self._send(self._api.approve(approval_id))

    async def reject(self, approval_id: str, reason: str) -> Approval:
        return await self._send(self._api.reject(approval_id, reason))

    async def wait_for_decision(
        self, approval_id: str, *, timeout: float = 300.0, interval: float = 1.0
    ) -> Approval:
        """See `Client.wait_for_decision`."""
        loop = asyncio.get_running_loop()
        started = loop.time()
        while True:
            approval = (await self.approval(approval_id)).approval
            if approval.decided or _expired(approval):
                return approval
            waited = loop.time() - started
            if waited >= timeout:
                raise ApprovalTimeout(approval_id, waited)
            await asyncio.sleep(min(interval, max(timeout - waited, 0.0)))

    async def audit(self, *, after: int | None = None, limit: int | None = None) -> AuditPage:
        return await self._send(self._api.audit(after, limit))

    async def iter_audit(self, *, after: int = 0, page_size: int = 1000) -> AsyncIterator[AuditEvent]:
        cursor: int | None = after
        while cursor is not None:
            page = await self.audit(after=cursor, limit=page_size)
            for event in page.events:
                yield event
            cursor = page.next_after

    async def verify_audit(self) -> ChainStatus:
        return await self._send(self._api.verify_audit())

    async def guard_scan(
        self, text: str, channel: Literal["chat", "workflow", "document"] | None = None
    ) -> ScanResult:
        return await self._send(self._api.guard_scan(text, channel))

    async def runs(self, *, status: str | None = None, after: str | None = None, limit: int | None = None) -> RunPage:
        return await self._send(self._api.runs(status, after, limit))

    async def run(self, run_id: str) -> RunDetail:
        return await self._send(self._api.run(run_id))

    async def start_run(self, pipeline: str, input: Mapping[str, Any]) -> dict[str, Any]:
        return await self._send(self._api.start_run(pipeline, input))

    async def resume_run(self, run_id: str, interrupt_id: str, value: JSON) -> dict[str, Any]:
        return await self._send(self._api.resume_run(run_id, interrupt_id, value))

    async def run_events(self, run_id: str) -> AsyncIterator[RunEvent]:
        path = f"/v1/runs/{_segment(run_id)}/events"
        headers = {**self._api.headers(), "Accept": "text/event-stream"}
        try:
            async with self._http.stream("GET", self._api.base_url + path, headers=headers, timeout=None) as response:
                if not response.is_success:
                    await response.aread()
                    self._api.answer(response)
                reader = _SseReader()
                async for line in response.aiter_lines():
                    event = reader.feed(line)
                    if event is not None:
                        yield event
                        if event.event == "finished":
                            return
        except httpx.HTTPError as e:
            raise TransportError(f"GET {path}: {e}") from e

    async def decisions(self, *, limit: int | None = None) -> list[dict[str, Any]]:
        return await self._send(self._api.decisions(limit))

    async def healthz(self) -> dict[str, Any]:
        return await self._send(self._api.healthz())

    async def readyz(self) -> dict[str, Any]:
        return await self._send(self._api.readyz())


__all__ = ["Answer", "AsyncClient", "Client", "DEFAULT_URL"]
