"""LangGraph adapter: LangChain tools whose every call goes through Bridle's `POST /v1/calls`.

Bridle executes the call itself (with the tool's registered adapter and executor identity); the
LangChain tool only carries the name, description and JSON Schema the model sees. A call that
needs a human becomes a LangGraph `interrupt(...)` whose value carries the approval id and the
console URL (`kind == "bridle_approval"`). Resume the graph (`Command(resume=...)`) once the
approval is decided: the tool retries the identical call, which Bridle executes once (the approval
is bound to the plan's hash and consumed in the transaction that reserves the job).

```python
from langgraph.prebuilt import ToolNode
from bridle import Client
from bridle.langgraph import bridle_tools

tools = bridle_tools(Client())                 # the tools the token may call
node = ToolNode(tools)                          # or bind them to a model with `bind_tools`
...
state = graph.invoke(inputs, config)            # {"__interrupt__": [Interrupt(value={...})]}
graph.invoke(Command(resume=value), config)     # the interrupt's value: retry with its approval
```

Identity of a call: the Bridle run id is the tool's `run_id`, else the graph's `thread_id` (so
the retry after a resume is the same plan), and each model tool call is keyed by its id
(`idempotency_key` = run id + tool call id), so a node re-run after a crash or a resume gets the
stored result of an executed call rather than a second execution.

A graph with interrupts needs a checkpointer (e.g. `InMemorySaver`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal, cast

from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langgraph.types import interrupt
from pydantic import ConfigDict

from ._ids import as_id, call_key, is_id
from ._render import render, still_pending
from .client import AsyncClient, Client
from .types import CallOutcome, Tool

APPROVAL_INTERRUPT = "bridle_approval"
"""`kind` of the interrupt value raised for a call that needs a human."""


def approval_request(
    outcome: CallOutcome, arguments: Mapping[str, Any], tool_call_id: str | None = None
) -> dict[str, Any]:
    """The interrupt value for a call waiting for approval (`tool_call_id`: the model's id of the
    call, which a resume value names to retry with the approval)."""
    rejection = outcome.rejection
    return {
        "kind": APPROVAL_INTERRUPT,
        "code": outcome.code,
        "approval_id": outcome.approval_id,
        "approval_url": outcome.approval_url,
        "tool": outcome.tool,
        "arguments": dict(arguments),
        "run_id": outcome.run_id,
        "plan_hash": outcome.plan_hash,
        "level": outcome.level,
        "reasons": list(rejection.detail.get("reasons", [])) if rejection else [],
        "message": rejection.message if rejection else "",
        "tool_call_id": tool_call_id or outcome.tool_call_id,
    }


def _resume_approval_id(resume: Any, default: str | None) -> str | None:
    if isinstance(resume, Mapping):
        given = resume.get("approval_id")
        if isinstance(given, str) and given:
            return given
    return default


def _resumed_approval_id(config: RunnableConfig, tool_call_id: str | None) -> str | None:
    """On a resumed run, the approval id the resume value names for this very tool call (the
    interrupt value itself, or any mapping with its `approval_id` and `tool_call_id`), so the first
    call after a resume names the approval rather than asking again after a rejection. LangGraph
    keeps resume values in a private scratchpad; without it (another version), None."""
    try:
        from langgraph._internal._constants import CONFIG_KEY_SCRATCHPAD
    except ImportError:  # pragma: no cover - another LangGraph layout
        return None
    scratchpad = (config.get("configurable") or {}).get(CONFIG_KEY_SCRATCHPAD)
    resume = getattr(scratchpad, "resume", None)
    peek = getattr(scratchpad, "get_null_resume", None)
    # The value answering this task's first interrupt: kept from an earlier resume, or the one
    # this resume brings (looked at, not taken: `interrupt()` takes it).
    if isinstance(resume, list) and resume:
        first = resume[0]
    elif callable(peek):
        first = peek(False)
    else:
        return None
    if not isinstance(first, Mapping) or tool_call_id is None or first.get("tool_call_id") != tool_call_id:
        return None
    return _resume_approval_id(first, None)


class BridleTool(BaseTool):
    """A LangChain tool executed by Bridle. Give `client` (sync), `async_client`, or both."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    client: Client | None = None
    async_client: AsyncClient | None = None
    run_id: str | None = None
    """The Bridle run id; default: the graph's `thread_id` (made a valid id if needed)."""
    incident: str | None = None
    agent: str | None = None
    response_format: Literal["content", "content_and_artifact"] = "content_and_artifact"

    def _to_args_and_kwargs(
        self, tool_input: str | dict[str, Any], tool_call_id: str | None
    ) -> tuple[tuple[Any, ...], dict[str, Any]]:
        arguments = tool_input if isinstance(tool_input, dict) else json.loads(tool_input)
        return (), {"arguments": dict(arguments), "tool_call_id": tool_call_id}

    def _identity(self, config: RunnableConfig, tool_call_id: str | None) -> dict[str, Any]:
        run_id = self.run_id
        if run_id is None:
            thread = (config.get("configurable") or {}).get("thread_id")
            if thread is None:
                raise ValueError("a Bridle tool needs `run_id`, or a graph config with a `thread_id`")
            run_id = as_id(str(thread), "lg")
        call_id = tool_call_id if tool_call_id and is_id(tool_call_id) else None
        return {
            "run_id": run_id,
            "incident": self.incident,
            "agent": self.agent,
            "tool_call_id": call_id,
            "idempotency_key": call_key(run_id, tool_call_id) if tool_call_id else None,
        }

    def _run(
        self, arguments: dict[str, Any], tool_call_id: str | None, config: RunnableConfig
    ) -> tuple[str, CallOutcome]:
        if self.client is None:
            raise RuntimeError(f"tool `{self.name}` has no sync Bridle client; invoke it asynchronously")
        identity = self._identity(config, tool_call_id)
        resumed = _resumed_approval_id(config, tool_call_id)
        outcome = self.client.call(self.name, arguments, approval_id=resumed, **identity)
        while still_pending(outcome):
            resume = interrupt(approval_request(outcome, arguments, tool_call_id))
            approval_id = _resume_approval_id(resume, outcome.approval_id)
            outcome = self.client.call(self.name, arguments, approval_id=approval_id, **identity)
        return render(outcome), outcome

    async def _arun(
        self, arguments: dict[str, Any], tool_call_id: str | None, config: RunnableConfig
    ) -> tuple[str, CallOutcome]:
        if self.async_client is None:
            return cast("tuple[str, CallOutcome]", await super()._arun(arguments, tool_call_id, config))
        identity = self._identity(config, tool_call_id)
        resumed = _resumed_approval_id(config, tool_call_id)
        outcome = await self.async_client.call(self.name, arguments, approval_id=resumed, **identity)
        while still_pending(outcome):
            resume = interrupt(approval_request(outcome, arguments, tool_call_id))
            approval_id = _resume_approval_id(resume, outcome.approval_id)
            outcome = await self.async_client.call(self.name, arguments, approval_id=approval_id, **identity)
        return render(outcome), outcome


