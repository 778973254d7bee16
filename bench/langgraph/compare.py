"""Compares `bridle bench runtime --json` with anchor.py's output, key by key.

Prints key, Bridle median, LangGraph median and LangGraph/Bridle; for the strict (synchronous=FULL)
SQLite shapes also what each costs in raw FULL commits measured by the same tool on the same disk
(per step for the linear chain, per pause + resume for the interrupt).
Usage: compare.py BRIDLE.json LANGGRAPH.json [COMBINED_OUT.json]
"""
import json
import platform
import sys
from importlib.metadata import version

RAW_FULL = "sqlite_raw_commit_full_us"
STRICT = {"linear_sqlite_strict_us_per_step": 1.0, "interrupt_static_sqlite_strict_ms": 1000.0}


def load(path):
    with open(path) as f:
        return json.load(f)["results"]


def in_full_commits(results, key):
    raw = results.get(RAW_FULL, {}).get("median")
    return results[key]["median"] * STRICT[key] / raw if raw else None


def main():
    bridle, graph = load(sys.argv[1]), load(sys.argv[2])
    out = sys.argv[3] if len(sys.argv) > 3 else ""
    cols = ("key", "unit", "Bridle", "LangGraph", "LG/Bridle", "Bridle FULL commits", "LG FULL commits")
    print(f"{cols[0]:<40} {cols[1]:>4} {cols[2]:>11} {cols[3]:>11} {cols[4]:>10} {cols[5]:>20} {cols[6]:>16}")
    ratios = {}
    for key in sorted(set(bridle) | set(graph)):
        b, g = bridle.get(key, {}).get("median"), graph.get(key, {}).get("median")
        unit = (bridle.get(key) or graph.get(key))["unit"]
        ratio = g / b if b and g is not None else None
        ratios[key] = None if ratio is None else round(ratio, 2)
        fmt = lambda x, spec: "-" if x is None else format(x, spec)
        extra = ""
        if key in STRICT:
            extra = f" {fmt(in_full_commits(bridle, key), '20.2f')} {fmt(in_full_commits(graph, key), '16.2f')}"
        print(f"{key:<40} {unit:>4} {fmt(b, '11.3f')} {fmt(g, '11.3f')} {fmt(ratio, '10.2f')}{extra}")
    versions = {p: version(p) for p in ("langgraph", "langgraph-checkpoint", "langgraph-checkpoint-sqlite")}
    versions["python"] = platform.python_version()
    print("versions: " + ", ".join(f"{k} {v}" for k, v in versions.items()))
    if out:
        with open(out, "w") as f:
            json.dump({"bridle": bridle, "langgraph": graph, "ratio_langgraph_over_bridle": ratios,
                       "versions": versions}, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
