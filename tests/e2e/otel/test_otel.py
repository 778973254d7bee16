"""End-to-end: what `bridle serve` and `bridle audit export --format otlp` send to an OpenTelemetry
collector, with real clients on both sides.

The collector is this process: an OTLP/HTTP receiver (http.server on 127.0.0.1:0, in a thread)
taking `POST /v1/traces` and `POST /v1/logs`, decoded with `opentelemetry-proto` (protobuf or
JSON, gzip or not). `bridle serve` exports to it (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_SERVICE_NAME
bridle-e2e, OTEL_RESOURCE_ATTRIBUTES deployment.environment=e2e); the agent side traces with the
OpenTelemetry Python SDK, whose propagator puts W3C `traceparent` on the bridle client's requests
(an httpx event hook) and whose spans the `mcp` SDK uses for `_meta` on `tools/call`.

Checked: the caller's trace continues in the SERVER span `POST /v1/calls` (HTTP attributes) with
the gate's `gate_call` span inside (bridle.code, bridle.level, tool, call_id); a 401 and two 404s
(an unknown approval, an unknown route) are ERROR spans with `error.type`; an MCP `tools/call`
over Streamable HTTP is an MCP SERVER span under the SDK's client span; SIGTERM sends the spans
still queued; `bridle audit export --format otlp` posts one log record per audit event, with
`bridle.seq`/`bridle.hash`/`bridle.prev_hash` matching `--format jsonl` of the same store. Prints
one line per check and a closing `e2e: N passed, N failed` line; exits non-zero on any failure.

Usage: python test_otel.py PATH_TO_BRIDLE_BINARY
"""

from __future__ import annotations

import asyncio
import gzip
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, TypeVar

import httpx
import httpx2
from google.protobuf import json_format
from google.protobuf.message import Message
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from opentelemetry import propagate, trace
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest, ExportLogsServiceResponse)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest, ExportTraceServiceResponse)
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

import bridle
from bridle import errors

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python_client"))
from harness import Checks, Server  # noqa: E402

READ = {"service": "checkout"}
SERVER, ERROR = Span.SPAN_KIND_SERVER, Status.STATUS_CODE_ERROR
T = TypeVar("T")


class Collector:
    """An OTLP/HTTP receiver: every decoded export, by path, in arrival order."""

    MESSAGES: dict[str, tuple[type[Message], type[Message]]] = {
        "/v1/traces": (ExportTraceServiceRequest, ExportTraceServiceResponse),
        "/v1/logs": (ExportLogsServiceRequest, ExportLogsServiceResponse),
    }

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.exports: dict[str, list[Any]] = {path: [] for path in self.MESSAGES}
        self.content_types: set[str] = set()
        self.rejected: list[str] = []
        collector = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                collector.receive(self)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @staticmethod
    def body(h: BaseHTTPRequestHandler) -> bytes:
        if "chunked" in h.headers.get("Transfer-Encoding", "").lower():
            chunks = []
            while (size := int(h.rfile.readline().split(b";")[0].strip(), 16)) > 0:
                chunks.append(h.rfile.read(size))
                h.rfile.readline()
            h.rfile.readline()
            return b"".join(chunks)
        return h.rfile.read(int(h.headers.get("Content-Length", 0)))

    def receive(self, h: BaseHTTPRequestHandler) -> None:
        path, status, answer = h.path.split("?")[0], 200, b""
        try:
            body = self.body(h)
            request_cls, response_cls = self.MESSAGES[path]
            if h.headers.get("Content-Encoding", "").lower() == "gzip":
                body = gzip.decompress(body)
            kind = h.headers.get("Content-Type", "").split(";")[0].strip()
            message = request_cls()
            if kind == "application/json":
                json_format.Parse(body, message)
            else:
                message.ParseFromString(body)
            with self.lock:
                self.exports[path].append(message)
                self.content_types.add(f"{path} {kind}")
            answer = response_cls().SerializeToString()
        except Exception as e:  # noqa: BLE001: an undecodable export is a failure the checks report
            status = 404 if path not in self.MESSAGES else 400
            with self.lock:
                self.rejected.append(f"{path}: {e!r}")
        h.send_response(status)
        h.send_header("Content-Type", "application/x-protobuf")
        h.send_header("Content-Length", str(len(answer)))
        h.end_headers()
        h.wfile.write(answer)

    def spans(self) -> list[tuple[dict[str, Any], Span]]:
        """Every exported span with its resource's attributes."""
        with self.lock:
            exports = list(self.exports["/v1/traces"])
        return [(attributes(rs.resource.attributes), span) for export in exports for rs in export.resource_spans
                for ss in rs.scope_spans for span in ss.spans]

    def logs(self) -> list[tuple[dict[str, Any], Any]]:
        """Every exported log record with its resource's attributes."""
        with self.lock:
            exports = list(self.exports["/v1/logs"])
        return [(attributes(rl.resource.attributes), record) for export in exports for rl in export.resource_logs
                for sl in rl.scope_logs for record in sl.log_records]

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def attributes(kvs: Any) -> dict[str, Any]:
    """OTLP key-values as a dict of plain Python values."""
    out: dict[str, Any] = {}
    for kv in kvs:
        which = kv.value.WhichOneof("value")
        out[kv.key] = getattr(kv.value, which) if which else None
    return out


