"""The `toolcalls` task's scoring pipeline from command-line options: the generic checker and the
BFCL checker over the files the options name, the result document (`--json`, `result.json`) and
the terminal view. The command (`score toolcalls`) and the MLflow adapter both run it."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from extracteval.io.record_keys import TOOLCALL_TRUTH_KEYS as TRUTH_KEYS


def streaming_config(args: argparse.Namespace) -> Any:
    """The ToolCallConfig of a streamed run of the generic checker (--chunk-size/--workers/--engine
    spark), refusing what needs every record in memory."""
    from extracteval.io.decision_track import refuse_in_memory_options
    from extracteval.errors import InputError

    refuse_in_memory_options(args)
    if args.questions:
        raise InputError("--questions is for --checker bfcl; the generic checker reads references from --truth only.")
    if len(args.truth) != 1:
        raise InputError("the generic checker takes one --truth file; several --truth files are for --checker bfcl categories.")
    from extracteval.tasks.toolcalls.options import build_config

    return build_config(args)



def chunked_document(result: Any, inputs: dict[str, Any], *, possible_answer: bool) -> dict[str, Any]:
    """The `--json` document of a streamed run of the generic checker (as `score_generic` makes it
    in memory); `possible_answer`: whether the references were read as BFCL possible answers."""
    from extracteval.io.decision_track import track_document
    from extracteval.tasks.toolcalls.semantics import ToolCallCounts

    doc = track_document(result, inputs, counts=ToolCallCounts)
    doc["config"]["possible_answer"] = bool(possible_answer)
    return doc


def load_truth(path: Any, force_possible: bool, *, id_key: str = "id") -> tuple[dict[str, Any], bool]:
    """id → reference calls of a JSONL (or JSON array) file, or of a table held in memory (a list
    of dicts as a JSON array, a DataFrame as a table); and whether they are BFCL possible answers."""
    from extracteval.errors import InputError
    from extracteval.io.json_text import read_record_file
    from extracteval.io.memory import is_in_memory, memory_records

    if is_in_memory(path):
        p: Any = path
        recs = memory_records(path)
    else:
        p = Path(path)
        if p.suffix.lower() not in (".jsonl", ".ndjson", ".json"):
            raise InputError(f"{p}: tool-call references must be JSON Lines (or a JSON array) with `id` and `calls`/`ground_truth`.")
        recs = [(f"line {line}", rec) for line, rec in read_record_file(p)]
    truth: dict[str, Any] = {}
    possible = force_possible
    for where, rec in recs:
        if not isinstance(rec, dict) or id_key not in rec:
            raise InputError(f"{p}: {where}: expected an object with \"{id_key}\" and one of {', '.join(TRUTH_KEYS)}.")
        key = next((k for k in TRUTH_KEYS if k in rec), None)
        if key is None:
            raise InputError(f"{p}: {where} (id {rec[id_key]}): no reference key; expected one of {', '.join(TRUTH_KEYS)} (found {sorted(rec)[:8]}).")
        if key in ("ground_truth", "possible_answer"):
            possible = True
        raw = rec[id_key]
        rid = "" if raw is None or (isinstance(raw, float) and raw != raw) else str(raw)
        if not rid.strip():
            raise InputError(f"{p}: {where}: \"{id_key}\" is empty; every record needs an id.")
        if rid in truth:
            raise InputError(f"{p}: {where}: id {rid!r} appears twice.")
        truth[rid] = rec[key]
    return truth, possible


def run_generic(args: argparse.Namespace) -> tuple[dict[str, Any], Any, dict[str, Any]]:
    from extracteval.report.live_progress import LiveProgress
    from extracteval.io.decision_track import extended_backends, load_predictions
    from extracteval.errors import InputError

    if args.questions:
        raise InputError("--questions is for --checker bfcl; the generic checker reads references from --truth only.")
    if len(args.truth) != 1:
        raise InputError("the generic checker takes one --truth file; several --truth files are for --checker bfcl categories.")
    truth, possible = load_truth(args.truth[0], args.possible_answer)
    preds, sources = load_predictions(args.predictions)
    from extracteval.tasks.toolcalls.options import build_config

    config = build_config(args)
    progress = LiveProgress("toolcalls", ("valid_call_rate", "call_accuracy"), mode=args.progress)
    return score_generic(truth, possible, preds, sources, args.truth[0], config, backends=extended_backends(args), progress=progress, args=args)


def score_generic(truth: dict[str, Any], possible: bool, preds: dict[str, Any], sources: dict[str, str], truth_source: str, config: Any, *,
                  backends: dict[str, Any] | None = None, progress: Any = None, args: argparse.Namespace | None = None,
                  ) -> tuple[dict[str, Any], Any, dict[str, Any]]:
    """The generic checker over read references and outputs: (result document, result, what the
    MLflow adapter keeps). `args`: the command line's options (the baseline/candidate decision)."""
    from extracteval.errors import InputError
    from extracteval.io.decision_options import make_decision
    from extracteval.tasks.toolcalls.semantics import score_toolcalls

    result = score_toolcalls(truth, preds, possible_answer=possible, config=config, similarity=backends or {}, progress=progress)
    doc = result.to_dict()
    doc["config"]["possible_answer"] = bool(possible)  # how the references were read: part of the configuration
    doc["inputs"] = {"truth": truth_source, "predictions": sources}
    cols, _ = result.count_matrix(result.ranking[0]) if result.ranking else ((), None)
    doc["count_columns"] = list(cols)
    matrices = {m: result.count_matrix(m)[1] for m in result.ranking}
    if args is not None and (args.baseline or args.candidate):
        if not (args.baseline and args.candidate):
            raise InputError("--baseline and --candidate go together; give both model names.")
        doc["decision"] = make_decision("toolcalls", tuple(cols), matrices, args, zero_division=config.zero_division).to_dict()
    ids = [r.id for r in result.records[result.ranking[0]]] if result.ranking else []
    extra = {m: [{"correct": r.correct, "format": r.format, "error": r.error} for r in result.records[m]] for m in result.ranking}
    # the inputs as scored travel along for the MLflow adapter (per-function tables, dataset input)
    return doc, result, {"columns": cols, "matrices": matrices, "ids": ids, "extra": extra,
                         "truth": truth, "predictions": preds, "possible_answer": possible, "config": config}


