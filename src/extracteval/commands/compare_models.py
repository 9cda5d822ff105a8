"""`extracteval compare-models`: baseline vs candidate decision on a scored result.

Reads an output folder written by `extracteval score structured|toolcalls … --output DIR`
(`result.json` + `records.jsonl`, the per-record counts), computes the gap
baseline − candidate on a metric, the verdict and a paired-bootstrap interval of the gap.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

HELP = "baseline vs candidate: metric gap, fine-tuning verdict and its bootstrap interval"
DESCRIPTION = """\
Decide whether a candidate model (e.g. a small local model) needs fine-tuning to match a
baseline (e.g. a large hosted model): gap = baseline − candidate on a metric (default: the
task's primary metric, field_f1 for structured, call_accuracy for toolcalls);
gap > 0.15 → "fine-tuning recommended", 0.05–0.15 → "moderate", < 0.05 → "minimal"
(thresholds configurable), with the paired-bootstrap 95% interval of the gap. The verdict is
settled when both ends of the interval fall in the gap's band; otherwise it reads "leaning …
(not settled: …)", and fine-tuning is recommended only when the verdict is settled.

The input is an output folder of `extracteval score structured|toolcalls … --output DIR`.
The same decision is available directly with `--baseline/--candidate` on those commands.

example:
  extracteval score toolcalls --truth calls.jsonl --predictions llm=llm.jsonl \\
      --predictions slm=slm.jsonl --output out/
  extracteval compare-models --result out/ --baseline llm --candidate slm --metric call_accuracy
"""



def default_metric(task: str) -> str:
    """The decision's default metric: the task's primary metric (its name without the task prefix,
    `field_f1` for structured, `call_accuracy` for toolcalls), as `compare` and the leaderboard use."""
    from extracteval.core.ranking import ranking_spec

    return ranking_spec(task).primary.split("/", 1)[1]


def add_decision_arguments(p: argparse.ArgumentParser, *, required: bool = False) -> None:
    p.add_argument("--baseline", required=required, metavar="MODEL", help="the reference model (e.g. the hosted LLM)")
    p.add_argument("--candidate", required=required, metavar="MODEL", help="the model under decision (e.g. the local SLM)")
    p.add_argument("--decision-metric", "--metric", dest="decision_metric", metavar="NAME",
                   help="metric of the gap (default: the task's primary metric, field_f1 for structured, call_accuracy for toolcalls)")
    p.add_argument("--recommend-threshold", type=float, default=0.15, metavar="X", help="gap above which fine-tuning is recommended (default 0.15)")
    p.add_argument("--moderate-threshold", type=float, default=0.05, metavar="X", help="gap from which the difference is moderate (default 0.05)")
    p.add_argument("--resamples", type=int, default=1000, metavar="N", help="bootstrap resamples (default 1000)")
    p.add_argument("--seed", type=int, default=0, metavar="N", help="bootstrap seed (default 0)")


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--result", required=True, metavar="DIR", help="output folder of `extracteval score … --output DIR`")
    add_decision_arguments(p, required=True)
    p.add_argument("--json", action="store_true", help="print the decision as one JSON document")


def make_decision(task: str, columns: tuple[str, ...], matrices: dict[str, Any], args: argparse.Namespace, *, zero_division: float = 0.0) -> Any:
    """The `Decision` for args.baseline vs args.candidate from per-record count matrices."""
    from extracteval.core.decision import DecisionThresholds, decide
    from extracteval.errors import InputError

    for role in ("baseline", "candidate"):
        name = getattr(args, role)
        if name not in matrices:
            raise InputError(f"--{role} {name!r}: no such model in the result; models are {', '.join(sorted(matrices))}.")
    if args.baseline == args.candidate:
        raise InputError(f"--baseline and --candidate are the same model ({args.baseline!r}); pick two different models.")
    metric = args.decision_metric or default_metric(task)
    return decide(
        columns,
        matrices[args.baseline],
        matrices[args.candidate],
        metric=metric,
        baseline=args.baseline,
        candidate=args.candidate,
        thresholds=DecisionThresholds(recommend=args.recommend_threshold, moderate=args.moderate_threshold),
        resamples=args.resamples,
        seed=args.seed,
        zero_division=zero_division,
    )


def write_records(out: Path, columns: tuple[str, ...], matrices: dict[str, Any], ids: list[str], extra: dict[str, list[dict[str, Any]]] | None = None) -> None:
    """records.jsonl: one line per (model, record) with its counts — what compare-models reads."""
    with (out / "records.jsonl").open("w", encoding="utf-8") as f:
        for m in sorted(matrices):
            mat = matrices[m]
            for k, rid in enumerate(ids):
                row: dict[str, Any] = {"model": m, "id": rid}
                row.update({c: int(v) for c, v in zip(columns, mat[k])})
                if extra and m in extra:
                    row.update(extra[m][k])
                f.write(json.dumps(row, ensure_ascii=False) + "\n")


def read_records(folder: Path) -> tuple[str, tuple[str, ...], dict[str, Any], float]:
    import numpy as np

    from extracteval.tasks.structured.semantics import natural_key
    from extracteval.errors import InputError
    from extracteval.io.config import load_mapping
    from extracteval.tasks.toolcalls.inputs import read_json_records

    result_path, records_path = folder / "result.json", folder / "records.jsonl"
    for p in (result_path, records_path):
        if not p.is_file():
            raise InputError(f"{p}: not found; --result needs a folder written by `extracteval score structured|toolcalls … --output DIR`.")
    doc = load_mapping(result_path)
    task = str(doc.get("task"))
    columns = tuple(doc.get("count_columns") or ())
    if not columns:
        raise InputError(f"{result_path}: no \"count_columns\"; was it written by `extracteval score structured|toolcalls --output`?")
    rows: dict[str, list[tuple[str, list[int]]]] = {}
    for line, rec in read_json_records(records_path):
        if not isinstance(rec, dict) or "model" not in rec or "id" not in rec:
            raise InputError(f"{records_path}: line {line}: expected an object with \"model\", \"id\" and the counts {', '.join(columns)}.")
        try:
            values = [int(rec[c]) for c in columns]
        except (KeyError, TypeError, ValueError):
            raise InputError(f"{records_path}: line {line}: expected integer counts {', '.join(columns)}, but found {json.dumps(rec)[:120]}.") from None
        rows.setdefault(str(rec["model"]), []).append((str(rec["id"]), values))
    matrices = {}
    ids_ref = None
    for m, r in rows.items():
        r.sort(key=lambda t: natural_key(t[0]))
        ids = [t[0] for t in r]
        if ids_ref is None:
            ids_ref = ids
        elif ids != ids_ref:
            raise InputError(f"{records_path}: model {m!r} has other record ids than the first model; a paired comparison needs the same records.")
        matrices[m] = np.array([t[1] for t in r], dtype=np.int64)
    zero_division = float((doc.get("config") or {}).get("zero_division", 0.0) or 0.0)
    return task, columns, matrices, zero_division


def render_decision(d: Any) -> str:
    """The decision block of the terminal and the HTML report, from a decision document
    (`Decision.to_dict()`, `RunComparison.to_dict()` or the `decision` of a `--json` document):
    the same words wherever the decision was made."""
    from extracteval.core.decision import decision_sentence, threshold_text

    lines = [
        f"Decision ({d['metric']}): baseline {d['baseline']} vs candidate {d['candidate']}",
        f"  {decision_sentence(d)}",
        f"  {threshold_text(d['thresholds'])}",
    ]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    task, columns, matrices, zero_division = read_records(Path(args.result))
    d = make_decision(task, columns, matrices, args, zero_division=zero_division)
    if args.json:
        json.dump({"task": task, "decision": d.to_dict()}, sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        print(render_decision(d.to_dict()))
    return 0


def run_experiment(folder: Path, spec: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """An experiment of task `structured+toolcalls`: both tracks (JSON generation and tool calls), each with its decision.

    `spec["tracks"]` maps `structured` / `toolcalls` to {truth, predictions, …}; `spec["decision"]`
    (baseline, candidate, optional metric per track) applies to both.
    """
    from extracteval.errors import InputError
    from extracteval.tasks import task_module

    tracks = spec.get("tracks")
    if not isinstance(tracks, dict) or not tracks:
        raise InputError(f"{folder}/experiment.yaml: task structured+toolcalls needs `tracks:` with `structured` and/or `toolcalls` entries.")
    docs: dict[str, Any] = {"task": "structured+toolcalls", "tracks": {}}
    texts = []
    for track in ("structured", "toolcalls"):
        if track not in tracks:
            continue
        sub = dict(tracks[track])
        dec = dict(spec.get("decision") or {})
        metrics = dec.pop("metrics", {}) or {}
        if track in metrics:
            dec["metric"] = metrics[track]
        sub.setdefault("decision", dec)
        module = task_module(track, "command")
        doc, text = module.run_experiment(folder, sub)
        docs["tracks"][track] = doc
        texts.append(f"-- {track} track\n{text}")
    return docs, "\n\n".join(texts)