def until(what: Callable[[], T | None], seconds: float) -> T | None:
    """Polls `what` every 100 ms until it returns something other than None, or the deadline."""
    deadline = time.monotonic() + seconds
    while True:
        found = what()
        if found is not None or time.monotonic() >= deadline:
            return found
        time.sleep(0.1)


def span_in(collector: Collector, trace_id: int, name: str, parent: bytes | None = None) -> Span | None:
    """The exported span named `name` in the trace `trace_id` (under `parent` when given)."""
    tid = trace_id.to_bytes(16, "big")
    return next((s for _, s in collector.spans() if s.trace_id == tid and s.name == name
                 and (parent is None or s.parent_span_id == parent)), None)


def sid(span_id: int) -> bytes:
    return span_id.to_bytes(8, "big")


def traced_http() -> httpx.Client:
    """An httpx client whose every request carries the current span as W3C `traceparent`."""
    def inject(request: httpx.Request) -> None:
        propagate.inject(request.headers)
    return httpx.Client(timeout=30, event_hooks={"request": [inject]})


def http_checks(c: Checks, server: Server, collector: Collector) -> None:
    tracer = trace.get_tracer("bridle-e2e-agent")
    with traced_http() as http, bridle.Client(server.base, server.tokens["requester-1"], http_client=http) as client, \
            bridle.Client(server.base, server.tokens["operator-2"], http_client=http) as operator, \
            bridle.Client(server.base, "not-a-token", http_client=http) as anonymous:
        with tracer.start_as_current_span("agent step", kind=SpanKind.CLIENT) as step:
            outcome = client.call("get_service_snapshot", READ, run_id="otel-1")
        c.check("the traced call executes", outcome.executed, outcome)
        refused: dict[str, Any] = {}
        with tracer.start_as_current_span("bad token", kind=SpanKind.CLIENT) as bad:
            try:
                anonymous.call("get_service_snapshot", READ)
            except errors.Unauthenticated as e:
                refused["401"] = e
        with tracer.start_as_current_span("unknown approval", kind=SpanKind.CLIENT) as missing:
            try:
                operator.approval("no-such-approval")
            except errors.NotFound as e:
                refused["404"] = e
        with tracer.start_as_current_span("unknown route", kind=SpanKind.CLIENT) as nowhere:
            refused["route"] = http.get(f"{server.base}/v1/no-such-route").status_code
        c.check("a bad token is 401, an unknown approval and route 404",
                set(refused) == {"401", "404", "route"} and refused["route"] == 404, refused)

    ctx = step.get_span_context()
    request = until(lambda: span_in(collector, ctx.trace_id, "POST /v1/calls"), 20)
    c.check("the SERVER span `POST /v1/calls` continues the client's trace, the client span its parent",
            request is not None and request.parent_span_id == sid(ctx.span_id) and request.kind == SERVER,
            request or [s.name for _, s in collector.spans()])
    if request is None:
        return
    a = attributes(request.attributes)
    c.check("it carries http.request.method, http.route, http.response.status_code, no ERROR status",
            (a.get("http.request.method"), a.get("http.route"), a.get("http.response.status_code"))
            == ("POST", "/v1/calls", 200) and request.status.code != ERROR, (a, request.status))
    gate = until(lambda: span_in(collector, ctx.trace_id, "gate_call", request.span_id), 5)
    g = attributes(gate.attributes) if gate else {}
    c.check("the gate's `gate_call` span nests in it with bridle.code, bridle.level, tool and call_id",
            (g.get("bridle.code"), g.get("bridle.level"), g.get("tool"), g.get("call_id"))
            == ("ok", "auto", "get_service_snapshot", outcome.call_id), gate)
    resources = [r for r, _ in collector.spans()]
    c.check("every span's resource has service.name bridle-e2e and deployment.environment e2e",
            bool(resources) and all(r.get("service.name") == "bridle-e2e" and r.get("deployment.environment") == "e2e"
                                    and r.get("service.version") for r in resources), resources[:1])
    for label, client_span, name, code in [("a bad token", bad, "POST /v1/calls", 401),
                                           ("an unknown approval", missing, "GET /v1/approvals/{id}", 404),
                                           ("an unknown route", nowhere, "GET (unmatched)", 404)]:
        tid = client_span.get_span_context().trace_id
        span = until(lambda: span_in(collector, tid, name), 10)
        s = attributes(span.attributes) if span else {}
        c.check(f"{label}: SERVER span `{name}`, status ERROR, error.type {code}",
                span is not None and span.kind == SERVER and span.status.code == ERROR
                and s.get("error.type") == str(code) and s.get("http.response.status_code") == code,
                span or sorted({x.name for _, x in collector.spans()}))


