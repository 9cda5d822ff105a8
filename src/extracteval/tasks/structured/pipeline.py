"""The `structured` task's scoring pipeline from command-line options: reading the truth and the
models' outputs, the result document (`--json`, `result.json`), the terminal view and the output
folder. The command (`score structured`) and the MLflow adapter both run it."""

from __future__ import annotations

import argparse
from typing import Any

from extracteval.io.decision_track import (  # noqa: F401 - the task's API too
    extended_backends,
    id_warnings,
    load_predictions,
    refuse_in_memory_options,
    track_document,
)
from extracteval.io.record_keys import STRUCTURED_TRUTH_KEYS as TRUTH_KEYS


def load_truth(path: Any, *, id_key: str = "id") -> dict[str, Any]:
    from extracteval.tasks.structured.alignment import reference_value
    from extracteval.io.keyed_chunks import load_records

    return {rid: reference_value(v, f"{path}: id {rid}") for rid, v in load_records(path, TRUTH_KEYS, "reference", id_key=id_key).items()}


def streaming_config(args: argparse.Namespace) -> Any:
    """The StructuredConfig of a streamed run (--chunk-size/--workers/--engine spark), refusing
    what needs every record in memory."""
    refuse_in_memory_options(args)
    from extracteval.tasks.structured.options import build_config

    return build_config(args)


def score_files(args: argparse.Namespace) -> tuple[Any, dict[str, Any], dict[str, Any], dict[str, Any], dict[str, Any]]:
    """Score the files the options name, in memory, with the live progress line: (result, result
    document, truth, predictions, extended backends)."""
    from extracteval.report.live_progress import LiveProgress
    from extracteval.tasks.structured.semantics import score_structured

    truth = load_truth(args.truth)
    preds, sources = load_predictions(args.predictions)
    backends = extended_backends(args)
    progress = LiveProgress("structured", ("json_valid_rate", "exact_match_rate"), mode=getattr(args, "progress", "never"))
    from extracteval.tasks.structured.options import build_config

    result = score_structured(truth, preds, config=build_config(args), similarity=backends, progress=progress)
    return result, result_document(result, args, sources, args.truth), truth, preds, backends


def score_inputs(truth: Any, predictions: list[Any], config: Any, *, id_key: str = "id") -> tuple[Any, dict[str, Any], dict[str, Any], dict[str, Any]]:
    """Score the truth and each model's outputs (`NAME=FILE` specs, or (name, table held in
    memory) pairs) with a StructuredConfig, as `score_files` does: (result, result document,
    truth, predictions)."""
    from extracteval.tasks.structured.semantics import score_structured

    ref = load_truth(truth, id_key=id_key)
    preds, sources = load_predictions(predictions, id_key=id_key)
    result = score_structured(ref, preds, config=config)
    return result, result_document(result, argparse.Namespace(), sources, str(truth)), ref, preds


def chunked_document(result: Any, inputs: dict[str, Any]) -> dict[str, Any]:
    """The `--json` document of a streamed run (as `result_document` makes it in memory)."""
    from extracteval.tasks.structured.semantics import StructuredCounts

    return track_document(result, inputs, counts=StructuredCounts)


def result_document(result: Any, args: argparse.Namespace, sources: dict[str, str], truth_source: str) -> dict[str, Any]:
    from extracteval.io.decision_options import make_decision

    doc = result.to_dict()
    doc["inputs"] = {"truth": truth_source, "predictions": sources}
    cols, _ = result.count_matrix(result.ranking[0]) if result.ranking else ((), None)
    doc["count_columns"] = list(cols)
    if getattr(args, "baseline", None) or getattr(args, "candidate", None):
        from extracteval.errors import InputError

        if not (args.baseline and args.candidate):
            raise InputError("--baseline and --candidate go together; give both model names.")
        matrices = {m: result.count_matrix(m)[1] for m in result.ranking}
        doc["decision"] = make_decision(result.task, tuple(cols), matrices, args, zero_division=result.config.zero_division).to_dict()
    return doc


def render(doc: dict[str, Any]) -> str:
    from extracteval.report.terminal import percent, table

    models = doc["models"]
    out = [f"extracteval · structured · {len(doc['ranking'])} model(s) · {doc['n_records']} records · lists {doc['config']['list_matching']}", ""]
    ext_keys = sorted({k for m in models.values() for k in m["extended"]})
    headers = ["Rank", "Model", "JSON valid", "Extracted", "Exact match", "Field P", "Field R", "Field F1"] + [f"{k} (pass)" for k in ext_keys]
    rows = []
    for name in doc["ranking"]:
        m = models[name]
        row = [f"#{m['rank']}", name, percent(m["json_valid_rate"]), percent(m["json_extracted_rate"]), percent(m["exact_match_rate"]),
               percent(m["field_precision"]), percent(m["field_recall"]), percent(m["field_f1"])]
        row += [f"{m['extended'][k]['mean']:.3f} ({percent(m['extended'][k]['pass_rate'])})" if k in m["extended"] else "-" for k in ext_keys]
        rows.append(row)
    out.append(table(headers, rows, align="ll" + "r" * (len(headers) - 2)))
    if doc.get("field_winners"):
        out.append("")
        out.append("Per field (F1):")
        frows = []
        for g, w in doc["field_winners"].items():
            frows.append([g] + [percent(models[n]["fields"].get(g, {}).get("f1")) if g in models[n]["fields"] else "-" for n in doc["ranking"]]
                         + [", ".join(w["winners"]) + f" ({w['kind']})" if w["winners"] else ("all tie" if w["kind"] == "universal" else "-")])
        out.append(table(["Field", *doc["ranking"], "Winner"], frows[:40], align="l" + "r" * len(doc["ranking"]) + "l"))
        if len(frows) > 40:
            out.append(f"… {len(frows) - 40} more fields in --json")
    for name in doc["ranking"]:
        for ex in models[name]["invalid_examples"][:2]:
            out.append(f"invalid ({name}, id {ex['id']}): {ex['error']}")
    return "\n".join(out + closing_lines(doc))


def closing_lines(doc: dict[str, Any]) -> list[str]:
    """The terminal view's last lines for a track (`structured`, `toolcalls`): the records
    without output or outside the truth, then the baseline-vs-candidate decision when asked."""
    from extracteval.core.decision import render_decision

    return id_warnings(doc) + (["", render_decision(doc["decision"])] if "decision" in doc else [])