def bridle_tools(
    client: Client | None = None,
    *,
    async_client: AsyncClient | None = None,
    tools: Sequence[Tool] | None = None,
    names: Iterable[str] | None = None,
    run_id: str | None = None,
    incident: str | None = None,
    agent: str | None = None,
) -> list[BridleTool]:
    """Every tool the token may call (or those in `names`), with Bridle's descriptions and JSON
    Schemas, as LangChain tools calling through `client` and/or `async_client`. The list is read
    with `client` unless `tools` gives it (`abridle_tools` reads it with the async client)."""
    if tools is None:
        if client is None:
            raise ValueError("give a sync `client` to list the tools, or use `await abridle_tools(async_client)`")
        tools = client.tools()
    wanted = set(names) if names is not None else None
    return [
        BridleTool(
            name=t.name,
            description=t.description or t.name,
            args_schema=t.input_schema,
            client=client,
            async_client=async_client,
            run_id=run_id,
            incident=incident,
            agent=agent,
        )
        for t in tools
        if wanted is None or t.name in wanted
    ]


async def abridle_tools(async_client: AsyncClient, **options: Any) -> list[BridleTool]:
    """`bridle_tools` for asyncio: the list read with `async_client`, which the tools call with."""
    return bridle_tools(async_client=async_client, tools=await async_client.tools(), **options)


def wrap_tool(
    tool: BaseTool,
    client: Client | None = None,
    *,
    async_client: AsyncClient | None = None,
    run_id: str | None = None,
    incident: str | None = None,
    agent: str | None = None,
) -> BridleTool:
    """An existing LangChain tool routed through Bridle under the same name: the model sees the
    same name, description and schema, and Bridle runs the contract registered under that name.
    The original function is never called (Bridle executes with its own identity)."""
    schema = tool.tool_call_schema
    if isinstance(schema, dict):
        args_schema = schema
    elif hasattr(schema, "model_json_schema"):
        args_schema = schema.model_json_schema()
    else:
        args_schema = schema.schema()
    return BridleTool(
        name=tool.name,
        description=tool.description,
        args_schema=args_schema,
        client=client,
        async_client=async_client,
        run_id=run_id,
        incident=incident,
        agent=agent,
    )


def wrap_tools(tools: Sequence[BaseTool], client: Client | None = None, **options: Any) -> list[BridleTool]:
    """`wrap_tool` for each tool (e.g. the tools of a `ToolNode`)."""
    return [wrap_tool(t, client, **options) for t in tools]


__all__ = [
    "APPROVAL_INTERRUPT",
    "BridleTool",
    "abridle_tools",
    "approval_request",
    "bridle_tools",
    "render",
    "still_pending",
    "wrap_tool",
    "wrap_tools",
]