async def mcp_call(server: Server) -> tuple[str, Any, Any]:
    headers = {"Authorization": f"Bearer {server.tokens['requester-1']}"}
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30.0, read=60.0)) as http, \
            streamable_http_client(f"{server.base}/mcp", http_client=http) as (read, write), \
            ClientSession(read, write) as session:
        init = await session.initialize()
        with trace.get_tracer("bridle-e2e-agent").start_as_current_span("agent mcp step"):
            result = await session.call_tool("get_service_snapshot", READ)
        # A refused call (outside the contract's range): a result with isError, not a JSON-RPC error.
        with trace.get_tracer("bridle-e2e-agent").start_as_current_span("agent refused step"):
            refused = await session.call_tool("scale_replicas", {"service": "checkout", "replicas": 99})
        return init.protocol_version, result, refused


def mcp_checks(c: Checks, server: Server, collector: Collector, client_spans: InMemorySpanExporter) -> None:
    version, result, refused = asyncio.run(mcp_call(server))
    c.check("MCP tools/call over Streamable HTTP runs", not result.is_error, result)
    sent: list[ReadableSpan] = [s for s in client_spans.get_finished_spans()
                                if s.name == "MCP send tools/call get_service_snapshot"]
    if not c.check("the mcp SDK traced its tools/call (a CLIENT span, injected into `_meta`)",
                   len(sent) == 1 and sent[0].kind == SpanKind.CLIENT and sent[0].context is not None,
                   [s.name for s in client_spans.get_finished_spans()]):
        return
    ctx = sent[0].context
    assert ctx is not None
    span = until(lambda: span_in(collector, ctx.trace_id, "tools/call get_service_snapshot"), 20)
    m = attributes(span.attributes) if span else {}
    c.check("bridle's MCP SERVER span `tools/call get_service_snapshot` has the SDK's span as parent",
            span is not None and span.kind == SERVER and span.parent_span_id == sid(ctx.span_id),
            span or sorted({x.name for _, x in collector.spans()}))
    want = {"mcp.method.name": "tools/call", "gen_ai.tool.name": "get_service_snapshot",
            "gen_ai.operation.name": "execute_tool", "mcp.protocol.version": version,
            "jsonrpc.request.id": str((sent[0].attributes or {}).get("jsonrpc.request.id"))}
    c.check("it carries the MCP attributes (method, tool, protocol version, the request's JSON-RPC id)",
            {k: m.get(k) for k in want} == want, (m, want))
    gate = until(lambda: span_in(collector, ctx.trace_id, "gate_call", span.span_id if span else b"-"), 5)
    c.check("the gate's span nests in the MCP span", gate is not None
            and attributes(gate.attributes).get("bridle.code") == "ok", gate)
    c.check("no ERROR status on the executed call's MCP span", span is not None and span.status.code != ERROR,
            span.status if span else None)
    bad = [s for s in client_spans.get_finished_spans() if s.name == "MCP send tools/call scale_replicas"]
    bad_ctx = bad[0].context if len(bad) == 1 else None
    failed = until(lambda: span_in(collector, bad_ctx.trace_id, "tools/call scale_replicas") if bad_ctx else None, 20)
    f = attributes(failed.attributes) if failed else {}
    c.check("a refused tools/call (isError) is an MCP span with status ERROR and error.type tool_error",
            refused.is_error and failed is not None and failed.status.code == ERROR
            and f.get("error.type") == "tool_error", (refused, failed))


