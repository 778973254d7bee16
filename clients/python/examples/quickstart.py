"""The client on its own, sync then async, against a running `bridle serve` (bundled example config).

    export BRIDLE_URL=http://127.0.0.1:8080
    export BRIDLE_TOKEN=$(bridle token issue --subject requester-1 --tenant tenant-a \
        --services checkout --scopes service:read,service:scale)
    export BRIDLE_OPERATOR_TOKEN=$(bridle token issue --subject operator-2 --tenant tenant-a \
        --services checkout --scopes approval:grant,audit:read)
    python examples/quickstart.py

The operator's token plays the human who approves (in real life: the console page at the
approval URL, or `bridle approvals approve ID`). Exits 1 if anything is not as described.
"""

from __future__ import annotations

import asyncio
import os
import sys
import uuid
from typing import Any

import bridle


def scale_args(snapshot: Any) -> dict[str, Any]:
    """One replica more (or less, at the contract's maximum of 5), at the version just read."""
    replicas = int(snapshot["replicas"])
    return {"service": "checkout", "replicas": replicas + 1 if replicas < 5 else replicas - 1,
            "resource_version": snapshot["resource_version"]}


def main_sync(operator_token: str) -> None:
    run_id = f"quickstart-{uuid.uuid4().hex[:8]}"
    with bridle.Client() as client, bridle.Client(token=operator_token) as operator:
        snapshot = client.call_or_raise("get_service_snapshot", {"service": "checkout"}, run_id=run_id)
        print(f"read: replicas={snapshot['replicas']} resource_version={snapshot['resource_version']}")
        args = scale_args(snapshot)

        try:
            client.call_or_raise("scale_replicas", args, run_id=run_id)
            raise SystemExit("expected the change to need approval")
        except bridle.ApprovalRequired as pending:
            print(f"change: approval_required id={pending.approval_id} url={pending.approval_url}")
            print(f"  why: {'; '.join(pending.reasons)}")
            approval_id = pending.approval_id

        operator.approve(approval_id)                       # the human, elsewhere
        decided = operator.wait_for_decision(approval_id, timeout=60)
        print(f"decision: {decided.status} by {', '.join(g.approver for g in decided.grants)}")

        result = client.call_or_raise("scale_replicas", args, run_id=run_id)   # the identical call
        print(f"executed: replicas={result['replicas']} resource_version={result['resource_version']}")

        again = client.call("scale_replicas", args, run_id=run_id)
        assert again.code == "approval_required" and again.approval_id != approval_id, again
        print(f"again: {again.code} (a new request {again.approval_id}; the first approval is spent)")

        executed = [e for e in operator.iter_audit() if e.run_id == run_id and e.kind == "tool_call"
                    and e.tool == "scale_replicas" and e.decision == "executed"]
        assert len(executed) == 1, executed
        print(f"audit: executed once (seq {executed[0].seq}); chain ok={operator.verify_audit().ok}")


async def main_async(operator_token: str) -> None:
    run_id = f"quickstart-async-{uuid.uuid4().hex[:8]}"
    async with bridle.AsyncClient() as client, bridle.AsyncClient(token=operator_token) as operator:
        snapshot = await client.call_or_raise("get_service_snapshot", {"service": "checkout"}, run_id=run_id)
        args = scale_args(snapshot)
        first = await client.call("scale_replicas", args, run_id=run_id)
        assert first.needs_approval and first.approval_id, first
        await operator.approve(first.approval_id)
        done = await client.call("scale_replicas", args, run_id=run_id)
        assert done.executed, done
        print(f"async: approved {first.approval_id} and executed (job {done.job_id})")


def main() -> int:
    operator_token = os.environ.get("BRIDLE_OPERATOR_TOKEN")
    if not operator_token or not os.environ.get("BRIDLE_TOKEN"):
        print(__doc__, file=sys.stderr)
        return 2
    main_sync(operator_token)
    asyncio.run(main_async(operator_token))
    return 0


if __name__ == "__main__":
    sys.exit(main())
