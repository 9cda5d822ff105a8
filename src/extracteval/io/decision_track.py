"""What the `structured` and `toolcalls` tasks share on their way in and out: the options both
commands take (`add_track_arguments`), the similarity / judge backends they name
(`extended_backends`), the options a streamed run refuses, each model's outputs read by id
(`load_predictions`), the document of a streamed run (`track_document`) and the id warnings."""

from __future__ import annotations

import argparse
from typing import Any

from extracteval.io.common_options import add_result_arguments

__all__ = ["add_track_arguments", "add_extended_arguments", "extended_backends", "load_predictions", "refuse_in_memory_options",
           "track_document", "id_warnings"]


def add_track_arguments(p: argparse.ArgumentParser) -> None:
    """The options `score structured` and `score toolcalls` share: zero division, the extended
    metrics, progress, the baseline-vs-candidate decision, output and scale."""
    from extracteval.io.decision_options import add_decision_arguments
    from extracteval.report.live_progress import add_progress_argument

    p.add_argument("--zero-division", type=float, default=0.0, metavar="X", help="value of an undefined ratio (default 0.0)")
    add_extended_arguments(p)
    add_progress_argument(p)
    add_decision_arguments(p)
    add_result_arguments(p, writes="result.json and records.jsonl (per-record counts)", safe_csv=False)


def add_extended_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--semantic-similarity", action="store_true", help="also score with the `embedding` similarity backend (pass ≥ threshold)")
    p.add_argument("--llm-judge", action="store_true", help="also score with the `llm_judge` backend (1–7 rubric / 7, pass ≥ threshold)")
    p.add_argument("--similarity-option", action="append", default=[], metavar="KEY=VALUE", help="option passed to the similarity backends (repeatable)")
    p.add_argument("--pass-threshold", type=float, default=0.85, metavar="X", help="pass mark of the extended metrics (default 0.85)")


def extended_backends(args: argparse.Namespace) -> dict[str, Any]:
    """`--semantic-similarity` / `--llm-judge` → {metric name: backend}, resolved by name."""
    from extracteval.core.similarity import get_similarity
    from extracteval.errors import InputError

    options: dict[str, str] = {}
    for item in args.similarity_option or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise InputError(f"--similarity-option {item!r}: expected KEY=VALUE.")
        options[key.strip()] = value
    out = {}
    if args.semantic_similarity:
        out["semantic_similarity"] = get_similarity("embedding", **options)
    if args.llm_judge:
        out["judge_score"] = get_similarity("llm_judge", **options)
    return out


def load_predictions(specs: list[Any], what: str = "output", *, id_key: str = "id") -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    from extracteval.io.config import model_files
    from extracteval.io.record_keys import OUTPUT_KEYS
    from extracteval.io.keyed_chunks import load_records

    files = model_files(specs)
    return ({name: load_records(path, OUTPUT_KEYS, what, id_key=id_key) for name, path in files.items()},
            {name: str(path) for name, path in files.items()})


def refuse_in_memory_options(args: argparse.Namespace) -> None:
    """Streamed runs (--chunk-size/--workers/--engine spark) refuse the options that need every
    record in memory."""
    from extracteval.errors import InputError

    given = [flag for flag, on in (("--semantic-similarity", args.semantic_similarity), ("--llm-judge", args.llm_judge),
                                   ("--baseline/--candidate", bool(args.baseline or args.candidate))) if on]
    if given:
        raise InputError(f"{given[0]} needs every record in memory; drop --chunk-size/--workers/--engine spark to use it (documentation: Scale).")


def id_warnings(doc: dict[str, Any]) -> list[str]:
    out = []
    for name in doc["ranking"]:
        m = doc["models"][name]
        if m.get("missing_ids"):
            out.append(f"warning: {name} has no output for {len(m['missing_ids'])} record(s) (counted invalid), e.g. {', '.join(m['missing_ids'][:3])}")
        if m.get("extra_ids"):
            out.append(f"warning: {name} has {len(m['extra_ids'])} output(s) for ids not in the truth (ignored), e.g. {', '.join(m['extra_ids'][:3])}")
    return out


def track_document(result: Any, inputs: dict[str, Any], *, counts: Any) -> dict[str, Any]:
    """The `--json` document of a streamed run (as the task makes it in memory); `counts`: the
    dataclass of the task's per-record counts, whose fields are the document's `count_columns`."""
    from dataclasses import fields

    doc = result.to_dict()
    doc["inputs"] = inputs
    doc["count_columns"] = [f.name for f in fields(counts)] if result.ranking else []
    return doc