def run_bfcl(args: argparse.Namespace) -> tuple[dict[str, Any], Any, dict[str, Any]]:
    import numpy as np

    from extracteval.io.decision_options import make_decision
    from extracteval.tasks.toolcalls.bfcl import BfclEntry, bfcl_document, entry_sort_key, generic_answers, score_bfcl, underscore_to_dot_models
    from extracteval.errors import InputError
    from extracteval.io.config import parse_model_spec
    from extracteval.tasks.toolcalls.inputs import load_bfcl_entries, load_bfcl_results

    if not args.questions:
        raise InputError("--checker bfcl needs --questions FILE (the BFCL question file with the function specs) for each --truth possible-answer file.")
    if len(args.questions) != len(args.truth):
        raise InputError(f"--checker bfcl pairs --questions and --truth files in order; got {len(args.questions)} --questions and {len(args.truth)} --truth.")
    if args.semantic_similarity or args.llm_judge:
        raise InputError("--semantic-similarity and --llm-judge apply to the generic checker; the BFCL checker gives BFCL's verdicts only.")
    entries: dict[str, BfclEntry] = {}
    data_warnings = []
    for qf, af in zip(args.questions, args.truth):
        loaded_files = load_bfcl_entries(qf, af)
        data_warnings += loaded_files.warnings
        for e in loaded_files.entries:
            if e.id in entries:
                raise InputError(f"{qf}: id {e.id!r} also appears in another --questions file.")
            entries[e.id] = e
    ordered = [entries[i] for i in sorted(entries, key=entry_sort_key)]
    unscored = {w.id for w in data_warnings if w.kind == "question_without_answer"}
    results: dict[str, dict[str, Any]] = {}
    sources: dict[str, list[str]] = {}
    for spec in args.predictions:
        name, path = parse_model_spec(spec)
        name = name or path.stem
        loaded = load_bfcl_results(path)
        unknown = sorted(set(loaded) - set(entries) - unscored, key=entry_sort_key)
        if unknown:
            raise InputError(f"{path}: {len(unknown)} result id(s) have no question, e.g. {unknown[:3]}; pass the matching --questions/--truth files.")
        bucket = results.setdefault(name, {})
        dup = set(bucket) & set(loaded)
        if dup:
            raise InputError(f"{path}: ids already given for model {name!r} by another file, e.g. {sorted(dup)[:3]}.")
        bucket.update(loaded)
        sources.setdefault(name, []).append(str(path))
    mangled = underscore_to_dot_models(getattr(args, "underscore_to_dot", None), sorted(results))
    chunk_size, workers = getattr(args, "chunk_size", None), getattr(args, "workers", 1)
    generic = None
    if chunk_size is not None or workers != 1:
        from extracteval.tasks.toolcalls.chunked import score_bfcl_chunked

        scores, generic_metrics = score_bfcl_chunked(ordered, results, mangled=mangled, chunk_size=100_000 if chunk_size is None else chunk_size,
                                                     workers=workers)
    else:
        scores = {m: score_bfcl(ordered, results[m], model=m, underscore_to_dot=m in mangled) for m in sorted(results)}
        # The generic metrics on the same data (argument P/R/F1 etc.), next to BFCL's verdicts
        from extracteval.tasks.toolcalls.semantics import score_toolcalls

        generic = score_toolcalls({e.id: generic_answers(e) for e in ordered}, results, possible_answer=True)
        generic_metrics = {m: generic.models[m].metrics for m in scores}
    doc = bfcl_document(ordered, scores, generic_metrics, data_warnings=data_warnings, mangled=mangled,
                        inputs={"questions": list(args.questions), "truth": list(args.truth), "predictions": sources})
    ids = [e.id for e in ordered]
    matrices = {m: np.array([[1, int(i not in set(scores[m].failed_ids))] for i in ids], dtype=np.int64).reshape(len(ids), 2) for m in scores}
    if args.baseline or args.candidate:
        if not (args.baseline and args.candidate):
            raise InputError("--baseline and --candidate go together; give both model names.")
        doc["decision"] = make_decision("toolcalls", ("records", "correct_records"), matrices, args).to_dict()
    extra = {m: [{"error_type": scores[m].failures[i].error_type if i in scores[m].failures else None} for i in ids] for m in scores}
    return doc, scores, {"columns": ("records", "correct_records"), "matrices": matrices, "ids": ids, "extra": extra,
                         "entries": ordered, "predictions": results, "generic": generic}