def sigterm_checks(c: Checks, server: Server, collector: Collector) -> None:
    tracer = trace.get_tracer("bridle-e2e-agent")
    with traced_http() as http, bridle.Client(server.base, server.tokens["requester-1"], http_client=http) as client:
        with tracer.start_as_current_span("last step", kind=SpanKind.CLIENT) as last:
            client.call("get_service_snapshot", READ, run_id="otel-last")
    tid = last.get_span_context().trace_id
    queued = span_in(collector, tid, "POST /v1/calls") is None
    server.process.send_signal(signal.SIGTERM)
    try:
        code: int | None = server.process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        code = None
    c.check("bridle serve exits 0 on SIGTERM", code == 0, code)
    flushed = until(lambda: span_in(collector, tid, "POST /v1/calls"), 2)
    note = "" if queued else " (it was exported before SIGTERM: the flush was not exercised)"
    c.check(f"the span still queued at SIGTERM was exported before exit{note}", flushed is not None,
            sorted({x.name for _, x in collector.spans()}))
    c.check("trace exports are protobuf, every one decoded",
            collector.content_types == {"/v1/traces application/x-protobuf"} and not collector.rejected,
            (collector.content_types, collector.rejected))


def audit_checks(c: Checks, server: Server, collector: Collector) -> None:
    # The endpoint from the flag alone (the OTEL_EXPORTER_OTLP_ENDPOINT of `serve` left out).
    env = {k: v for k, v in server.env.items() if k != "OTEL_EXPORTER_OTLP_ENDPOINT"}
    otlp = subprocess.run([server.binary, "audit", "export", "--format", "otlp", "--otlp-endpoint", collector.url,
                           "--db", server.db], env=env, capture_output=True, text=True, timeout=60)
    c.check("`bridle audit export --format otlp --otlp-endpoint URL` succeeds", otlp.returncode == 0,
            otlp.stdout + otlp.stderr)
    jsonl = server.cli("audit", "export", "--format", "jsonl")
    events = [json.loads(line) for line in jsonl.stdout.splitlines() if line.strip()]
    runs = {(e.get("record") or e).get("run_id") for e in events}
    c.check("`bridle audit export --format jsonl` of the same store has the three calls' events",
            jsonl.returncode == 0 and len(events) >= 3 and {"otel-1", "otel-last"} <= runs, jsonl.stderr or runs)
    logs = collector.logs()
    records = [(r, attributes(rec.attributes), rec) for r, rec in logs]
    c.check("one log record per audit event, each with bridle.seq (int) and bridle.hash",
            len(records) == len(events) and all(isinstance(a.get("bridle.seq"), int) and a.get("bridle.hash")
                                                for _, a, _ in records), (len(records), len(events)))
    got = [(a.get("bridle.tenant"), a.get("bridle.seq"), a.get("bridle.hash"), a.get("bridle.prev_hash"))
           for _, a, _ in records]
    want = [((e.get("record") or e).get("tenant"), e.get("seq"), e.get("hash"), e.get("prev_hash")) for e in events]
    c.check("seq, hash and prev_hash match the jsonl export, event for event", got == want,
            next(((g, w) for g, w in zip(got, want) if g != w), (len(got), len(want))))
    by_tenant: dict[Any, list[tuple[int, str, str]]] = {}
    for tenant, seq, hash_, prev in got:
        by_tenant.setdefault(tenant, []).append((seq, hash_, prev))
    chained = all([s for s, _, _ in chain] == list(range(chain[0][0], chain[0][0] + len(chain)))
                  and all(b[2] == a[1] for a, b in zip(chain, chain[1:])) for chain in by_tenant.values())
    c.check("per tenant the seqs are contiguous and each prev_hash is the hash before it", chained and bool(got),
            {t: [s for s, _, _ in chain] for t, chain in by_tenant.items()})
    bodies = [json.loads(rec.body.string_value) for _, _, rec in records]
    c.check("each record's body is the event's JSON, its event_name bridle.audit.KIND",
            [b.get("seq") for b in bodies] == [e.get("seq") for e in events]
            and all(rec.event_name == f"bridle.audit.{a.get('bridle.kind')}" for _, a, rec in records),
            [rec.event_name for _, _, rec in records][:3])
    c.check("the logs' resource is the traces' (service.name bridle-e2e, deployment.environment e2e), protobuf",
            bool(logs) and all(r.get("service.name") == "bridle-e2e" and r.get("deployment.environment") == "e2e"
                               for r, _ in logs)
            and "/v1/logs application/x-protobuf" in collector.content_types and not collector.rejected,
            (logs[0][0] if logs else None, collector.content_types, collector.rejected))


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    started = time.monotonic()
    for inherited in [k for k in os.environ if k.startswith("OTEL_")]:
        del os.environ[inherited]
    c = Checks()
    collector = Collector()
    client_spans = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "bridle-e2e-agent"}))
    provider.add_span_processor(SimpleSpanProcessor(client_spans))
    trace.set_tracer_provider(provider)
    # Logs turned down to warn: exported spans keep a filter of their own (BRIDLE_TRACE_FILTER).
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": collector.url, "OTEL_SERVICE_NAME": "bridle-e2e",
           "OTEL_RESOURCE_ATTRIBUTES": "deployment.environment=e2e", "RUST_LOG": "warn"}
    try:
        with Server(sys.argv[1], c, env) as server:
            print("traces: HTTP API", flush=True)
            http_checks(c, server, collector)
            print("traces: MCP over Streamable HTTP", flush=True)
            mcp_checks(c, server, collector, client_spans)
            print("traces: SIGTERM", flush=True)
            sigterm_checks(c, server, collector)
            print("logs: bridle audit export --format otlp", flush=True)
            audit_checks(c, server, collector)
    except Exception as e:  # an unexpected error is one more failure, with its cause
        c.check("scenario ran to the end", False, repr(e))
    finally:
        collector.stop()
    return c.summary("otel", started)


if __name__ == "__main__":
    sys.exit(main())
