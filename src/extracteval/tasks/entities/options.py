"""The `entities` task's options: a --weights file and the command line's flags → `EntitiesConfig`,
the similarity backend and its options; the judge's counts in a result; the backend of a streamed
run. The command and the MLflow adapter (evaluate, rescore, the streaming engines) read them here."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["build_config", "experiment_args", "judge_counts", "streaming_similarity"]

_WEIGHTS_KEYS = {"weights", "strategies", "types", "key_fields", "features", "match_threshold", "fuzzy_threshold",
                 "semantic_threshold", "fuzzy_scorer", "null_tokens", "dayfirst", "zero_division", "similarity",
                 "similarity_options"}


def _csv(value: str | None) -> list[str] | None:
    if value is None:
        return None
    return [x.strip() for x in value.split(",") if x.strip()]


def build_config(args: argparse.Namespace) -> tuple[Any, str, dict[str, Any]]:
    """EntitiesConfig, similarity backend name and its options (as `score json`) from --weights /
    --strategies files overlaid with explicit options."""
    from extracteval.tasks.entities.semantics import EntitiesConfig
    from extracteval.core.normalize import NormalizationConfig
    from extracteval.core.strategies import parse_strategy_map
    from extracteval.errors import InputError
    from extracteval.io.config import load_mapping, similarity_settings

    opts: dict[str, Any] = {}
    norm: dict[str, Any] = {}
    sim_name, sim_opts = "lexical", {}
    if args.weights:
        raw = load_mapping(args.weights)
        structured = (any(isinstance(v, (dict, list)) for v in raw.values())
                      or bool(set(raw) & {"match_threshold", "fuzzy_threshold", "semantic_threshold"})
                      or isinstance(raw.get("similarity"), str))
        if structured:
            unknown = sorted(set(raw) - _WEIGHTS_KEYS)
            if unknown:
                raise InputError(f"{args.weights}: unknown keys {unknown}; expected some of {sorted(_WEIGHTS_KEYS)}.")
            for k in ("weights", "types"):
                if k in raw and not isinstance(raw[k], dict):
                    raise InputError(f"{args.weights}: {k!r} must be a mapping of field to value, but found {type(raw[k]).__name__}.")
            if "weights" in raw:
                opts["weights"] = raw["weights"]
            if "types" in raw:
                opts["types"] = raw["types"]
            if "strategies" in raw:
                opts["strategies"] = parse_strategy_map(raw["strategies"], source=f"{args.weights}: strategies")
            for k in ("key_fields", "features"):
                if k in raw:
                    if not isinstance(raw[k], list):
                        raise InputError(f"{args.weights}: {k!r} must be a list of field names, but found {type(raw[k]).__name__}.")
                    opts[k] = [str(x) for x in raw[k]]
            for k in ("match_threshold", "fuzzy_threshold", "semantic_threshold", "fuzzy_scorer", "zero_division"):
                if k in raw:
                    opts[k] = raw[k]
            sim_name, sim_opts = similarity_settings(raw, source=str(args.weights))
            if "null_tokens" in raw:
                norm["null_tokens"] = frozenset(str(t).strip().casefold() for t in raw["null_tokens"])
            if "dayfirst" in raw:
                norm["dayfirst"] = bool(raw["dayfirst"])
        else:
            opts["weights"] = raw
    if args.strategies:
        opts["strategies"] = {**opts.get("strategies", {}), **parse_strategy_map(load_mapping(args.strategies), source=str(args.strategies))}
    if args.key_fields is not None:
        opts["key_fields"] = _csv(args.key_fields)
    if args.features is not None:
        opts["features"] = _csv(args.features)
    for k in ("match_threshold", "fuzzy_threshold", "semantic_threshold", "zero_division"):
        v = getattr(args, k, None)
        if v is not None:
            opts[k] = v
    from extracteval.io.config import normalization_flags  # here: --help loads no pandas

    norm.update(normalization_flags(args))
    if norm:
        opts["normalization"] = NormalizationConfig(**norm)
    if getattr(args, "similarity", None):
        sim_name = args.similarity
    for flag, key in (("embedding_model", "model_path"), ("judge_base_url", "base_url"), ("judge_model", "model")):
        if getattr(args, flag, None):
            sim_opts[key] = getattr(args, flag)
    try:
        return EntitiesConfig(**opts), sim_name, sim_opts
    except InputError as e:
        raise InputError(f"{args.weights}: {e}" if args.weights and "weight" in str(e) else str(e)) from None


def judge_counts(doc: dict[str, Any], backend: Any) -> None:
    """An LLM judge's calls and failure reasons, beside the backend in the result's config."""
    reasons = getattr(backend, "failure_reasons", None)
    if reasons is not None:
        doc["config"]["similarity"]["semantic"]["calls"] = backend.calls
        doc["config"]["similarity"]["semantic"]["failure_reasons"] = dict(reasons)


def streaming_similarity(sim_name: str, sim_opts: dict[str, Any]) -> Any:
    """The SEMANTIC backend of a streamed run, refusing those whose calls would differ chunk by chunk."""
    from extracteval.core.similarity import get_similarity
    from extracteval.errors import InputError

    if sim_name in ("embedding", "llm_judge"):
        raise InputError(
            f"--similarity {sim_name} with --chunk-size/--workers/--engine spark: its calls would be made chunk by chunk, not once over the "
            "whole input; drop those options, or use --similarity lexical or fuzzy (documentation: Scale)."
        )
    return get_similarity(sim_name, **sim_opts)


def experiment_args(folder: Path, spec: Mapping[str, Any]) -> argparse.Namespace:
    """The `score entities` options of one `experiments/<name>/experiment.yaml` (the demo's)."""
    return argparse.Namespace(
        truth=str(folder / spec["truth"]),
        predictions=[f"{name}={folder / path}" for name, path in spec["predictions"].items()],
        key_fields=",".join(spec["key_fields"]) if spec.get("key_fields") else None,
        weights=str(folder / spec["weights"]) if spec.get("weights") else None,
        strategies=str(folder / spec["strategies"]) if spec.get("strategies") else None,
        features=None, match_threshold=None, fuzzy_threshold=None, semantic_threshold=None,
        similarity=spec.get("similarity"), embedding_model=None, judge_base_url=None, judge_model=None,
        entities_key=spec.get("entities_key", "entities"), id_column=spec.get("id_column", "id"),
        null_tokens=None, dayfirst=bool(spec.get("dayfirst", False)), zero_division=None,
    )