def render(doc: dict[str, Any]) -> str:
    from extracteval.core.decision import render_decision
    from extracteval.report.terminal import percent, table

    models = doc["models"]
    out = [f"extracteval · toolcalls ({doc['checker']} checker) · {len(doc['ranking'])} model(s) · {doc['n_records']} records", ""]
    if doc["checker"] == "bfcl":
        cats = doc["categories"]
        headers = ["Rank", "Model", "Accuracy", "Correct", *cats]
        rows = []
        for name in doc["ranking"]:
            m = models[name]
            rows.append([f"#{m['rank']}", name, percent(m["call_accuracy"]), f"{m['correct_count']}/{m['total_count']}"]
                        + [percent(m["categories"][c]["accuracy"]) if c in m["categories"] else "-" for c in cats])
        out.append(table(headers, rows, align="ll" + "r" * (len(headers) - 2)))
        for name in doc["ranking"]:
            m = models[name]
            if m["error_types"]:
                out.append("")
                out.append(f"{name}: {len(m['failed_ids'])} failed — " + ", ".join(f"{k} {v}" for k, v in m["error_types"].items()))
                shown = m["failed_ids"][:12]
                out.append("  failed ids: " + ", ".join(shown) + (f", … ({len(m['failed_ids']) - 12} more)" if len(m["failed_ids"]) > 12 else ""))
        mangled = doc["config"].get("underscore_to_dot") or []
        if mangled:
            out.append("")
            out.append("'.' → '_' name mangling for: " + ", ".join(mangled))
        out += render_bfcl_warnings(doc.get("warnings", []))
    else:
        ext_keys = sorted({k for m in models.values() for k in m["extended"]})
        headers = ["Rank", "Model", "Valid", "Name match", "Args exact", "Args P", "Args R", "Args F1", "Call acc."] + [f"{k} (pass)" for k in ext_keys]
        rows = []
        for name in doc["ranking"]:
            m = models[name]
            rates = ("valid_call_rate", "name_match_rate", "args_exact_rate", "args_precision", "args_recall", "args_f1", "call_accuracy")
            rows.append([f"#{m['rank']}", name] + [percent(m[k]) for k in rates]
                        + [f"{m['extended'][k]['mean']:.3f} ({percent(m['extended'][k]['pass_rate'])})" if k in m["extended"] else "-" for k in ext_keys])
        out.append(table(headers, rows, align="ll" + "r" * (len(headers) - 2)))
        out.append("")
        for name in doc["ranking"]:
            m = models[name]
            out.append(f"{name}: formats " + ", ".join(f"{k} {v}" for k, v in m["formats"].items()))
            for ex in m["invalid_examples"][:2]:
                out.append(f"  invalid (id {ex['id']}): {ex['error']}")
        from extracteval.io.decision_track import id_warnings

        out += id_warnings(doc)
    if "decision" in doc:
        out += ["", render_decision(doc["decision"])]
    return "\n".join(out)


def render_bfcl_warnings(warnings: list[dict[str, Any]], limit: int = 8) -> list[str]:
    """Terminal lines for the BFCL warnings: the count per kind, then the first few in full."""
    if not warnings:
        return []
    kinds: dict[str, int] = {}
    for w in warnings:
        kinds[w["kind"]] = kinds.get(w["kind"], 0) + 1
    out = ["", f"warnings: {len(warnings)} — " + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items()))]
    for w in warnings[:limit]:
        # a model's warning starts with the model's name already
        out.append(f"  {w['file']}: line {w['line']} (id {w['id']}): {w['message']}" if "file" in w else f"  {w['message']}")
    if len(warnings) > limit:
        out.append(f"  … {len(warnings) - limit} more in the --json document (\"warnings\")")
    return out
