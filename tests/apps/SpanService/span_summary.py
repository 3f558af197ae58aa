#!/usr/bin/env python3
"""span_summary.py: checks a SpanService span file (SPANSERVICE_SPANS) and summarises thread hops.

usage: span_summary.py SPANS.jsonl   -> prints one JSON summary line; exit 1 if a structural check fails.
"""
import json
import sys
from collections import Counter, defaultdict

# Expected span tree per request path: child name -> parent name ("ROOT" = the ASP.NET request span).
EXPECTED = {
    "/work/a": {"compute-a": "ROOT"},
    "/work/b": {"outer-b": "ROOT", "inner-b": "outer-b"},
    "/work/labels": {},
}


def main(path):
    spans, bad_lines = [], 0
    with open(path, encoding="utf-8") as f:
        for line in f:
            try:
                spans.append(json.loads(line))
            except ValueError:
                bad_lines += 1
    by_trace = defaultdict(list)
    for s in spans:
        by_trace[s["trace_id"]].append(s)

    problems = Counter()
    requests = Counter()
    hops = Counter()      # span name -> spans whose work segments ran on more than one thread
    segs = Counter()      # span name -> spans with more than one work segment
    tids = set()
    labels = Counter()
    for trace, group in by_trace.items():
        roots = [s for s in group if s["parent_span_id"] is None]
        if len(roots) != 1:
            problems["trace_without_single_root"] += 1
            continue
        root = roots[0]
        ids = {s["span_id"]: s for s in group}
        path = root.get("url_path", "?")
        requests[path] += 1
        want = EXPECTED.get(path)
        names = {s["name"]: s for s in group if s is not root}
        if want is not None and set(names) != set(want):
            problems["unexpected_span_set"] += 1
        for s in group:
            if s["local_root_span_id"] != root["span_id"]:
                problems["wrong_local_root"] += 1
            if s["local_root_name"] != root["name"]:
                problems["local_root_name_differs"] += 1
            if not (s["start_unix_ns"] <= s["end_unix_ns"] and 0 < s["start_mono_ns"] <= s["end_mono_ns"]):
                problems["bad_times"] += 1
            if s is not root:
                parent = ids.get(s["parent_span_id"])
                if parent is None:
                    problems["parent_missing"] += 1
                else:
                    if want is not None and s["name"] in want:
                        expect = root if want[s["name"]] == "ROOT" else names.get(want[s["name"]])
                        if parent is not expect:
                            problems["wrong_parent"] += 1
                    if not (parent["start_mono_ns"] <= s["start_mono_ns"] and s["end_mono_ns"] <= parent["end_mono_ns"]):
                        problems["child_outside_parent"] += 1
            t = s["tids"]
            tids.update(t)
            key = s["name"] if s is not root else "ROOT " + path
            if len(t) > 1:
                segs[key] += 1
            if len(set(t)) > 1:
                hops[key] += 1
        for k, v in root["labels"].items():
            labels[f"{k}={v}"] += 1
    summary = {
        "spans": len(spans),
        "bad_lines": bad_lines,
        "traces": len(by_trace),
        "requests": dict(requests),
        "multi_segment_spans": dict(segs),
        "spans_that_changed_thread": dict(hops),
        "distinct_tids": len(tids),
        "root_labels": dict(labels),
        "problems": dict(problems),
    }
    print(json.dumps(summary, sort_keys=True))
    return 1 if problems or bad_lines else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1]))
