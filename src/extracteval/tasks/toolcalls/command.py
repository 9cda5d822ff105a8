"""`extracteval score toolcalls`: tool-call track, generic or BFCL-compatible."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from extracteval.io.record_keys import TOOLCALL_TRUTH_KEYS as TRUTH_KEYS

HELP = "predicted tool calls vs reference calls; BFCL-compatible checker with --checker bfcl"
DESCRIPTION = """\
Score predicted function calls against reference calls.

generic checker (default): JSONL records keyed by `id`. Truth: `calls` (or `reference`,
`expected`) holding {"name","arguments"} objects or lists of them, or `ground_truth` holding
BFCL possible answers ({func: {param: [acceptable values]}}, "" = may be omitted). Predictions:
`output` (or `result`, `response`) in any format: {"name","arguments"} (arguments an object or a
JSON string), OpenAI tool_calls, BFCL {func: {args}} / {func: "<json>"}, Python call strings
`[f(a=1), g(b="x")]` (parsed with ast, never evaluated), fenced or after prose.
Metrics: valid_call_rate, name_match_rate, args_exact_rate, args P/R/F1 over flattened argument
paths, call_accuracy; parallel calls are matched order-free by optimal assignment.

bfcl checker: the verdicts of the official BFCL AST checker on BFCL question, possible-answer
and result files (v1 and v4 layouts); repeat --questions/--truth pairs for several categories.
Irregular entries (an answer naming a function the question does not describe, a parameter map
that is not an object, …) are scored as BFCL's checker scores them and listed as warnings.
Function-calling models whose API forbids '.' in names call `a.b` as `a_b`: name them with
--underscore-to-dot NAME, so prompt and function-calling models are scored in one run.
With --chunk-size N [--workers K] the entries are checked N at a time (the same verdicts).

examples:
  extracteval score toolcalls --truth calls.jsonl --predictions llm=llm.jsonl --predictions slm=slm.jsonl
  extracteval score toolcalls --checker bfcl --questions BFCL_v4_simple_python.json \\
      --truth possible_answer/BFCL_v4_simple_python.json \\
      --predictions mymodel=BFCL_v4_simple_python_result.json --json
  extracteval score toolcalls --checker bfcl --questions simple.json --truth possible_answer/simple.json \\
      --predictions gpt=gpt_simple.json --predictions prompted=prompted_simple.json --underscore-to-dot gpt
