"""The `fields` task's options → inputs, strategy files and `FieldsConfig`: one translation for
the command line's parsed options and evaluator_config keys (the same names)."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path
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
        allowed = {"strategies", "types", "default_strategy", "fuzzy_threshold", "fuzzy_scorer", "null_tokens", "dayfirst", "zero_division"}
        unknown = sorted(set(raw) - allowed)
        if unknown:
            raise InputError(f"{path}: unknown keys {unknown}; expected some of {sorted(allowed)}.")
        opts["strategies"] = parse_strategy_map(raw["strategies"], source=str(path))
        if "types" in raw and not isinstance(raw["types"], dict):
            raise InputError(f"{path}: 'types' must be a mapping of field to type (auto, text or id), but found {type(raw['types']).__name__}.")
        for k in ("types", "default_strategy", "fuzzy_threshold", "fuzzy_scorer", "zero_division"):
            if k in raw:
                opts[k] = raw[k]
        if "null_tokens" in raw:
            norm["null_tokens"] = frozenset(str(t).strip().casefold() for t in raw["null_tokens"])
        if "dayfirst" in raw:
            norm["dayfirst"] = bool(raw["dayfirst"])
    else:
        opts["strategies"] = parse_strategy_map(raw, source=str(path))
    return opts, norm


def build_config(options: Any) -> Any:
    """FieldsConfig from the task's options — evaluator_config keys, or the command line's parsed
    options under the same names (`io.config.options_of`): the one translation for every door. A
    strategies file (`strategies` as a path) is read as `--strategies FILE` reads it (its
    thresholds and null tokens too); the other options override it."""
    from extracteval.core.strategies import parse_strategy_map
    from extracteval.io.config import given_options, metadata_columns, options_of, task_config
    from extracteval.tasks.fields.semantics import FieldsConfig

    config = options_of(options)
    opts: dict[str, Any] = {}
    norm: dict[str, Any] = {}
    strategies = config.get("strategies")
    if isinstance(strategies, (str, Path)):
        opts, norm = strategy_file_options(str(strategies))
    elif strategies is not None:
        if not isinstance(strategies, Mapping):
            raise InputError(f"evaluator_config `strategies`: expected a mapping {{field: strategy}} or a file path, but got {type(strategies).__name__}.")
        opts["strategies"] = parse_strategy_map(dict(strategies), source="evaluator_config `strategies`")
    if config.get("types") is not None:  # beside the strategies file's, field by field
        types = config["types"]
        if not isinstance(types, Mapping):
            raise InputError(f"evaluator_config `types`: expected a mapping {{field: auto|text|id}}, but got {type(types).__name__}.")
        opts["types"] = {**opts.get("types", {}), **types}
    opts.update(given_options(config, ("default_strategy", "fuzzy_threshold", "fuzzy_scorer", "zero_division", "bootstrap", "confidence",
                                       "seed", "min_records")))
    if metadata_columns(config):
        opts["metadata"] = metadata_columns(config)
    return task_config(FieldsConfig, opts, config, normalization=norm)


def chosen_fields(options: Any) -> list[str] | None:
    """The fields the options ask for (`--fields a,b`, or evaluator_config `fields`); None: every
    field of the truth."""
    from extracteval.io.config import listed, options_of

    return listed(options_of(options).get("fields"))
