"""The `fields` task's options as the command line and the MLflow layer give them (an
`argparse.Namespace`): arguments → inputs, strategy files and `FieldsConfig`."""

from __future__ import annotations

import argparse
from typing import Any

from extracteval.errors import InputError


def load_inputs(args: argparse.Namespace) -> tuple[Any, Any, str]:
    from extracteval.tasks.fields.inputs import load_fields_inputs

    return load_fields_inputs(args.truth, args.predictions, id_column=args.id_column, delimiter=args.delimiter, keys=args.keys)


def strategy_file_options(path: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """A strategies file → (FieldsConfig options, NormalizationConfig options). The file is either
    a plain map {field: strategy} or {strategies: {...}, fuzzy_threshold, …}; the command line's
    `--strategies` and the evaluator's `strategies` (a path) read it the same way."""
    from extracteval.core.strategies import parse_strategy_map
    from extracteval.io.config import load_mapping

    opts: dict[str, Any] = {}
    norm: dict[str, Any] = {}
    raw = load_mapping(path)
    if "strategies" in raw and isinstance(raw["strategies"], dict):
        allowed = {"strategies", "default_strategy", "fuzzy_threshold", "fuzzy_scorer", "null_tokens", "dayfirst", "zero_division"}
        unknown = sorted(set(raw) - allowed)
        if unknown:
            raise InputError(f"{path}: unknown keys {unknown}; expected some of {sorted(allowed)}.")
        opts["strategies"] = parse_strategy_map(raw["strategies"], source=str(path))
        for k in ("default_strategy", "fuzzy_threshold", "fuzzy_scorer", "zero_division"):
            if k in raw:
                opts[k] = raw[k]
        if "null_tokens" in raw:
            norm["null_tokens"] = frozenset(str(t).strip().casefold() for t in raw["null_tokens"])
        if "dayfirst" in raw:
            norm["dayfirst"] = bool(raw["dayfirst"])
    else:
        opts["strategies"] = parse_strategy_map(raw, source=str(path))
    return opts, norm


def build_config(args: argparse.Namespace) -> Any:
    """FieldsConfig from a --strategies file overlaid with explicit command-line options."""
    from extracteval.tasks.fields.semantics import FieldsConfig
    from extracteval.core.normalize import NormalizationConfig

    opts: dict[str, Any] = {}
    norm: dict[str, Any] = {}
    if args.strategies:
        opts, norm = strategy_file_options(args.strategies)
    if args.fuzzy_threshold is not None:
        opts["fuzzy_threshold"] = args.fuzzy_threshold
    if args.zero_division is not None:
        opts["zero_division"] = args.zero_division
    from extracteval.io.config import normalization_flags  # here: --help loads no pandas

    norm.update(normalization_flags(args))
    if args.no_ci:
        opts["bootstrap"] = 0
    elif args.resamples is not None:
        opts["bootstrap"] = args.resamples
    if args.seed is not None:
        opts["seed"] = args.seed
    if norm:
        opts["normalization"] = NormalizationConfig(**norm)
    return FieldsConfig(**opts)


def chosen_fields(args: argparse.Namespace) -> list[str] | None:
    """The fields `--fields a,b` asks for (None: every field of the truth)."""
    given = getattr(args, "fields", None)
    return [f.strip() for f in given.split(",") if f.strip()] if given else None
