"""Benchmark: 100k structured records and 100k tool-call records, each against a naive loop.

Measured in the same run against a naive implementation of the same metrics (written the obvious way:
per-record `json.loads`, recursive flattening with `json.dumps` leaves, calls compared in order).
Prints records/s (wall and CPU), the ratio to the naive version and peak memory (tracemalloc, on a
10k-record run, so the throughput runs are not slowed by tracing). Each side is timed three times
in turns on fresh data, and keeps its fastest call (see `_timing.py`). Also times the BFCL checker
on the reference data when ../shared/data is present.
"""

from __future__ import annotations

import ast
import json
import os
import random
import re
import resource
from pathlib import Path

from _timing import best_of, peak_traced_mib, spread, timed

N = int(os.environ.get("BENCH_TOOLCALLS_N", "100000"))
CITIES = ["Paris", "Oslo", "Lagos", "Lima", "Pune", "Osaka"]


def structured_data(n: int, seed: int = 0) -> tuple[dict, dict]:
    rng = random.Random(seed)
    truth, out = {}, {}
    for i in range(n):
        d = {"customer": {"name": f"name {i % 997}", "city": rng.choice(CITIES), "vip": rng.random() < 0.3}, "order_id": f"ORD-{i}",
             "items": [{"sku": f"S{rng.randint(0, 99)}", "qty": rng.randint(1, 5), "price": round(rng.uniform(1, 99), 2)} for _ in range(rng.randint(1, 3))]}
        truth[str(i)] = d
        p = json.loads(json.dumps(d))
        r = rng.random()
        if r < 0.15:
            p["items"][0]["qty"] += 1
        elif r < 0.25:
            p["customer"].pop("vip")
        s = json.dumps(p)
        r = rng.random()
        out[str(i)] = s if r < 0.8 else (f"```json\n{s}\n```" if r < 0.9 else s[: rng.randint(5, 40)])
    return truth, out


