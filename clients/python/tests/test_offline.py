"""The client without a server (httpx.MockTransport): how answers and errors are read.

Runs with pytest or as a script (`python tests/test_offline.py`: one line per test, exit 1 on any
failure); the live-server tests are tests/e2e/python_client/ at the repository's root.
"""

from __future__ import annotations

import asyncio
import json
import sys
import traceback
from collections.abc import Callable
from typing import Any

import httpx

import bridle
from bridle import errors
from bridle._ids import as_id, call_key, is_id
from bridle._render import render, still_pending
from bridle.client import _SseReader

PENDING = {
    "call_id": "c-1", "tool": "scale_replicas", "run_id": "run-1", "status": "rejected",
    "rejection": {"code": "approval_required", "message": "approval request `ap-1` was created; retry …",
                  "detail": {"approval_id": "ap-1", "level": "approval", "reasons": ["default level"]}},
    "plan_hash": "ab" * 32, "level": "approval", "approval_id": "ap-1", "job_id": None,
    "executor_identity": None, "idempotent_replay": False,
}


def client_answering(handler: Callable[[httpx.Request], httpx.Response]) -> bridle.Client:
    http = httpx.Client(transport=httpx.MockTransport(handler))
    return bridle.Client("http://bridle.test", "t0k", console_url="https://console.test", http_client=http)


def test_call_sends_the_body_and_reads_the_outcome() -> None:
    seen: dict[str, Any] = {}

    def handler(request: httpx.Request) -> httpx.Response:
        seen["auth"] = request.headers["Authorization"]
        seen["body"] = json.loads(request.content)
        return httpx.Response(200, json=PENDING)

    with client_answering(handler) as client:
        outcome = client.call("scale_replicas", {"replicas": 3}, run_id="run-1", tool_call_id="tc-1")
    assert seen["auth"] == "Bearer t0k"
    assert seen["body"] == {"tool": "scale_replicas", "arguments": {"replicas": 3}, "run_id": "run-1",
                            "tool_call_id": "tc-1"}, seen["body"]
    assert outcome.needs_approval and not outcome.executed and outcome.code == "approval_required"
    assert outcome.approval_url == "https://console.test/approvals/ap-1"
    assert still_pending(outcome)
    assert render(outcome).startswith("refused by Bridle (approval_required): approval request `ap-1`")
    try:
        outcome.unwrap()
        raise AssertionError("unwrap did not raise")
    except errors.ApprovalRequired as e:
        assert (e.approval_id, e.approval_url, e.level, e.reasons) == (
            "ap-1", "https://console.test/approvals/ap-1", "approval", ["default level"])


def test_a_rejected_approval_is_no_longer_pending() -> None:
    rejected = {**PENDING, "rejection": {"code": "approval_required",
                                         "message": "approval `ap-1` was rejected: no"}}
    outcome = bridle.CallOutcome.from_json(rejected)
    assert outcome.needs_approval and not still_pending(outcome)


def test_executed_and_dry_run_outcomes() -> None:
    ok = bridle.CallOutcome.from_json({**PENDING, "status": "ok", "result": {"replicas": 3}, "rejection": None,
                                       "output": {"spotlight": {"text": "<<UNTRUSTED>>", "delimiter": "X"}}})
    assert ok.executed and ok.unwrap() == {"replicas": 3} and ok.code is None and ok.approval_url is None
    assert render(ok) == "<<UNTRUSTED>>"
    dry = bridle.CallOutcome.from_json({"call_id": "c", "tool": "t", "status": "dry_run", "would_reject": None})
    assert dry.unwrap() is None and dry.code is None
    would = bridle.CallOutcome.from_json({"call_id": "c", "tool": "t", "status": "dry_run",
                                          "would_reject": {"code": "policy_denied", "message": "no"}})
    assert would.code == "policy_denied"


def test_gate_codes_map_to_classes() -> None:
    for code, cls in [("policy_denied", errors.PolicyDenied), ("schema_rejected", errors.ContractRejected),
                      ("killed", errors.RunStopped), ("approval_replayed", errors.ApprovalReplayed),
                      ("human_choice_required", errors.HumanChoiceRequired),
                      ("a_code_from_the_future", errors.CallRejected)]:
        outcome = bridle.CallOutcome.from_json({"call_id": "c", "tool": "t", "status": "rejected",
                                                "rejection": {"code": code, "message": "m"}})
        error = errors.rejection_error(outcome)
        assert type(error) is cls and error.code == code and error.outcome is outcome, (code, error)


def test_http_errors_map_to_classes() -> None:
    cases = [(401, "unauthenticated", errors.Unauthenticated), (403, "forbidden", errors.Forbidden),
             (403, "approver_denied", errors.ApproverDenied), (404, "not_found", errors.NotFound),
             (409, "approval_expired", errors.Conflict), (413, "payload_too_large", errors.BadRequest),
             (429, "rate_limited", errors.RateLimited), (500, "internal_error", errors.ServerError),
             (503, "", errors.ServerError)]
    for status, code, cls in cases:
        def handler(request: httpx.Request, status: int = status, code: str = code) -> httpx.Response:
            body = {"error": {"code": code, "message": "why"}} if code else None
            return httpx.Response(status, json=body, headers={"Retry-After": "1"})

        with client_answering(handler) as client:
            try:
                client.approvals()
                raise AssertionError(f"{status} did not raise")
            except errors.ApiError as e:
                assert type(e) is cls and e.status == status, (status, code, e)
                if cls is errors.RateLimited:
                    assert e.retry_after == 1.0


