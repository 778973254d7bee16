"""End-to-end: the official Python MCP SDK as a real client of Bridle.

Starts `bridle serve` on a free port with a temporary SQLite store, then runs one scenario over
Streamable HTTP (`/mcp` with a bearer token) and one over stdio (`bridle mcp --stdio` spawned
with BRIDLE_TOKEN and the same store): list tools (scoped to the principal), call a read tool,
hit approval_required, approve with the CLI (`bridle approvals approve ID --token OPERATOR`) over
HTTP and with the HTTP API over stdio, call again (executed), call once more (a new approval is
needed: the first ran exactly once). Prints one line per check
and a closing `e2e: N passed, N failed` line; exits non-zero on any failure.

Usage: python test_mcp.py PATH_TO_BRIDLE_BINARY
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Callable

import httpx2
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

SCALE = {"service": "checkout", "replicas": 3, "resource_version": 7}
READ = {"service": "checkout"}

PRINCIPALS = {
    "requester-1": "service:read,service:scale",
    "viewer-4": "service:read",
    "operator-2": "approval:grant",
}


class Checks:
    """Counts and prints named assertions without stopping at the first failure."""

    def __init__(self) -> None:
        self.passed = 0
        self.failed = 0

    def check(self, name: str, ok: bool, detail: Any = "") -> bool:
        if ok:
            self.passed += 1
            print(f"  ok    {name}", flush=True)
        else:
            self.failed += 1
            print(f"  FAIL  {name}: {detail}", flush=True)
        return ok


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def issue_token(binary: str, env: dict[str, str], subject: str) -> str:
    out = subprocess.run(
        [binary, "token", "issue", "--subject", subject, "--tenant", "tenant-a", "--services", "checkout",
         "--scopes", PRINCIPALS[subject], "--ttl", "1h"],
        env=env, check=True, capture_output=True, text=True,
    )
    return out.stdout.strip()


def http(method: str, url: str, token: str | None, body: Any = None) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method)
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    if data is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, json.loads(resp.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def wait_healthy(base: str, server: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"bridle serve exited with {server.returncode}")
        try:
            if http("GET", f"{base}/healthz", None)[0] == 200:
                return
        except OSError:
            pass
        time.sleep(0.2)
    raise RuntimeError("bridle serve did not become healthy in 60 s")


def executed_scales(base: str, operator: str) -> int:
    _, audit = http("GET", f"{base}/v1/audit", operator)
    events = (audit or {}).get("events", [])
    return sum(1 for e in events
               if e.get("kind") == "tool_call" and e.get("tool") == "scale_replicas" and e.get("decision") == "executed")


Grant = Callable[[str], tuple[bool, Any]]


def grant_over_http(base: str, operator: str) -> Grant:
    def grant(approval_id: str) -> tuple[bool, Any]:
        status, body = http("POST", f"{base}/v1/approvals/{approval_id}/approve", operator)
        return status == 200, (status, body)
    return grant


def grant_with_cli(binary: str, env: dict[str, str], db: str, operator: str) -> Grant:
    def grant(approval_id: str) -> tuple[bool, Any]:
        out = subprocess.run([binary, "approvals", "approve", approval_id, "--db", db, "--token", operator],
                             env=env, capture_output=True, text=True, timeout=60)
        return out.returncode == 0, out.stdout + out.stderr
    return grant


async def scenario(c: Checks, label: str, session: ClientSession, viewer: ClientSession | None, base: str,
                   operator: str, executed_before: int, grant: Grant, how: str) -> None:
    """The shared steps, over whichever transport `session` uses."""
    init = await session.initialize()
    c.check(f"{label}: protocol version negotiated", init.protocol_version == "2025-11-25", init.protocol_version)
    c.check(f"{label}: server is bridle", init.server_info.name == "bridle", init.server_info)

    tools = {t.name: t for t in (await session.list_tools()).tools}
    c.check(f"{label}: requester sees its tools", sorted(tools) == ["get_service_snapshot", "scale_replicas"],
            sorted(tools))
    schema = tools["scale_replicas"].input_schema if "scale_replicas" in tools else {}
    c.check(f"{label}: tools carry input schemas", "replicas" in schema.get("properties", {}), schema)
    if viewer is not None:
        await viewer.initialize()
        seen = sorted(t.name for t in (await viewer.list_tools()).tools)
        c.check(f"{label}: viewer-4 sees no change tool", seen == ["get_service_snapshot"], seen)

    read = await session.call_tool("get_service_snapshot", READ)
    c.check(f"{label}: read tool runs", not read.is_error and (read.structured_content or {}).get("status") == "ok",
            read)

    first = await session.call_tool("scale_replicas", SCALE)
    body = first.structured_content or {}
    c.check(f"{label}: change needs approval",
            first.is_error and body.get("code") == "approval_required" and bool(body.get("message")), first)
    approval_id = body.get("approval_id", "")
    c.check(f"{label}: approval id and console url",
            bool(approval_id) and str(body.get("approval_url", "")).endswith(f"/approvals/{approval_id}"), body)

    ok, granted = grant(approval_id)
    c.check(f"{label}: operator approves {how}", ok, granted)

    done = await session.call_tool("scale_replicas", SCALE)
    done_body = done.structured_content or {}
    c.check(f"{label}: identical call executes",
            not done.is_error and done_body.get("status") == "ok" and done_body.get("approval_id") == approval_id,
            done)

    again = await session.call_tool("scale_replicas", SCALE)
    again_body = again.structured_content or {}
    c.check(f"{label}: approval spent, no second run",
            again.is_error and again_body.get("code") == "approval_required"
            and again_body.get("approval_id") != approval_id, again)
    count = executed_scales(base, operator)
    c.check(f"{label}: audit shows exactly one execution", count == executed_before + 1, count)


async def over_http(c: Checks, base: str, tokens: dict[str, str], grant: Grant) -> None:
    status, body = http("POST", f"{base}/mcp", None, {"jsonrpc": "2.0", "id": 1, "method": "ping"})
    c.check("http: no token is 401 unauthenticated",
            status == 401 and (body or {}).get("error", {}).get("code") == "unauthenticated", (status, body))

    def client(token: str) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"},
                                  timeout=httpx2.Timeout(30.0, read=300.0))

    async with client(tokens["requester-1"]) as rc, client(tokens["viewer-4"]) as vc:
        async with streamable_http_client(f"{base}/mcp", http_client=rc) as (r1, w1), \
                streamable_http_client(f"{base}/mcp", http_client=vc) as (r2, w2):
            async with ClientSession(r1, w1) as session, ClientSession(r2, w2) as viewer:
                await scenario(c, "http", session, viewer, base, tokens["operator-2"], executed_scales(
                    base, tokens["operator-2"]), grant, "with the CLI")


async def over_stdio(c: Checks, binary: str, env: dict[str, str], db: str, base: str,
                     tokens: dict[str, str]) -> None:
    params = StdioServerParameters(
        command=binary, args=["mcp", "--stdio", "--db", db],
        env={**env, "BRIDLE_TOKEN": tokens["requester-1"], "BRIDLE_CONSOLE_URL": base},
    )
    before = executed_scales(base, tokens["operator-2"])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await scenario(c, "stdio", session, None, base, tokens["operator-2"], before,
                           grant_over_http(base, tokens["operator-2"]), "over HTTP")


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    binary = sys.argv[1]
    started = time.monotonic()
    c = Checks()
    with tempfile.TemporaryDirectory(prefix="bridle-e2e-") as tmp:
        env = {k: v for k, v in os.environ.items() if not k.startswith("BRIDLE_")}
        env["BRIDLE_JWT_SECRET"] = secrets.token_hex(32)
        env.setdefault("RUST_LOG", "warn")
        db = f"sqlite://{Path(tmp) / 'bridle.db'}"
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        tokens = {name: issue_token(binary, env, name) for name in PRINCIPALS}
        log = open(Path(tmp) / "serve.log", "w+")
        server = subprocess.Popen([binary, "serve", "--db", db, "--listen", f"127.0.0.1:{port}"], env=env,
                                  stdout=log, stderr=subprocess.STDOUT, text=True, cwd=tmp)
        try:
            wait_healthy(base, server)
            print("MCP over Streamable HTTP", flush=True)
            asyncio.run(over_http(c, base, tokens, grant_with_cli(binary, env, db, tokens["operator-2"])))
            print("MCP over stdio", flush=True)
            asyncio.run(over_stdio(c, binary, env, db, base, tokens))
            # Two processes (serve and the stdio server) appended to one tenant's audit chain.
            verify = subprocess.run([binary, "audit", "verify", "--db", db], env=env, capture_output=True, text=True)
            c.check("audit chain intact across both processes", verify.returncode == 0,
                    verify.stdout + verify.stderr)
        except Exception as e:  # an unexpected error is one more failure, with its cause
            c.check("scenario ran to the end", False, repr(e))
        finally:
            server.terminate()
            try:
                server.wait(timeout=15)
            except subprocess.TimeoutExpired:
                server.kill()
                c.check("bridle serve stops on SIGTERM", False, "killed after 15 s")
            if c.failed:
                log.seek(0)
                print("--- bridle serve log ---\n" + log.read()[-4000:], flush=True)
            log.close()
    print(f"e2e mcp took {time.monotonic() - started:.1f} s", flush=True)
    print(f"e2e: {c.passed} passed, {c.failed} failed", flush=True)
    return 1 if c.failed or not c.passed else 0


if __name__ == "__main__":
    sys.exit(main())