def toolcall_data(n: int, seed: int = 1, *, distinct: bool = False) -> tuple[dict, dict]:
    """`distinct=True` makes every reference and output unique (the city carries the record
    number), so no per-distinct-value cache can help: the worst case for extracteval."""
    rng = random.Random(seed)
    truth, out = {}, {}
    for i in range(n):
        city = rng.choice(CITIES)
        calls = [{"name": "get_weather", "arguments": {"city": f"{city} {i}" if distinct else city, "days": rng.randint(1, 7)}}]
        if i % 4 == 0:
            calls.append({"name": "get_time", "arguments": {"tz": rng.choice(["CET", "UTC", "JST"])}})
        truth[str(i)] = calls
        pred = json.loads(json.dumps(calls))
        if rng.random() < 0.15:
            pred[0]["arguments"]["days"] += 1
        if len(pred) > 1 and rng.random() < 0.5:
            pred.reverse()
        r = rng.random()
        if r < 0.5:
            out[str(i)] = json.dumps({"tool_calls": [{"type": "function", "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])}} for c in pred]})
        elif r < 0.75:
            out[str(i)] = json.dumps(pred if len(pred) > 1 else pred[0])
        elif r < 0.95:
            out[str(i)] = "[" + ", ".join(f"{c['name']}(" + ", ".join(f"{k}={v!r}" for k, v in c["arguments"].items()) + ")" for c in pred) + "]"
        else:
            out[str(i)] = '{"name": "get_weather", "arguments": "{\\"city\\": '
    return truth, out


# ---------------------------------------------------------------------------------------------
# naive implementations (what one writes from the seed text)


def _naive_flatten(obj, prefix=""):
    out = {}
    if isinstance(obj, dict):
        for k, v in obj.items():
            out.update(_naive_flatten(v, f"{prefix}.{k}" if prefix else k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out.update(_naive_flatten(v, f"{prefix}[{i}]"))
    else:
        out[prefix] = json.dumps(obj)
    return out


def _naive_parse(s):
    try:
        return json.loads(s)
    except ValueError:
        m = re.search(r"```(?:json)?\s*(.*?)```", s, re.S)
        if m:
            try:
                return json.loads(m.group(1))
            except ValueError:
                return None
    return None


def naive_structured(truth: dict, out: dict) -> dict:
    valid = exact = tp = fp = fn = 0
    for i, ref in truth.items():
        pred = _naive_parse(out[i])
        rf = _naive_flatten(ref)
        if pred is None:
            fn += len(rf)
            continue
        valid += 1
        exact += json.dumps(pred, sort_keys=True) == json.dumps(ref, sort_keys=True)
        pf = _naive_flatten(pred)
        for k, v in rf.items():
            if k not in pf:
                fn += 1
            elif pf[k] == v:
                tp += 1
            else:
                fp += 1
                fn += 1
        fp += len(set(pf) - set(rf))
    return {"valid": valid, "exact": exact, "tp": tp, "fp": fp, "fn": fn}


def _naive_calls(s):
    pred = _naive_parse(s)
    if pred is None:
        try:  # Python call syntax, read with ast.literal_eval on each keyword value
            tree = ast.parse(s.strip(), mode="eval").body
            elts = tree.elts if isinstance(tree, ast.List) else [tree]
            return [{"name": ast.unparse(e.func), "arguments": {k.arg: ast.literal_eval(k.value) for k in e.keywords}} for e in elts]
        except (SyntaxError, ValueError, AttributeError):
            return None
    if isinstance(pred, dict) and "tool_calls" in pred:
        try:
            return [{"name": c["function"]["name"], "arguments": json.loads(c["function"]["arguments"])} for c in pred["tool_calls"]]
        except (ValueError, KeyError, TypeError):
            return None
    pred = pred if isinstance(pred, list) else [pred]
    out = []
    for c in pred:
        args = c.get("arguments") if isinstance(c, dict) else None
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except ValueError:
                return None
        if not isinstance(args, dict):
            return None
        out.append({"name": c.get("name"), "arguments": args})
    return out


def naive_toolcalls(truth: dict, out: dict) -> dict:
    """The same metrics computed the obvious way: calls compared in order (no optimal pairing)."""
    valid = correct = names = exact = tp = fp = fn = 0
    for i, ref in truth.items():
        pred = _naive_calls(out[i])
        if pred is None:
            fn += sum(len(_naive_flatten(r["arguments"])) for r in ref)
            continue
        valid += 1
        all_ok = len(pred) == len(ref)
        for k, r in enumerate(ref):
            rf = _naive_flatten(r["arguments"])
            p = pred[k] if k < len(pred) else None
            if p is None or p["name"] != r["name"]:
                fn += len(rf)
                all_ok = False
                continue
            names += 1
            pf = _naive_flatten(p["arguments"])
            t = sum(1 for key, v in rf.items() if pf.get(key) == v)
            tp, fp, fn = tp + t, fp + len(pf) - t, fn + len(rf) - t
            exact += pf == rf
            all_ok = all_ok and pf == rf
        correct += all_ok
    return {"valid": valid, "correct": correct, "names": names, "exact": exact, "tp": tp, "fp": fp, "fn": fn}


# ---------------------------------------------------------------------------------------------


def main() -> None:
    from extracteval.tasks.structured.semantics import score_structured
    from extracteval.tasks.toolcalls.semantics import score_toolcalls

    print(f"records per task: {N:,}; CPU seconds of each side's three calls after its rate, the fastest one counted")

    def line(label: str, fast, slow) -> None:
        print(f"{label:<13}extracteval {N / fast.wall:>9,.0f} rec/s wall, {N / fast.cpu:>9,.0f} rec/s CPU ({spread(fast)})   "
              f"naive {N / slow.wall:>9,.0f} rec/s wall, {N / slow.cpu:>9,.0f} rec/s CPU ({spread(slow)})   "
              f"speed-up (CPU) {slow.cpu / fast.cpu:.2f}x")

    def gc_line(fast, slow) -> None:
        # the collector's own time inside each fastest call (each starts after a full collection)
        print(f"             garbage collection inside the timed calls: extracteval {fast.gc_cpu:.2f} s, naive {slow.gc_cpu:.2f} s CPU")

    fast, slow = best_of([(lambda: structured_data(N), lambda t, o: score_structured(t, {"m": o})),
                          (lambda: structured_data(N), naive_structured)])
    line("structured", fast, slow)
    m = fast.result.models["m"].metrics
    print(f"             json_valid_rate {m['json_valid_rate']:.3f} exact_match_rate {m['exact_match_rate']:.3f} field_f1 {m['field_f1']:.3f}")
    small_t, small_o = structured_data(10_000)
    print(f"             peak traced memory, 10k records: {peak_traced_mib(lambda: score_structured(small_t, {'m': small_o})):.1f} MiB")

    fast, slow = best_of([(lambda: toolcall_data(N), lambda t, o: score_toolcalls(t, {"m": o})),
                          (lambda: toolcall_data(N), naive_toolcalls)])
    line("toolcalls", fast, slow)
    gc_line(fast, slow)
    m = fast.result.models["m"].metrics
    t_truth, t_out = toolcall_data(N)
    print(f"             valid_call_rate {m['valid_call_rate']:.3f} call_accuracy {m['call_accuracy']:.3f} args_f1 {m['args_f1']:.3f}"
          "  (naive: calls compared in order, no optimal pairing)")
    print(f"             {len(set(t_out.values())):,} distinct outputs, {len({repr(v) for v in t_truth.values()}):,} distinct references "
          "(each parsed/read once, and each output scored once per reference)")
    small_t, small_o = toolcall_data(10_000)
    print(f"             peak traced memory, 10k records: {peak_traced_mib(lambda: score_toolcalls(small_t, {'m': small_o})):.1f} MiB")
    # worst case: no output or reference repeats, so the per-distinct-value caches never hit
    fast, slow = best_of([(lambda: toolcall_data(N, distinct=True), lambda t, o: score_toolcalls(t, {"m": o})),
                          (lambda: toolcall_data(N, distinct=True), naive_toolcalls)])
    line("all-distinct", fast, slow)
    gc_line(fast, slow)

    shared = Path(os.environ.get("EXTRACTEVAL_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data")) / "toolcalls" / "bfcl_v4"
    if shared.is_dir():
        from extracteval.tasks.toolcalls.bfcl import BfclEntry, score_bfcl
        from extracteval.tasks.toolcalls.inputs import load_bfcl_answers, load_bfcl_questions, load_bfcl_results

        entries, results = [], {}
        for cat in ("simple_python", "multiple", "parallel", "parallel_multiple"):
            q = load_bfcl_questions(shared / f"BFCL_v4_{cat}.json")
            a = load_bfcl_answers(shared / "possible_answer" / f"BFCL_v4_{cat}.json", q)
            entries += [BfclEntry(id=i, category=q[i].category, functions=q[i].functions, answers=a[i]) for i in q]
            results.update(load_bfcl_results(shared / "third_party_submission_glyphh-ada-1.1" / "result" / f"BFCL_v4_{cat}_result.json"))
        score, wall, _, _ = timed(lambda: score_bfcl(entries, results))
        print(f"bfcl        {len(entries)} v4 entries checked in {1000 * wall:.1f} ms ({len(entries) / wall:,.0f} entries/s), accuracy {score.call_accuracy:.3f}")
    print(f"process peak RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB; load average {os.getloadavg()[0]:.1f} "
          "(wall-clock rates drop on a shared machine; CPU rates are the comparable figure)")


if __name__ == "__main__":
    main()
