"""The `spans` task's options as the command line and the MLflow adapter give them (an
`argparse.Namespace`): the tag scheme, the input files and the `SpansConfig`. Imports nothing
heavy at module level, so the command line can use `scheme_name` as an argument type."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

__all__ = ["SCHEME_NAMES", "REPORT_STYLES", "scheme_name", "min_overlap_percent", "named_files", "load_corpus", "build_config", "spans_inputs", "truth_source"]

SCHEME_NAMES = ("conlleval", "IOB1", "IOB2", "IOE1", "IOE2", "IOBES", "BILOU")


def scheme_name(value: str) -> str:
    """`value` as one of `SCHEME_NAMES` (case-insensitive); an argparse type."""
    for name in SCHEME_NAMES:
        if value.lower() == name.lower():
            return name
    raise argparse.ArgumentTypeError(f"expected one of {', '.join(SCHEME_NAMES)}, but got {value!r}")


REPORT_STYLES = ("default", "nervaluate", "classification")


def min_overlap_percent(value: str) -> float:
    """`--min-overlap P`: a percentage from 1 to 100; an argparse type."""
    try:
        v = float(value)
    except ValueError:
        v = float("nan")
    if not 1.0 <= v <= 100.0:  # NaN fails too
        raise argparse.ArgumentTypeError(f"expected a percentage of the gold span's length from 1 to 100, but got {value!r}")
    return v


def named_files(specs: list[str], what: str) -> list[tuple[str, Path]]:
    """`[NAME=]FILE` specs of option `what` → (name, path); the name defaults to the file's stem."""
    from extracteval.errors import InputError
    from extracteval.io.config import parse_model_spec

    out = []
    for spec in specs:
        try:
            name, path = parse_model_spec(spec)
        except InputError as e:  # its message names --predictions; say which option it was
            raise InputError(str(e).replace("--predictions", what, 1)) from None
        out.append((name or path.stem, path))
    return out


def check_token_inputs(args: argparse.Namespace) -> list[tuple[str, Path]]:
    """The token files the options name, after the checks every engine makes: `--conll` files
    (gold and predicted columns), or the predictions of a token `--truth` file. JSONL inputs
    give an empty list."""
    from extracteval.errors import InputError
    from extracteval.tasks.spans.inputs import is_jsonl

    if args.conll and (args.truth or args.predictions):
        raise InputError("spans: pass either --conll FILE (gold and predictions in one token file) or --truth/--predictions, not both.")
    if args.conll:
        conll = named_files(args.conll, "--conll")
        for _, path in conll:
            if is_jsonl(path):
                raise InputError(f"--conll {path}: expected a token file (token … gold pred), but the name ends in {path.suffix}; use --truth for JSONL.")
        return conll
    if not args.truth:
        raise InputError("spans: pass --conll FILE, or --truth FILE with --predictions NAME=FILE.")
    preds = named_files(args.predictions or [], "--predictions")
    if is_jsonl(args.truth):
        for _, path in preds:
            if not is_jsonl(path):
                raise InputError(f"--predictions {path}: the truth is JSONL, so predictions must be JSONL too (.jsonl), but found {path.suffix or 'no suffix'}.")
        return []
    if not preds:
        raise InputError(f"--truth {args.truth}: a token truth file needs --predictions NAME=FILE (or use --conll for a file with both columns).")
    return preds


def load_corpus(args: argparse.Namespace) -> Any:
    """The `SpanCorpus` the options describe, read whole."""
    from extracteval.tasks.spans.inputs import load_jsonl_corpus, load_token_corpus

    files = check_token_inputs(args)
    if args.conll:
        return load_token_corpus(scheme=args.scheme, conll=files, suffix=args.suffix)
    if not files:
        return load_jsonl_corpus(args.truth, named_files(args.predictions or [], "--predictions"))
    return load_token_corpus(scheme=args.scheme, truth=args.truth, predictions=files, suffix=args.suffix)


def spans_inputs(args: argparse.Namespace) -> dict[str, Any]:
    """The `inputs` entry of the evaluation's document: the input options as given."""
    return {"truth": args.truth, "conll": list(args.conll or []), "predictions": list(args.predictions or [])}


def truth_source(args: argparse.Namespace) -> str:
    """Where the truth comes from: `--truth`, or the first `--conll` token file (it carries the
    gold column itself)."""
    return str(args.truth) if args.truth else (args.conll or [""])[0].rpartition("=")[2]


def build_config(options: Any, unit: str = "char") -> Any:
    """The `SpansConfig` of the task's options — evaluator_config keys, or the command line's
    parsed options under the same names (`io.config.options_of`): the one translation for every
    door. `unit` (`token` or `char`) decides whether the token scheme (`scheme`, `suffix`) is part
    of it; an invalid value is an `InputError`."""
    from extracteval.io.config import options_of, task_config
    from extracteval.tasks.spans.semantics import SpansConfig

    config = options_of(options)
    iou = config.get("iou_weight", 0.65)
    scheme = None
    if unit == "token":
        scheme = config.get("scheme", "conlleval") + (" (suffix tags)" if config.get("suffix") else "")
    return task_config(SpansConfig, dict(
        threshold=config.get("threshold", 0.5), iou_weight=iou,
        text_weight=round(1.0 - float(iou), 12) if isinstance(iou, (int, float)) and not isinstance(iou, bool) else iou,
        scheme=scheme, zero_division=config.get("zero_division", 0.0), max_examples=config.get("examples", 5),
        bootstrap=config.get("bootstrap", 1000), confidence=config.get("confidence", 0.95), seed=config.get("seed", 0),
        min_overlap=config.get("min_overlap", 1.0),
    ), errors=(TypeError, ValueError), where="spans options" if isinstance(options, argparse.Namespace) else "evaluator_config")