"""


def configure(p: argparse.ArgumentParser) -> None:
    from extracteval.commands.compare_models import add_decision_arguments
    from extracteval.commands.live_progress import add_progress_argument
    from extracteval.tasks.structured.command import add_extended_arguments

    p.add_argument("--checker", choices=("generic", "bfcl"), default="generic", help="generic metrics (default) or BFCL-compatible verdicts")
    p.add_argument("--truth", action="append", required=True, metavar="FILE",
                   help="reference calls (generic) or a BFCL possible-answer file (bfcl; repeat with --questions for several categories)")
    p.add_argument("--questions", action="append", metavar="FILE", help="BFCL question file with the function specs (bfcl checker)")
    p.add_argument("--predictions", action="append", required=True, metavar="NAME=FILE",
                   help="a model's outputs; repeat per model (bfcl: repeat the same NAME for each category's result file)")
    p.add_argument("--underscore-to-dot", action="append", nargs="?", const="*", metavar="NAME",
                   help="bfcl: look for a described function `a.b` under the name `a_b` in the calls of model NAME (repeat per "
                        "model; without NAME: every model). Use it for models whose API forbids dots in function names, e.g. "
                        "function-calling models, and leave it off for prompt models")
    p.add_argument("--possible-answer", action="store_true", help="generic: read the truth as BFCL possible answers (automatic for a `ground_truth` key)")
    p.add_argument("--value-match", choices=("exact", "normalized"), default="exact", help="generic: compare argument leaves as canonical JSON (default) or normalised values")
    p.add_argument("--zero-division", type=float, default=0.0, metavar="X", help="value of an undefined ratio (default 0.0)")
    add_extended_arguments(p)
    add_progress_argument(p)
    add_decision_arguments(p)
    p.add_argument("--json", action="store_true", help="print the result as one JSON document")
    p.add_argument("--output", metavar="DIR", help="write result.json and records.jsonl (per-record counts) to DIR")
    from extracteval.tasks.fields.command import add_scale_arguments

    add_scale_arguments(p)


def run(args: argparse.Namespace) -> int:
    chunked = _run_chunked(args)
    if chunked is not None:
        doc = chunked
    else:
        doc, result, records = (_run_bfcl(args) if args.checker == "bfcl" else _run_generic(args))
    if args.output and chunked is not None:  # records.parquet was streamed while scoring
        _write_output(Path(args.output), doc, None)
    elif args.output:
        _write_output(Path(args.output), doc, records)
    if args.json:
        json.dump(doc, sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        print(render(doc))
        if args.output:
            print(f"\nwrote {args.output}/result.json, {'records.parquet' if chunked is not None else 'records.jsonl'}")
    return 0


def _run_chunked(args: argparse.Namespace) -> dict[str, Any] | None:
    """--chunk-size / --workers (README "Scale"): the generic checker's document, or None (in
    memory, or the BFCL checker, whose `_run_bfcl` scores in chunks itself)."""
    from extracteval.errors import InputError

    chunk_size, workers = getattr(args, "chunk_size", None), getattr(args, "workers", 1)
    if workers < 1:
        raise InputError(f"Expected --workers to be ≥ 1, but got {workers}.")
    spark = getattr(args, "engine", "local") == "spark"
    if chunk_size is None and workers == 1 and not spark:
        return None
    if args.checker == "bfcl":  # read whole, scored in chunks by `_run_bfcl`
        if spark:
            raise InputError("--checker bfcl runs on the local engine; drop --engine spark (--chunk-size/--workers score it in chunks).")
        return None
    config = streaming_config(args)
    from extracteval.tasks.toolcalls.chunked import score_toolcalls_files

    if spark:
        if chunk_size is not None or workers != 1:
            raise InputError("--chunk-size/--workers are for the local engine; with --engine spark use --spark-partitions N.")
        if args.output:
            raise InputError("--output with --engine spark is not supported for toolcalls yet (no per-record rows); drop --output.")
        from extracteval.tasks.toolcalls.spark import score_toolcalls_spark_files

        result, inputs = score_toolcalls_spark_files(args.truth[0], args.predictions, config=config, possible_answer=args.possible_answer,
                                                     master=args.spark_master, partitions=args.spark_partitions)
        return chunked_document(result, inputs)
    result, inputs = score_toolcalls_files(
        args.truth[0], args.predictions, config=config, possible_answer=args.possible_answer,
        chunk_size=100_000 if chunk_size is None else chunk_size, workers=workers, output=args.output,
    )
    return chunked_document(result, inputs)


def streaming_config(args: argparse.Namespace) -> Any:
    """The ToolCallConfig of a streamed run of the generic checker (--chunk-size/--workers/--engine
    spark), refusing what needs every record in memory."""
    from extracteval.tasks.structured.command import refuse_in_memory_options
    from extracteval.tasks.toolcalls.semantics import ToolCallConfig
    from extracteval.errors import InputError

    refuse_in_memory_options(args)
    if args.questions:
        raise InputError("--questions is for --checker bfcl; the generic checker reads references from --truth only.")
    if len(args.truth) != 1:
        raise InputError("the generic checker takes one --truth file; several --truth files are for --checker bfcl categories.")
    return ToolCallConfig(value_match=args.value_match, zero_division=args.zero_division, pass_threshold=args.pass_threshold)


def chunked_document(result: Any, inputs: dict[str, Any]) -> dict[str, Any]:
    """The `--json` document of a streamed run of the generic checker (as `_run_generic` makes it in memory)."""
    from extracteval.tasks.structured.command import chunked_document as document
    from extracteval.tasks.toolcalls.semantics import ToolCallCounts

    return document(result, inputs, counts=ToolCallCounts)


def _load_truth(path: str, force_possible: bool) -> tuple[dict[str, Any], bool]:
    from extracteval.errors import InputError
    from extracteval.tasks.toolcalls.inputs import read_json_records

    p = Path(path)
    if p.suffix.lower() not in (".jsonl", ".ndjson", ".json"):
        raise InputError(f"{p}: tool-call references must be JSON Lines (or a JSON array) with `id` and `calls`/`ground_truth`.")
    truth: dict[str, Any] = {}
    possible = force_possible
    for line, rec in read_json_records(p):
        if not isinstance(rec, dict) or "id" not in rec:
            raise InputError(f"{p}: line {line}: expected an object with \"id\" and one of {', '.join(TRUTH_KEYS)}.")
        key = next((k for k in TRUTH_KEYS if k in rec), None)
        if key is None:
            raise InputError(f"{p}: line {line} (id {rec['id']}): no reference key; expected one of {', '.join(TRUTH_KEYS)} (found {sorted(rec)[:8]}).")
        if key in ("ground_truth", "possible_answer"):
            possible = True
        rid = str(rec["id"])
        if rid in truth:
            raise InputError(f"{p}: line {line}: id {rid!r} appears twice.")
        truth[rid] = rec[key]
    return truth, possible


def _run_generic(args: argparse.Namespace) -> tuple[dict[str, Any], Any, dict[str, Any]]:
    from extracteval.commands.compare_models import make_decision
    from extracteval.commands.live_progress import LiveProgress
    from extracteval.tasks.structured.command import extended_backends, load_predictions
    from extracteval.tasks.toolcalls.semantics import ToolCallConfig, score_toolcalls
    from extracteval.errors import InputError

    if args.questions:
        raise InputError("--questions is for --checker bfcl; the generic checker reads references from --truth only.")
    if len(args.truth) != 1:
        raise InputError("the generic checker takes one --truth file; several --truth files are for --checker bfcl categories.")
    truth, possible = _load_truth(args.truth[0], args.possible_answer)
    preds, sources = load_predictions(args.predictions)
    config = ToolCallConfig(value_match=args.value_match, zero_division=args.zero_division, pass_threshold=args.pass_threshold)
    progress = LiveProgress("toolcalls", ("valid_call_rate", "call_accuracy"), mode=args.progress)
    result = score_toolcalls(truth, preds, possible_answer=possible, config=config, similarity=extended_backends(args), progress=progress)
    doc = result.to_dict()
    doc["inputs"] = {"truth": args.truth[0], "predictions": sources}
    cols, _ = result.count_matrix(result.ranking[0]) if result.ranking else ((), None)
    doc["count_columns"] = list(cols)
    matrices = {m: result.count_matrix(m)[1] for m in result.ranking}
    if args.baseline or args.candidate:
        if not (args.baseline and args.candidate):
            raise InputError("--baseline and --candidate go together; give both model names.")
        doc["decision"] = make_decision("toolcalls", tuple(cols), matrices, args, zero_division=config.zero_division).to_dict()
    ids = [r.id for r in result.records[result.ranking[0]]] if result.ranking else []
    extra = {m: [{"correct": r.correct, "format": r.format, "error": r.error} for r in result.records[m]] for m in result.ranking}
    # the inputs as scored travel along for the MLflow adapter (per-function tables, dataset input)
    return doc, result, {"columns": cols, "matrices": matrices, "ids": ids, "extra": extra,
                         "truth": truth, "predictions": preds, "possible_answer": possible, "config": config}


def _run_bfcl(args: argparse.Namespace) -> tuple[dict[str, Any], Any, dict[str, Any]]:
    import numpy as np

    from extracteval.commands.compare_models import make_decision
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


def _write_output(out: Path, doc: dict[str, Any], records: dict[str, Any] | None) -> None:
    from extracteval.commands.compare_models import write_records
    from extracteval.io.outputs import staged_folder

    with staged_folder(out) as staging:
        (staging / "result.json").write_text(json.dumps(doc, indent=2, ensure_ascii=False), encoding="utf-8")
        if records is not None:  # else the chunked engine streamed records.parquet while scoring
            write_records(staging, tuple(records["columns"]), records["matrices"], records["ids"], records["extra"])


def render(doc: dict[str, Any]) -> str:
    from extracteval.commands.compare_models import render_decision
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
            rows.append([f"#{m['rank']}", name] + [percent(m[k]) for k in ("valid_call_rate", "name_match_rate", "args_exact_rate", "args_precision", "args_recall", "args_f1", "call_accuracy")]
                        + [f"{m['extended'][k]['mean']:.3f} ({percent(m['extended'][k]['pass_rate'])})" if k in m["extended"] else "-" for k in ext_keys])
        out.append(table(headers, rows, align="ll" + "r" * (len(headers) - 2)))
        out.append("")
        for name in doc["ranking"]:
            m = models[name]
            out.append(f"{name}: formats " + ", ".join(f"{k} {v}" for k, v in m["formats"].items()))
            for ex in m["invalid_examples"][:2]:
                out.append(f"  invalid (id {ex['id']}): {ex['error']}")
        from extracteval.tasks.structured.command import _id_warnings

        out += _id_warnings(doc)
    if "decision" in doc:
        d = doc["decision"]
        out.append("")
        out.append(render_decision(d))
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


def run_experiment(folder: Path, spec: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """Score one `experiments/<name>/experiment.yaml` of task `toolcalls`; returns (doc, text)."""
    dec = spec.get("decision") or {}
    ns = argparse.Namespace(
        checker="generic", truth=[str(folder / spec["truth"])], questions=None,
        predictions=[f"{n}={folder / p}" for n, p in spec["predictions"].items()],
        underscore_to_dot=False, possible_answer=bool(spec.get("possible_answer", False)), value_match=spec.get("value_match", "exact"),
        zero_division=0.0, semantic_similarity=False, llm_judge=False, similarity_option=[], pass_threshold=0.85, progress="never",
        baseline=dec.get("baseline"), candidate=dec.get("candidate"), decision_metric=dec.get("metric"),
        recommend_threshold=dec.get("recommend_threshold", 0.15), moderate_threshold=dec.get("moderate_threshold", 0.05),
        resamples=dec.get("resamples", 1000), seed=dec.get("seed", 0),
    )
    doc, _, _ = _run_generic(ns)
    return doc, render(doc)
