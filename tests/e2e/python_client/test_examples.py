"""End-to-end: the Python client's runnable examples (`clients/python/examples/*.py`) against a live
`bridle serve`, as a user runs them: BRIDLE_URL, BRIDLE_TOKEN (requester-1) and
BRIDLE_OPERATOR_TOKEN (operator-2, who approves) in the environment. Each must exit 0 (they check
their own story: approval asked, granted, executed once) and print its key lines.

Usage: python test_examples.py PATH_TO_BRIDLE_BINARY
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from harness import Checks, Server

EXAMPLES = Path(__file__).resolve().parents[3] / "clients" / "python" / "examples"

EXPECTED = {
    "quickstart.py": ["change: approval_required id=", "decision: granted by operator-2", "executed: replicas=",
                      "audit: executed once", "async: approved"],
    "langgraph_agent.py": ["interrupted: scale_replicas", "/approvals/", "approved by operator-2",
                           "executed once: job"],
    "openai_agents_agent.py": ["interrupted: scale_replicas", "/approvals/", "approved in Bridle by operator-2",
                               "audit: scale_replicas executed once"],
}


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    started = time.monotonic()
    c = Checks()
    with Server(sys.argv[1], c) as server:
        env = {**server.env, "BRIDLE_URL": server.base, "BRIDLE_TOKEN": server.tokens["requester-1"],
               "BRIDLE_OPERATOR_TOKEN": server.tokens["operator-2"]}
        for name, lines in EXPECTED.items():
            done = subprocess.run([sys.executable, str(EXAMPLES / name)], env=env, capture_output=True, text=True,
                                  timeout=120, stdin=subprocess.DEVNULL)
            out = done.stdout
            c.check(f"{name} exits 0 and tells its story",
                    done.returncode == 0 and all(line in out for line in lines),
                    f"exit {done.returncode}\n{out}{done.stderr[-2000:]}")
    return c.summary("python examples", started)


if __name__ == "__main__":
    sys.exit(main())
