"""LangGraph anchor for `bridle bench runtime --json`: the same shapes, keys and units.

Measures, on trivial nodes with a fresh thread_id per run, after a warm-up batch:
  linear_invoke_us_per_step / _per_run   10-node chain (each node: count += 1), no checkpointer
  single_node_invoke_us_per_run          1-node chain
  fanout_send_us_per_run                 dispatch -> 8 x Send("branch") with an operator.add reducer -> join
  loop_us_per_iteration                  one node looping on a conditional edge until count == 50
  linear_memory_saver_us_per_step        10-node chain with InMemorySaver
  linear_sqlite_{syncnormal,strict}_us_per_step   10-node chain with SqliteSaver (WAL; synchronous NORMAL / FULL)
  interrupt_static_sqlite_{syncnormal,strict}_ms  a -> b -> c, interrupt_before=["b"]: pause + resume
  sqlite_raw_commit_{full,normal}_us     Python sqlite3: one small INSERT + commit on a WAL file
Each sample is the mean of a batch of runs; the median is over samples. Prints one JSON line.
Checkpointed runs use durability="sync" (LANGGRAPH_DURABILITY overrides), which is Bridle's default:
each super-step's checkpoint is written before the next starts. LangGraph's own default is "async".
"""
import json
import operator
import os
import sqlite3
import statistics
import tempfile
import time
from typing import Annotated, TypedDict

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Send

SAMPLES = int(os.environ.get("ANCHOR_SAMPLES", "15"))
BATCH = int(os.environ.get("ANCHOR_BATCH", "100"))  # in-memory shapes (Bridle: 200)
DISK_BATCH = int(os.environ.get("ANCHOR_DISK_BATCH", "10"))  # checkpointed shapes (Bridle: 10)
DURABILITY = os.environ.get("LANGGRAPH_DURABILITY", "sync")
LOOP_ITERATIONS = 50


class Counter(TypedDict, total=False):
    count: int
    results: Annotated[list, operator.add]


def inc(s):
    return {"count": s.get("count", 0) + 1}


def chain(n, **compile_args):
    b = StateGraph(Counter)
    for i in range(n):
        b.add_node(f"n{i}", inc)
        b.add_edge(f"n{i}", f"n{i + 1}" if i + 1 < n else END)
    b.add_edge(START, "n0")
    return b.compile(**compile_args)


def fanout():
    b = StateGraph(Counter)
    b.add_node("dispatch", lambda s: {})
    b.add_node("branch", lambda s: {"results": [s["i"]]})
    b.add_node("join", lambda s: {})
    b.add_edge(START, "dispatch")
    b.add_conditional_edges("dispatch", lambda s: [Send("branch", {"i": i}) for i in range(8)], ["branch"])
    b.add_edge("branch", "join")
    b.add_edge("join", END)
    return b.compile()


def looping():
    b = StateGraph(Counter)
    b.add_node("step", inc)
    b.add_edge(START, "step")
    b.add_conditional_edges("step", lambda s: "step" if s["count"] < LOOP_ITERATIONS else END, ["step", END])
    return b.compile()


def pausing(saver):
    b = StateGraph(Counter)
    for name in "abc":
        b.add_node(name, inc)
    b.add_edge(START, "a")
    b.add_edge("a", "b")
    b.add_edge("b", "c")
    b.add_edge("c", END)
    return b.compile(checkpointer=saver, interrupt_before=["b"])


_thread = 0


def fresh_config():
    global _thread
    _thread += 1
    return {"configurable": {"thread_id": f"bench-{_thread}"}, "recursion_limit": 1000}


def sample(batch, run):
    """SAMPLES means over `batch` runs each, after one warm-up batch; seconds per run."""
    for _ in range(batch):
        run()
    out = []
    for _ in range(SAMPLES):
        started = time.perf_counter()
        for _ in range(batch):
            run()
        out.append((time.perf_counter() - started) / batch)
    return out


def measure(values, unit):
    values = [round(v, 3) for v in values]
    return {"median": round(statistics.median(values), 3), "samples": values, "unit": unit}


def us(seconds, per=1.0):
    return measure([s * 1e6 / per for s in seconds], "us")


def ms(seconds):
    return measure([s * 1e3 for s in seconds], "ms")


def open_sqlite(path, synchronous):
    # SqliteSaver wraps a plain sqlite3 connection; durability is set on that connection.
    conn = sqlite3.connect(path, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(f"PRAGMA synchronous={synchronous}")
    return conn


def raw_commits(path, synchronous):
    conn = open_sqlite(path, synchronous)
    conn.execute("CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, body TEXT NOT NULL)")
    conn.commit()

    def run():
        conn.execute("INSERT INTO t (body) VALUES ('{\"count\":1}')")
        conn.commit()

    # Bridle: samples + 1 rounds of disk_batch * 5 commits, the first discarded.
    out = sample(DISK_BATCH * 5, run)
    conn.close()
    return out


def main():
    r = {}
    chain10, single, fan, lp = chain(10), chain(1), fanout(), looping()
    invoke = lambda g, **kw: lambda: g.invoke({"count": 0}, fresh_config(), **kw)

    s = sample(BATCH, invoke(chain10))
    r["linear_invoke_us_per_run"] = us(s)
    r["linear_invoke_us_per_step"] = us(s, 10)
    r["single_node_invoke_us_per_run"] = us(sample(BATCH, invoke(single)))
    r["fanout_send_us_per_run"] = us(sample(BATCH, invoke(fan)))
    r["loop_us_per_iteration"] = us(sample(BATCH // 10 + 1, invoke(lp)), LOOP_ITERATIONS)

    saved = chain(10, checkpointer=InMemorySaver())
    r["linear_memory_saver_us_per_step"] = us(sample(BATCH, invoke(saved, durability=DURABILITY)), 10)

    with tempfile.TemporaryDirectory() as d:
        for sync, step_key, pause_key in [
            ("NORMAL", "linear_sqlite_syncnormal_us_per_step", "interrupt_static_sqlite_syncnormal_ms"),
            ("FULL", "linear_sqlite_strict_us_per_step", "interrupt_static_sqlite_strict_ms"),
        ]:
            conn = open_sqlite(os.path.join(d, f"bench-{sync}.db"), sync)
            saver = SqliteSaver(conn)
            saver.setup()
            g = chain(10, checkpointer=saver)
            r[step_key] = us(sample(DISK_BATCH, invoke(g, durability=DURABILITY)), 10)
            p = pausing(saver)

            def pause_resume():
                config = fresh_config()
                paused = p.invoke({"count": 0}, config, durability=DURABILITY)
                assert paused["count"] == 1, "did not pause before b"
                assert p.invoke(None, config, durability=DURABILITY)["count"] == 3

            r[pause_key] = ms(sample(DISK_BATCH, pause_resume))
            conn.close()
        r["sqlite_raw_commit_full_us"] = us(raw_commits(os.path.join(d, "raw-full.db"), "FULL"))
        r["sqlite_raw_commit_normal_us"] = us(raw_commits(os.path.join(d, "raw-normal.db"), "NORMAL"))
    print(json.dumps({"results": dict(sorted(r.items()))}))


if __name__ == "__main__":
    main()
