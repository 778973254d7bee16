"""End-to-end: the OpenAI Agents SDK adapter (`bridle.openai_agents`) in a real `Runner` run against
a live `bridle serve`, the model replaced by a scripted `Model` implementation (no network, no key).

The agent's tools are `BridleAgentTools(...).load()`. The read executes (once, per the audit log,
although the SDK asks `needs_approval` and then invokes the tool); the change stops the run with
an interruption whose Bridle approval id and console URL `pending(item)` gives; an operator grants
it over HTTP; the run state serialized and restored with fresh tools on the same run id (as another
process would), the item approved in the SDK and the run resumed, the identical call executes,
once; the model's next, identical call stops the run on a new approval; rejected in
Bridle and in the SDK, the run ends with the model's answer and nothing more ran.

Usage: python test_openai_agents.py PATH_TO_BRIDLE_BINARY
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import AsyncIterator
from typing import Any

from agents import Agent, FunctionTool, Runner, RunState, function_tool, set_tracing_disabled
from agents.items import ModelResponse, TResponseInputItem, TResponseOutputItem, TResponseStreamEvent
from agents.models.interface import Model, ModelTracing
from agents.usage import Usage
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

import bridle
from bridle.openai_agents import BridleAgentTools
from harness import Checks, Server


class ScriptedModel(Model):
    """The model: reads, proposes one more replica at the version it read, proposes the same again
    on its next turn, then answers. Decided by the tool outputs it has seen so far."""

    def __init__(self) -> None:
        self.turns = 0

    async def get_response(self, system_instructions: str | None, input: str | list[TResponseInputItem],
                           *args: Any, **kwargs: Any) -> ModelResponse:
        self.turns += 1
        items: list[dict[str, Any]] = [] if isinstance(input, str) else [dict(i) for i in input]
        outputs = [i for i in items if i.get("type") == "function_call_output"]
        output: TResponseOutputItem
        if not outputs:
            output = call("get_service_snapshot", {"service": "checkout"}, "oa-call-1")
        elif len(outputs) in (1, 2):
            read = json.loads(str(outputs[0]["output"]))
            scale = {"service": "checkout", "replicas": read["replicas"] + 1,
                     "resource_version": read["resource_version"]}
            output = call("scale_replicas", scale, f"oa-call-{len(outputs) + 1}")
        else:
            output = ResponseOutputMessage(
                id="msg-done", type="message", role="assistant", status="completed",
                content=[ResponseOutputText(type="output_text", text="done", annotations=[])])
        return ModelResponse(output=[output], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[TResponseStreamEvent]:
        raise NotImplementedError("the scripted model does not stream")


def call(name: str, arguments: dict[str, Any], call_id: str) -> ResponseFunctionToolCall:
    return ResponseFunctionToolCall(type="function_call", id=call_id, call_id=call_id, name=name,
                                    arguments=json.dumps(arguments))


async def scenario(c: Checks, server: Server) -> None:
    run = "oa-run-1"
    async with bridle.AsyncClient(server.base, server.tokens["requester-1"]) as client, \
            bridle.AsyncClient(server.base, server.tokens["operator-2"]) as operator:
        tools = BridleAgentTools(client, run_id=run)
        loaded = await tools.load()
        c.check("function tools built from Bridle's list",
                sorted(t.name for t in loaded) == ["get_service_snapshot", "scale_replicas"]
                and "replicas" in loaded[1].params_json_schema.get("properties", {}), loaded)

        @function_tool
        def scale_replicas(service: str, replicas: int, resource_version: int) -> str:
            """Scale a service (never called: Bridle executes the registered contract)."""
            raise AssertionError("the wrapped function ran")

        wrapped = tools.wrap(scale_replicas)
        c.check("an existing function tool wraps under its own name and schema",
                isinstance(wrapped, FunctionTool) and wrapped.name == "scale_replicas"
                and wrapped.params_json_schema == scale_replicas.params_json_schema, wrapped)

        model = ScriptedModel()
        agent = Agent(name="ops", instructions="Keep checkout healthy.", model=model, tools=loaded)
        result = await Runner.run(agent, "checkout needs one more replica", max_turns=10)
        c.check("the read executes through Bridle, once",
                server.executions("get_service_snapshot", run) == 1
                and any("replicas" in str(i.output) for i in result.new_items if hasattr(i, "output")),
                server.executions("get_service_snapshot", run))
        c.check("the change stops the run with one interruption", len(result.interruptions) == 1,
                result.interruptions)
        item = result.interruptions[0]
        pending = tools.pending(item)
        approval_id = pending.approval_id if pending else ""
        c.check("the interruption carries the Bridle approval id and url",
                pending is not None and bool(approval_id) and pending.tool == "scale_replicas"
                and pending.call_id == "oa-call-2" and pending.run_id == run
                and pending.approval_url == f"{server.base}/approvals/{approval_id}", pending)
        c.check("nothing ran yet", server.executions("scale_replicas", run) == 0)

        granted = await operator.approve(approval_id)
        c.check("the operator approves over HTTP", granted.status == "granted", granted)
        # Resumed as another process would: the state serialized, fresh tools on the same run id.
        saved = result.to_state().to_string()
        tools = BridleAgentTools(client, run_id=run)
        agent = Agent(name="ops", instructions="Keep checkout healthy.", model=model, tools=await tools.load())
        state = await RunState.from_string(agent, saved)
        restored = state.get_interruptions()
        c.check("the serialized state keeps the interruption",
                [i.call_id for i in restored] == ["oa-call-2"], restored)
        for waiting in restored:
            state.approve(waiting)
        result = await Runner.run(agent, state, max_turns=10)
        c.check("resuming executes the identical call, once",
                server.executions("scale_replicas", run) == 1, server.executions("scale_replicas", run))
        audit = [e for e in server.audit() if e.get("kind") == "tool_call" and e.get("run_id") == run
                 and e.get("tool") == "scale_replicas"
                 and e.get("decision") == "executed"]
        c.check("the execution used that approval", [e.get("approval_id") for e in audit] == [approval_id], audit)
        c.check("the model's identical next call stops the run on a new approval",
                len(result.interruptions) == 1 and (tools.pending(result.interruptions[0]) or pending).approval_id
                not in ("", approval_id), tools.pending_approvals)

        second = result.interruptions[0]
        second_id = (tools.pending(second) or pending).approval_id
        await operator.reject(second_id, "one scale is enough")
        state = result.to_state()
        state.reject(second)
        result = await Runner.run(agent, state, max_turns=10)
        c.check("rejected, the run ends with the model's answer", result.final_output == "done"
                and not result.interruptions, result.final_output)
        c.check("still exactly one execution", server.executions("scale_replicas", run) == 1)
        left = [a.id for a in await operator.approvals() if a.plan.run_id == run]
        c.check("no approval left pending for the run", left == [], left)


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    set_tracing_disabled(True)
    started = time.monotonic()
    c = Checks()
    with Server(sys.argv[1], c) as server:
        try:
            print("OpenAI Agents SDK adapter", flush=True)
            asyncio.run(scenario(c, server))
        except Exception as e:  # an unexpected error is one more failure, with its cause
            c.check("scenario ran to the end", False, repr(e))
    return c.summary("openai agents adapter", started)


if __name__ == "__main__":
    sys.exit(main())
