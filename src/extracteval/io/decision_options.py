"""The baseline-vs-candidate decision as the command line asks for it: its options, the decision
from per-record count matrices, and the `records.jsonl` file of those counts that
`compare-models` reads back."""

from __future__ import annotations

import argparse
import json
from extracteval.core import strict_json
from pathlib import Path
from typing import Any

__all__ = ["default_metric", "add_decision_arguments", "make_decision", "write_records", "read_records"]


def default_metric(task: str) -> str:
    """The decision's default metric: the task's primary metric (its name without the task prefix,
    `field_f1` for structured, `call_accuracy` for toolcalls), as `compare` and the leaderboard use."""
    from extracteval.tasks import ranking_spec

    return ranking_spec(task).primary.split("/", 1)[1]


def add_decision_arguments(p: argparse.ArgumentParser, *, required: bool = False) -> None:
    p.add_argument("--baseline", required=required, metavar="MODEL", help="the reference model (e.g. the hosted LLM)")
    p.add_argument("--candidate", required=required, metavar="MODEL", help="the model under decision (e.g. the local SLM)")
    p.add_argument("--decision-metric", "--metric", dest="decision_metric", metavar="NAME",
                   help="metric of the gap (default: the task's primary metric, field_f1 for structured, call_accuracy for toolcalls)")
    p.add_argument("--recommend-threshold", type=float, default=0.15, metavar="X", help="gap above which fine-tuning is recommended (default 0.15)")
    p.add_argument("--moderate-threshold", type=float, default=0.05, metavar="X", help="gap from which the difference is moderate (default 0.05)")
    from extracteval.io.common_options import add_bootstrap_arguments

    add_bootstrap_arguments(p)


def make_decision(task: str, columns: tuple[str, ...], matrices: dict[str, Any], args: argparse.Namespace, *, zero_division: float = 0.0) -> Any:
    """The `Decision` for args.baseline vs args.candidate from per-record count matrices."""
    from extracteval.core.decision import DecisionThresholds, decide
    from extracteval.errors import InputError
    from extracteval.tasks import TASKS, present

    count_map = present(task, "metrics") if task in TASKS else None
    if not hasattr(count_map, "count_metrics"):  # the decision reads named counts by the task's own map
        raise InputError(f"the decision needs the per-record counts of a structured or toolcalls result (`extracteval score structured|toolcalls "
                         f"… --output DIR`); this result's task is {task!r}.")

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
        count_map=count_map,
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
                f.write(strict_json.dumps(row, ensure_ascii=False) + "\n")


def read_records(folder: Path) -> tuple[str, tuple[str, ...], dict[str, Any], float]:
    import numpy as np

    from extracteval.io.id_order import natural_key
    from extracteval.errors import InputError
    from extracteval.io.config import load_mapping
    from extracteval.io.json_text import read_record_file

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
    for line, rec in read_record_file(records_path):
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