def test_an_unreachable_server_is_a_transport_error() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    with client_answering(handler) as client:
        try:
            client.healthz()
            raise AssertionError("no error")
        except errors.TransportError as e:
            assert e.code == "transport_error"


def test_a_get_the_server_dropped_unanswered_is_sent_once_more_and_a_post_is_not() -> None:
    sent: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request.method)
        if request.method == "POST" or len(sent) == 1:
            # A kept-alive connection the server closed as the request went out.
            raise httpx.RemoteProtocolError("Server disconnected without sending a response.", request=request)
        return httpx.Response(200, json={"status": "ready"})

    with client_answering(handler) as client:
        assert client.readyz() == {"status": "ready"}
        assert sent == ["GET", "GET"], sent
        sent.clear()
        try:
            client.approve("ap-1")
            raise AssertionError("no error")
        except errors.TransportError as e:
            assert e.code == "transport_error"
        assert sent == ["POST"], "a change is never sent twice"

    # A server that drops every request: one retry, then the error.
    sent.clear()

    def always(request: httpx.Request) -> httpx.Response:
        sent.append(request.method)
        raise httpx.RemoteProtocolError("Server disconnected without sending a response.", request=request)

    with client_answering(always) as client:
        try:
            client.readyz()
            raise AssertionError("no error")
        except errors.TransportError:
            pass
        assert sent == ["GET", "GET"], sent


def test_readyz_reads_ready_and_raises_server_error_when_the_store_is_down() -> None:
    ready = True

    def handler(request: httpx.Request) -> httpx.Response:
        assert request.method == "GET" and request.url.path == "/readyz", request.url
        if ready:
            return httpx.Response(200, json={"status": "ready"})
        return httpx.Response(503, json={"error": {"code": "store_unavailable", "message": "the store did not answer"}})

    with client_answering(handler) as client:
        assert client.readyz() == {"status": "ready"}
        ready = False
        try:
            client.readyz()
            raise AssertionError("no error")
        except errors.ServerError as e:
            assert e.status == 503 and e.code == "store_unavailable", e


def test_ids_are_passed_as_one_path_segment() -> None:
    paths: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        paths.append(request.url.raw_path.decode())
        return httpx.Response(200, json={"approval": {"id": "a/b", "status": "granted"}})

    with client_answering(handler) as client:
        assert client.approve("a/b").status == "granted"
    assert paths == ["/v1/approvals/a%2Fb/approve"], paths


def test_async_wait_for_decision_polls_until_decided() -> None:
    answers = iter(["pending", "pending", "granted"])

    def handler(request: httpx.Request) -> httpx.Response:
        approval = {"id": "ap-1", "status": next(answers), "expires_at": "2999-01-01T00:00:00.123456789Z"}
        return httpx.Response(200, json={"approval": approval, "current": None, "diff": []})

    async def run() -> bridle.Approval:
        http = httpx.AsyncClient(transport=httpx.MockTransport(handler))
        async with bridle.AsyncClient("http://bridle.test", "t", http_client=http) as client:
            return await client.wait_for_decision("ap-1", timeout=5, interval=0.01)

    assert asyncio.run(run()).status == "granted"


def test_an_expired_request_ends_the_wait() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        approval = {"id": "ap-1", "status": "pending", "expires_at": "2001-01-01T00:00:00.000000001Z"}
        return httpx.Response(200, json={"approval": approval, "current": None, "diff": []})

    with client_answering(handler) as client:
        assert client.wait_for_decision("ap-1", timeout=5).status == "pending"


def test_server_sent_events_are_read() -> None:
    reader = _SseReader()
    lines = [": keep-alive", "event: node_enter", 'data: {"node":', 'data: "look"}', "", "data: plain", "",
             "event: finished", "data: {}", ""]
    events = [e for e in (reader.feed(line) for line in lines) if e is not None]
    assert [(e.event, e.data) for e in events] == [("node_enter", {"node": "look"}), ("message", "plain"),
                                                    ("finished", {})], events


def test_derived_ids_stay_in_bounds() -> None:
    assert is_id("run-1/call_9@x:y.z") and not is_id("") and not is_id("a b") and not is_id("x" * 129)
    assert as_id("thread-1", "lg") == "thread-1"
    hashed = as_id("thread with spaces", "lg")
    assert hashed.startswith("lg-") and is_id(hashed) and hashed == as_id("thread with spaces", "lg")
    assert call_key("run-1", "call_1") == "run-1/call_1" and is_id(call_key("r" * 100, "c" * 100))


def main() -> int:
    tests = [(name, fn) for name, fn in sorted(globals().items()) if name.startswith("test_") and callable(fn)]
    failed = 0
    for name, fn in tests:
        try:
            fn()
            print(f"  ok    {name}")
        except Exception:
            failed += 1
            print(f"  FAIL  {name}\n{traceback.format_exc()}")
    print(f"offline: {len(tests) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
