"""An OpenAI Agents SDK agent whose tool calls all go through Bridle, with a scripted `Model`
(no network, no API key).

    export BRIDLE_URL=http://127.0.0.1:8080
    export BRIDLE_TOKEN=$(bridle token issue --subject requester-1 --tenant tenant-a \
        --services checkout --scopes service:read,service:scale)
    export BRIDLE_OPERATOR_TOKEN=$(bridle token issue --subject operator-2 --tenant tenant-a \
        --services checkout --scopes approval:grant)
    python examples/openai_agents_agent.py

The scripted model reads the service, then proposes one more replica. Bridle runs the read; the
change stops the run with an interruption whose Bridle approval id and URL `tools.pending(item)`
gives; the operator's token approves it in Bridle (in real life a human on the console page);
the item is approved in the SDK and the run resumed: the identical call runs, once.
Without BRIDLE_OPERATOR_TOKEN the example waits for you to approve it and press Enter.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import uuid
from collections.abc import AsyncIterator
from typing import Any

from agents import Agent, Runner, set_tracing_disabled
from agents.items import ModelResponse, TResponseInputItem, TResponseOutputItem, TResponseStreamEvent
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

import bridle
from bridle.openai_agents import BridleAgentTools


class ScriptedModel(Model):
    """Stands in for a model: read, then scale, then answer, decided by the tool outputs so far."""

    async def get_response(self, system_instructions: str | None, input: str | list[TResponseInputItem],
                           *args: Any, **kwargs: Any) -> ModelResponse:
        items: list[dict[str, Any]] = [] if isinstance(input, str) else [dict(i) for i in input]
        outputs = [i for i in items if i.get("type") == "function_call_output"]
        output: TResponseOutputItem
        if not outputs:
            output = ResponseFunctionToolCall(type="function_call", id="fc-read", call_id="call-read",
                                              name="get_service_snapshot", arguments='{"service": "checkout"}')
        elif len(outputs) == 1:
            snapshot = json.loads(str(outputs[0]["output"]))
            replicas = int(snapshot["replicas"])
            scale = {"service": "checkout", "replicas": replicas + 1 if replicas < 5 else replicas - 1,
                     "resource_version": snapshot["resource_version"]}
            output = ResponseFunctionToolCall(type="function_call", id="fc-scale", call_id="call-scale",
                                              name="scale_replicas", arguments=json.dumps(scale))
        else:
            text = f"done: {outputs[-1]['output']}"
            output = ResponseOutputMessage(id="msg-1", type="message", role="assistant", status="completed",
                                           content=[ResponseOutputText(type="output_text", text=text,
                                                                       annotations=[])])
        return ModelResponse(output=[output], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[TResponseStreamEvent]:
        raise NotImplementedError("the scripted model does not stream")


async def run() -> int:
    set_tracing_disabled(True)                 # no trace export: nothing leaves the machine
    async with bridle.AsyncClient() as client:
        tools = BridleAgentTools(client, run_id=f"agents-example-{uuid.uuid4().hex[:8]}")
        agent = Agent(name="ops", instructions="Keep checkout healthy.", model=ScriptedModel(),
                      tools=await tools.load())
        result = await Runner.run(agent, "checkout needs one more replica")
        while result.interruptions:
            state = result.to_state()
            for item in result.interruptions:
                pending = tools.pending(item)
                assert pending is not None, item
                print(f"interrupted: {pending.tool} {json.dumps(pending.arguments)} needs approval")
                print(f"  approval {pending.approval_id}: {pending.approval_url}")
                operator_token = os.environ.get("BRIDLE_OPERATOR_TOKEN")
                if operator_token:
                    async with bridle.AsyncClient(token=operator_token) as operator:
                        granted = await operator.approve(pending.approval_id)
                        print(f"  approved in Bridle by {granted.grants[0].approver}")
                else:
                    await asyncio.to_thread(input, "  approve it in Bridle, then press Enter ")
                state.approve(item)            # let the SDK run it: Bridle runs it if granted
            result = await Runner.run(agent, state)
        print(f"model: {result.final_output}")
        audit_token = os.environ.get("BRIDLE_OPERATOR_TOKEN")
        if audit_token:
            async with bridle.AsyncClient(token=audit_token) as operator:
                executed = [e async for e in operator.iter_audit() if e.run_id == tools.run_id
                            and e.kind == "tool_call" and e.tool == "scale_replicas" and e.decision == "executed"]
            assert len(executed) == 1, executed
            print(f"audit: scale_replicas executed once with approval {executed[0].approval_id}")
    return 0


def main() -> int:
    if not os.environ.get("BRIDLE_TOKEN"):
        print(__doc__, file=sys.stderr)
        return 2
    return asyncio.run(run())


if __name__ == "__main__":
    sys.exit(main())
