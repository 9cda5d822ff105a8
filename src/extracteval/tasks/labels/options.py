"""The `labels` task's options: a --config file and the command line's flags → `LabelsConfig` and
the features to score. The command and the MLflow adapter (evaluate, rescore, the streaming
engines) read them here, the same way."""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["build_config", "chosen_features"]


def _pairs(items: list[str], option: str) -> dict[str, str]:
    from extracteval.errors import InputError

    out: dict[str, str] = {}
    for item in items:
        k, sep, v = item.partition("=")
        if not sep or not k.strip():
            raise InputError(f"{option} {item!r}: expected FEATURE=VALUE.")
        out[k.strip()] = v.strip()
    return out


def build_config(args: argparse.Namespace) -> Any:
    """LabelsConfig from a --config file overlaid with explicit command-line options."""
    from extracteval.tasks.labels.semantics import LabelsConfig
    from extracteval.core.normalize import NormalizationConfig
    from extracteval.errors import InputError
    from extracteval.io.config import load_mapping

    opts: dict[str, Any] = {"types": {}, "positive_labels": {}}
    norm: dict[str, Any] = {}
    if args.config:
        raw = load_mapping(args.config)
        allowed = {"types", "positive_labels", "null_tokens", "dayfirst", "zero_division", "features"}
        unknown = sorted(set(raw) - allowed)
        if unknown:
            raise InputError(f"{args.config}: unknown keys {unknown}; expected some of {sorted(allowed)}.")
        for k in ("types", "positive_labels"):
            if k in raw:
                if not isinstance(raw[k], dict):
                    raise InputError(f"{args.config}: {k!r} must be a mapping of feature to value, but found {type(raw[k]).__name__}.")
                opts[k].update({str(f): v for f, v in raw[k].items()})
        if "null_tokens" in raw:
            if not isinstance(raw["null_tokens"], list):
                raise InputError(f"{args.config}: 'null_tokens' must be a list of strings.")
            norm["null_tokens"] = frozenset(str(t).strip().casefold() for t in raw["null_tokens"])
        if "dayfirst" in raw:
            norm["dayfirst"] = bool(raw["dayfirst"])
        if "zero_division" in raw:
            opts["zero_division"] = raw["zero_division"]
    opts["types"].update(_pairs(args.type, "--type"))
    opts["positive_labels"].update(_pairs(args.positive_label, "--positive-label"))
    from extracteval.io.config import normalization_flags  # here: --help loads no pandas

    norm.update(normalization_flags(args))
    if args.zero_division is not None:
        opts["zero_division"] = args.zero_division
    if norm:
        opts["normalization"] = NormalizationConfig(**norm)
    return LabelsConfig(**opts)


def chosen_features(args: argparse.Namespace) -> list[str] | None:
    """The features `--features` (or the --config file's `features`) names; None for every column."""
    if args.features:
        return [f.strip() for f in args.features.split(",") if f.strip()]
    if args.config:
        from extracteval.io.config import load_mapping

        raw = load_mapping(args.config).get("features")
        if raw is not None:
            return [str(f) for f in raw]
    return None
