"""End-to-end: the LangGraph adapter (`bridle.langgraph`) in a real LangGraph graph against a live
`bridle serve`, the model replaced by a scripted node that emits the tool calls (no network).

The graph is `agent → ToolNode(bridle_tools(...)) → agent` with an `InMemorySaver`; the Bridle run
id is the graph's thread id. Sync (`invoke`, `Client`): the read executes; the change interrupts
with the approval id and console URL; resuming before the grant interrupts again on the same
request; an operator grants it with `bridle approvals approve` (the CLI, its own token); resuming
executes the call, once (per the audit log); the model's next, identical call interrupts on a new
approval; rejected with the CLI and resumed, the model is told the refusal and nothing more runs.
Async (`ainvoke`, `AsyncClient`): read, interrupt, grant over HTTP, resume, executed once.

Usage: python test_langgraph.py PATH_TO_BRIDLE_BINARY
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import Command

import bridle
from bridle.langgraph import APPROVAL_INTERRUPT, BridleTool, abridle_tools, bridle_tools
from harness import Checks, Server


def scripted_agent(state: MessagesState) -> dict[str, Any]:
    """The model: reads, proposes one more replica at the version it read, proposes the same
    again on its next turn, then answers. Decided by how many turns it has had."""
    messages = state["messages"]
    turn = sum(1 for m in messages if isinstance(m, AIMessage))
    if turn == 0:
        call = {"name": "get_service_snapshot", "args": {"service": "checkout"}, "id": "lg-call-1"}
        return {"messages": [AIMessage(content="", tool_calls=[call])]}
    read = next(json.loads(str(m.content)) for m in messages
                if isinstance(m, ToolMessage) and m.tool_call_id == "lg-call-1")
    args = {"service": "checkout", "replicas": read["replicas"] + 1, "resource_version": read["resource_version"]}
    if turn in (1, 2):
        call = {"name": "scale_replicas", "args": args, "id": f"lg-call-{turn + 1}"}
        return {"messages": [AIMessage(content="", tool_calls=[call])]}
    return {"messages": [AIMessage(content="done")]}


def build(tools: list[BridleTool]) -> Any:
    graph = StateGraph(MessagesState)
    graph.add_node("agent", scripted_agent)
    graph.add_node("tools", ToolNode(tools))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    return graph.compile(checkpointer=InMemorySaver())


def interrupt_of(state: dict[str, Any]) -> dict[str, Any]:
    interrupts = state.get("__interrupt__") or []
    return dict(interrupts[0].value) if interrupts else {}


def tool_message(state: dict[str, Any], call_id: str) -> ToolMessage | None:
    return next((m for m in state["messages"] if isinstance(m, ToolMessage) and m.tool_call_id == call_id), None)


def sync_scenario(c: Checks, server: Server) -> None:
    thread = "lg-thread-1"
    config: Any = {"configurable": {"thread_id": thread}}
    with bridle.Client(server.base, server.tokens["requester-1"]) as client:
        tools = bridle_tools(client)
        c.check("sync: tools built from Bridle's list",
                sorted(t.name for t in tools) == ["get_service_snapshot", "scale_replicas"], tools)
        app = build(tools)

        state = app.invoke({"messages": [HumanMessage("checkout needs one more replica")]}, config)
        read = tool_message(state, "lg-call-1")
        c.check("sync: the read executes through Bridle",
                read is not None and "replicas" in json.loads(str(read.content))
                and server.executions("get_service_snapshot", thread) == 1, read)
        asked = interrupt_of(state)
        approval_id = str(asked.get("approval_id", ""))
        c.check("sync: the change interrupts with the approval id and url",
                asked.get("kind") == APPROVAL_INTERRUPT and asked.get("code") == "approval_required"
                and bool(approval_id) and asked.get("approval_url") == f"{server.base}/approvals/{approval_id}"
                and asked.get("tool") == "scale_replicas" and asked.get("tool_call_id") == "lg-call-2"
                and asked.get("run_id") == thread, asked)

        # The documented way to resume: with the interrupt's own value (it names the approval).
        early = app.invoke(Command(resume=asked), config)
        c.check("sync: resuming before the grant interrupts again on the same request",
                interrupt_of(early).get("approval_id") == approval_id
                and server.executions("scale_replicas", thread) == 0, interrupt_of(early))

        granted = server.cli("approvals", "approve", approval_id, "--token", server.tokens["operator-2"])
        c.check("sync: the operator approves with the CLI", granted.returncode == 0, granted.stdout + granted.stderr)

        state = app.invoke(Command(resume=asked), config)
        done = tool_message(state, "lg-call-2")
        outcome = done.artifact if done is not None else None
        c.check("sync: resuming executes the call with that approval",
                isinstance(outcome, bridle.CallOutcome) and outcome.executed and outcome.approval_id == approval_id,
                outcome)
        c.check("sync: the audit log shows exactly one execution",
                server.executions("scale_replicas", thread) == 1, server.executions("scale_replicas", thread))
        again = interrupt_of(state)
        second_id = str(again.get("approval_id", ""))
        c.check("sync: the model's identical next call needs a new approval",
                again.get("kind") == APPROVAL_INTERRUPT and second_id not in ("", approval_id)
                and again.get("tool_call_id") == "lg-call-3", again)

        rejected = server.cli("approvals", "reject", second_id, "--reason", "one scale is enough",
                              "--token", server.tokens["operator-2"])
        c.check("sync: the operator rejects with the CLI", rejected.returncode == 0, rejected.stdout + rejected.stderr)
        final = app.invoke(Command(resume=again), config)
        refused = tool_message(final, "lg-call-3")
        c.check("sync: after a rejection the model is told, and the graph ends",
                refused is not None and str(refused.content).startswith("refused by Bridle (approval_required)")
                and "rejected" in str(refused.content) and not final.get("__interrupt__")
                and final["messages"][-1].content == "done", refused)
        c.check("sync: still exactly one execution", server.executions("scale_replicas", thread) == 1)
        with bridle.Client(server.base, server.tokens["operator-2"]) as operator:
            stray = [a.id for a in operator.approvals() if a.plan.run_id == thread]
        c.check("sync: resuming after the rejection asked for no new approval", stray == [], stray)


async def async_scenario(c: Checks, server: Server) -> None:
    thread = "lg-thread-async"
    config: Any = {"configurable": {"thread_id": thread}}
    async with bridle.AsyncClient(server.base, server.tokens["requester-1"]) as client, \
            bridle.AsyncClient(server.base, server.tokens["operator-2"]) as operator:
        app = build(await abridle_tools(client))
        state = await app.ainvoke({"messages": [HumanMessage("one more replica")]}, config)
        asked = interrupt_of(state)
        approval_id = str(asked.get("approval_id", ""))
        c.check("async: read executed, change interrupted",
                tool_message(state, "lg-call-1") is not None and asked.get("kind") == APPROVAL_INTERRUPT
                and bool(approval_id), asked)
        await operator.approve(approval_id)
        state = await app.ainvoke(Command(resume=True), config)
        done = tool_message(state, "lg-call-2")
        c.check("async: resuming after the grant executes",
                done is not None and isinstance(done.artifact, bridle.CallOutcome) and done.artifact.executed, done)
        c.check("async: exactly one execution", server.executions("scale_replicas", thread) == 1)
        c.check("async: the next identical call interrupts on a new approval",
                interrupt_of(state).get("approval_id") not in (None, approval_id), interrupt_of(state))


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    started = time.monotonic()
    c = Checks()
    with Server(sys.argv[1], c) as server:
        try:
            print("LangGraph adapter (sync)", flush=True)
            sync_scenario(c, server)
            print("LangGraph adapter (async)", flush=True)
            asyncio.run(async_scenario(c, server))
        except Exception as e:  # an unexpected error is one more failure, with its cause
            c.check("scenario ran to the end", False, repr(e))
    return c.summary("langgraph adapter", started)


if __name__ == "__main__":
    sys.exit(main())
