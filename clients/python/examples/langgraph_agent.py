"""A LangGraph agent whose tool calls all go through Bridle, with a scripted model (no network).

    export BRIDLE_URL=http://127.0.0.1:8080
    export BRIDLE_TOKEN=$(bridle token issue --subject requester-1 --tenant tenant-a \
        --services checkout --scopes service:read,service:scale)
    export BRIDLE_OPERATOR_TOKEN=$(bridle token issue --subject operator-2 --tenant tenant-a \
        --services checkout --scopes approval:grant)
    python examples/langgraph_agent.py

The graph is the usual `agent → ToolNode → agent` loop. The scripted "model" reads the service,
then proposes one more replica. Bridle runs the read; the change interrupts the graph with the
approval id and console URL; the operator's token approves it (in real life a human on the
console page, or `bridle approvals approve ID`); resuming the graph runs the identical call, once.
Without BRIDLE_OPERATOR_TOKEN the example waits for you to approve it and press Enter.
"""

from __future__ import annotations

import json
import os
import sys
import uuid
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import Command

import bridle
from bridle.langgraph import bridle_tools


def scripted_model(state: MessagesState) -> dict[str, Any]:
    """Stands in for a chat model bound to the tools: read, then scale, then answer."""
    messages = state["messages"]
    results = [m for m in messages if isinstance(m, ToolMessage)]
    if not results:
        call = {"name": "get_service_snapshot", "args": {"service": "checkout"}, "id": "call-read"}
        return {"messages": [AIMessage(content="", tool_calls=[call])]}
    if len(results) == 1:
        snapshot = json.loads(str(results[0].content))
        replicas = int(snapshot["replicas"])
        target = replicas + 1 if replicas < 5 else replicas - 1
        args = {"service": "checkout", "replicas": target, "resource_version": snapshot["resource_version"]}
        return {"messages": [AIMessage(content="", tool_calls=[{"name": "scale_replicas", "args": args,
                                                                 "id": "call-scale"}])]}
    return {"messages": [AIMessage(content=f"done: {results[-1].content}")]}


def main() -> int:
    if not os.environ.get("BRIDLE_TOKEN"):
        print(__doc__, file=sys.stderr)
        return 2
    with bridle.Client() as client:
        graph = StateGraph(MessagesState)
        graph.add_node("agent", scripted_model)
        graph.add_node("tools", ToolNode(bridle_tools(client)))
        graph.add_edge(START, "agent")
        graph.add_conditional_edges("agent", tools_condition)
        graph.add_edge("tools", "agent")
        app = graph.compile(checkpointer=InMemorySaver())

        # The thread id is the Bridle run id, so the call after the approval is the same plan.
        config: Any = {"configurable": {"thread_id": f"langgraph-example-{uuid.uuid4().hex[:8]}"}}
        state = app.invoke({"messages": [HumanMessage("checkout needs one more replica")]}, config)
        while state.get("__interrupt__"):
            request = state["__interrupt__"][0].value
            print(f"interrupted: {request['tool']} {json.dumps(request['arguments'])} needs approval")
            print(f"  approval {request['approval_id']}: {request['approval_url']}")
            operator_token = os.environ.get("BRIDLE_OPERATOR_TOKEN")
            if operator_token:
                with bridle.Client(token=operator_token) as operator:
                    operator.approve(request["approval_id"])
                    print(f"  approved by {operator.approval(request['approval_id']).approval.grants[0].approver}")
            else:
                input("  approve it (console or `bridle approvals approve ID`), then press Enter ")
            state = app.invoke(Command(resume=request), config)    # retry with that approval

        scale = next(m for m in state["messages"] if isinstance(m, ToolMessage) and m.tool_call_id == "call-scale")
        outcome = scale.artifact
        assert isinstance(outcome, bridle.CallOutcome) and outcome.executed, outcome
        print(f"executed once: job {outcome.job_id} with approval {outcome.approval_id}")
        print(f"model: {state['messages'][-1].content}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
