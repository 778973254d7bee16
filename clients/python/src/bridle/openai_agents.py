"""OpenAI Agents SDK adapter: function tools whose every call goes through Bridle.

Bridle decides in the SDK's `needs_approval` hook, which makes the real gate call: a call Bridle
executes at once (a read, an automatic change) is done there and its result handed back when the
SDK invokes the tool; a call that needs a human makes the run stop with an interruption (the SDK's
`ToolApprovalItem`), and `BridleAgentTools.pending(item)` gives its approval id and console URL.
Once a human grants it in Bridle (console, `bridle approvals approve`, `POST /v1/approvals/{id}/approve`),
approve the item in the SDK and run again: the tool retries the identical call, which Bridle
executes once.

```python
from agents import Agent, Runner
from bridle import AsyncClient
from bridle.openai_agents import BridleAgentTools

bridle = BridleAgentTools(AsyncClient(), run_id="incident-42")
agent = Agent(name="ops", tools=await bridle.load())
result = await Runner.run(agent, "checkout needs 3 replicas")
for item in result.interruptions:
    print(bridle.pending(item))                 # approval id and URL, for the operator
state = result.to_state()
for item in result.interruptions:
    state.approve(item)                         # after the operator granted it in Bridle
result = await Runner.run(agent, state)         # the identical call, executed once
```

The plans' run id is `run_id` (default: one minted per `BridleAgentTools`; pass the same id when
a resumed run continues in another process), and each model tool call is keyed by its `call_id`
(`idempotency_key` = run id + call id), so a replayed call gets the stored result of an executed
change rather than a second execution.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agents import FunctionTool, RunContextWrapper
from agents import Tool as AgentTool
from agents.items import ToolApprovalItem
from agents.tool_context import ToolContext

from ._ids import call_key, is_id
from .client import AsyncClient
from ._render import render, still_pending
from .types import CallOutcome, Tool


@dataclass(frozen=True)
class PendingApproval:
    """A tool call the SDK paused because Bridle waits for a human."""

    call_id: str
    tool: str
    arguments: dict[str, Any]
    approval_id: str
    approval_url: str | None
    run_id: str
    plan_hash: str | None
    level: str | None
    message: str
    reasons: list[str] = field(default_factory=list)

    @classmethod
    def from_outcome(cls, call_id: str, arguments: Mapping[str, Any], outcome: CallOutcome) -> PendingApproval:
        detail = outcome.rejection.detail if outcome.rejection else {}
        reasons = detail.get("reasons")
        return cls(
            call_id=call_id,
            tool=outcome.tool,
            arguments=dict(arguments),
            approval_id=outcome.approval_id or "",
            approval_url=outcome.approval_url,
            run_id=outcome.run_id,
            plan_hash=outcome.plan_hash,
            level=outcome.level,
            message=outcome.rejection.message if outcome.rejection else "",
            reasons=[r for r in reasons if isinstance(r, str)] if isinstance(reasons, list) else [],
        )


class BridleAgentTools:
    """Bridle's tools for one agent run, sharing one Bridle run id."""

    def __init__(
        self,
        client: AsyncClient,
        *,
        run_id: str | None = None,
        incident: str | None = None,
        agent: str | None = None,
    ) -> None:
        if run_id is not None and not is_id(run_id):
            raise ValueError("`run_id` must be at most 128 characters of letters, digits and `-_.:/@`")
        self.client = client
        self.run_id = run_id or f"agents-{uuid.uuid4().hex}"
        self.incident = incident
        self.agent = agent
        self._settled: dict[str, CallOutcome] = {}
        self._pending: dict[str, PendingApproval] = {}

    async def load(self, names: Iterable[str] | None = None) -> list[AgentTool]:
        """Every tool the token may call (or those in `names`) as SDK function tools (typed as the
        SDK's `Tool`, so the list goes straight into `Agent(tools=...)`)."""
        wanted = set(names) if names is not None else None
        return [self.function_tool(t) for t in await self.client.tools() if wanted is None or t.name in wanted]

    def function_tool(self, tool: Tool) -> FunctionTool:
        """One Bridle tool as an SDK function tool (Bridle's description and JSON Schema)."""
        return self._tool(tool.name, tool.description or tool.name, tool.input_schema)

    def wrap(self, tool: FunctionTool) -> FunctionTool:
        """An existing function tool routed through Bridle under the same name and schema: Bridle
        runs the contract registered under that name; the tool's own function is never called."""
        return self._tool(tool.name, tool.description, tool.params_json_schema)

    def pending(self, item: ToolApprovalItem | str) -> PendingApproval | None:
        """The Bridle approval an interruption (or a call id) waits for."""
        call_id = item if isinstance(item, str) else item.call_id
        return self._pending.get(call_id or "")

    @property
    def pending_approvals(self) -> list[PendingApproval]:
        return list(self._pending.values())

    def _identity(self, call_id: str) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "incident": self.incident,
            "agent": self.agent,
            "tool_call_id": call_id if is_id(call_id) else None,
            "idempotency_key": call_key(self.run_id, call_id),
        }

    def _tool(self, name: str, description: str, schema: Mapping[str, Any]) -> FunctionTool:
        async def needs_approval(_ctx: RunContextWrapper[Any], params: dict[str, Any], call_id: str) -> bool:
            outcome = await self.client.call(name, params, **self._identity(call_id))
            if still_pending(outcome):
                self._pending[call_id] = PendingApproval.from_outcome(call_id, params, outcome)
                return True
            self._settled[call_id] = outcome
            return False

        async def invoke(ctx: ToolContext[Any], raw_arguments: str) -> str:
            call_id = ctx.tool_call_id
            settled = self._settled.pop(call_id, None)
            if settled is not None:
                return render(settled)
            arguments = json.loads(raw_arguments) if raw_arguments.strip() else {}
            waiting = self._pending.pop(call_id, None)
            outcome = await self.client.call(
                name,
                arguments,
                approval_id=waiting.approval_id if waiting else None,
                **self._identity(call_id),
            )
            return render(outcome)

        return FunctionTool(
            name=name,
            description=description,
            params_json_schema=dict(schema),
            on_invoke_tool=invoke,
            strict_json_schema=False,
            needs_approval=needs_approval,
        )


def wrap_tools(tools: Sequence[FunctionTool], bridle: BridleAgentTools) -> list[FunctionTool]:
    """`bridle.wrap` for each tool."""
    return [bridle.wrap(t) for t in tools]


__all__ = ["BridleAgentTools", "PendingApproval", "wrap_tools"]
