"""Shared by the Python client's end-to-end tests: `bridle serve` on a free port with a fresh
SQLite store and the bundled example configuration, development tokens, named checks.

`with Server(binary) as server:` starts it (BRIDLE_JWT_SECRET fresh, other BRIDLE_* variables
dropped, the variables of `env` added), waits for `/healthz`, and stops it with SIGTERM on the
way out, printing the tail of its log when a check failed.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

SCOPES = {
    "requester-1": "service:read,service:scale",
    "viewer-4": "service:read",
    "operator-2": "approval:grant,audit:read",
    # A requester who also holds the approver scope: approving its own plan is `approver_denied`.
    "self-approver": "service:read,service:scale,approval:grant",
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

    def summary(self, label: str, started: float) -> int:
        print(f"e2e {label} took {time.monotonic() - started:.1f} s", flush=True)
        print(f"e2e: {self.passed} passed, {self.failed} failed", flush=True)
        return 1 if self.failed or not self.passed else 0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class Server:
    """A `bridle serve` for one test script."""

    def __init__(self, binary: str, checks: Checks, env: dict[str, str] | None = None) -> None:
        self.binary = binary
        self.checks = checks
        self._tmp = tempfile.TemporaryDirectory(prefix="bridle-e2e-py-")
        tmp = Path(self._tmp.name)
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("BRIDLE_")}
        self.env["BRIDLE_JWT_SECRET"] = secrets.token_hex(32)
        self.env.setdefault("RUST_LOG", "warn")
        self.env.update(env or {})
        self.db = f"sqlite://{tmp / 'bridle.db'}"
        port = free_port()
        self.base = f"http://127.0.0.1:{port}"
        self._log_path = tmp / "serve.log"
        self._log = open(self._log_path, "w+")
        self.process = subprocess.Popen(
            [binary, "serve", "--db", self.db, "--listen", f"127.0.0.1:{port}"],
            env=self.env, stdout=self._log, stderr=subprocess.STDOUT, text=True, cwd=tmp,
        )
        self.tokens = {name: self.token(name) for name in SCOPES}

    def token(self, subject: str, scopes: str | None = None) -> str:
        out = subprocess.run(
            [self.binary, "token", "issue", "--subject", subject, "--tenant", "tenant-a", "--services", "checkout",
             "--scopes", scopes or SCOPES[subject], "--ttl", "1h"],
            env=self.env, check=True, capture_output=True, text=True,
        )
        return out.stdout.strip()

    def __enter__(self) -> Server:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"bridle serve exited with {self.process.returncode}")
            try:
                with urllib.request.urlopen(f"{self.base}/healthz", timeout=2) as r:
                    if r.status == 200:
                        return self
            except OSError:
                pass
            time.sleep(0.2)
        raise RuntimeError("bridle serve did not become healthy in 60 s")

    def __exit__(self, *exc: object) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.checks.check("bridle serve stops on SIGTERM", False, "killed after 15 s")
        if self.checks.failed:
            self._log.seek(0)
            print("--- bridle serve log ---\n" + self._log.read()[-4000:], flush=True)
        self._log.close()
        self._tmp.cleanup()

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        """`bridle ARGS --db STORE` with the server's environment."""
        return subprocess.run([self.binary, *args, "--db", self.db], env=self.env, capture_output=True, text=True)

    def audit(self) -> list[dict[str, Any]]:
        """Every audit event of tenant-a, read with the operator's token."""
        events: list[dict[str, Any]] = []
        after = 0
        while True:
            req = urllib.request.Request(f"{self.base}/v1/audit?after={after}&limit=1000")
            req.add_header("Authorization", f"Bearer {self.tokens['operator-2']}")
            with urllib.request.urlopen(req, timeout=30) as r:
                page = json.loads(r.read())
            events.extend(page["events"])
            if page.get("next_after") is None:
                return events
            after = page["next_after"]

    def executions(self, tool: str, run_id: str) -> int:
        """How many times the audit log says `tool` executed in `run_id`."""
        return sum(1 for e in self.audit()
                   if e.get("kind") == "tool_call" and e.get("tool") == tool and e.get("run_id") == run_id
                   and e.get("decision") == "executed")
