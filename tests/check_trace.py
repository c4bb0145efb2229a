"""Checks a --trace file: valid JSON in the Chrome trace-event format, one track per rank.

usage: check_trace.py FILE RANKS [--phases a,b] [--comm kind,...]
Every event has ph, ts, pid and tid; complete (X) events have dur >= 0; each of the RANKS ranks
is named ("rank r"); on every thread the X events come in time order; every rank has every
--phases name and every --comm kind (each with a group and bytes > 0); each iteration's step
overlaps on every rank (one clock across the ranks) and contains that rank's phases of the step.
Prints one line; exit status 1 on a problem.
"""
import argparse
import json
import sys
from collections import defaultdict


def problems_of(doc, ranks, phases, comm):
    events = doc.get("traceEvents") if isinstance(doc, dict) else None
    if not isinstance(events, list) or not events:
        return ["no traceEvents list"], {}
    problems = []
    for e in events:
        missing = [k for k in ("ph", "ts", "pid", "tid") if k not in e]
        if missing or (e["ph"] == "X" and not e.get("dur", -1) >= 0):
            return [f"event {json.dumps(e)[:200]}: missing {missing or 'dur >= 0'}"], {}
    named = {e["pid"]: e["args"]["name"] for e in events if e.get("name") == "process_name"}
    if named != {r: f"rank {r}" for r in range(ranks)}:
        problems.append(f"rank tracks {sorted(named.items())}, not rank 0..{ranks - 1}")
    slices = [e for e in events if e["ph"] == "X"]
    last = {}
    for e in slices:
        track = (e["pid"], e["tid"])
        if e["ts"] < last.get(track, float("-inf")):
            problems.append(f"rank {e['pid']} thread {e['tid']}: {e['name']} at {e['ts']} us "
                            "before the event ahead of it")
            break
        last[track] = e["ts"]
    names = defaultdict(set)
    for e in slices:
        names[e["pid"]].add(e["name"])
        if e.get("cat") == "comm":
            args = e.get("args", {})
            if (args.get("kind") != e["name"] or not args.get("group")
                    or not args.get("bytes", 0) > 0):
                problems.append(f"rank {e['pid']}: {e['name']} without kind, group or bytes: "
                                f"{args}")
                break
    for r in range(ranks):
        absent = [n for n in phases + comm if n not in names[r]]
        if absent:
            problems.append(f"rank {r} has no {', '.join(absent)}")
    steps = defaultdict(dict)  # iteration -> rank -> (start, end)
    for e in slices:
        if e["name"] == "step":
            steps[e["args"]["iteration"]][e["pid"]] = (e["ts"], e["ts"] + e["dur"])
    for it, spans in sorted(steps.items()):
        if len(spans) != ranks:
            problems.append(f"step {it} on {len(spans)} ranks")
        elif max(s for s, _ in spans.values()) >= min(t for _, t in spans.values()):
            problems.append(f"step {it} does not overlap across the ranks: {spans}")
    for e in slices:  # phases of a step lie inside it (1 us of rounding)
        if e.get("cat") != "phase" or e["name"] in ("step", "evaluation"):
            continue
        inside = [s for s in steps.values() if e["pid"] in s and
                  s[e["pid"]][0] - 1 <= e["ts"] and e["ts"] + e["dur"] <= s[e["pid"]][1] + 1]
        if not inside:
            problems.append(f"rank {e['pid']}: {e['name']} at {e['ts']} us outside every step")
            break
    counts = {"events": len(slices), "steps": len(steps),
              "comm": sum(e.get("cat") == "comm" for e in slices)}
    return problems, counts


def main(argv):
    parser = argparse.ArgumentParser()
    parser.add_argument("file")
    parser.add_argument("ranks", type=int)
    parser.add_argument("--phases", default="forward,backward")
    parser.add_argument("--comm", default="")
    args = parser.parse_args(argv)
    try:
        with open(args.file) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        print(f"{args.file}: not valid JSON ({e})")
        return 1
    split = lambda text: [n for n in text.split(",") if n]  # noqa: E731
    problems, counts = problems_of(doc, args.ranks, split(args.phases), split(args.comm))
    if problems:
        print("; ".join(problems)[:1000])
        return 1
    print(f"{counts['events']} slices ({counts['comm']} communication) over {counts['steps']} "
          f"steps on {args.ranks} rank tracks")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
