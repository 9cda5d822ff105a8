"""The `entities` task's options → `EntitiesConfig`, the similarity backend and its options (one
translation for the command line's parsed options and evaluator_config keys, which are the same
names); the judge's counts in a result; the backend of a streamed run."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["build_config", "experiment_args", "judge_counts", "streaming_similarity"]

_WEIGHTS_KEYS = {"weights", "strategies", "types", "key_fields", "features", "match_threshold", "fuzzy_threshold",
                 "semantic_threshold", "fuzzy_scorer", "null_tokens", "dayfirst", "zero_division", "similarity",
                 "similarity_options"}


def _weights_file(path: str) -> tuple[dict[str, Any], dict[str, Any], tuple[str, dict[str, Any]]]:
    """A --weights file: a plain map {field: weight}, or the structured form holding the other
    options too (weights, types, strategies, key_fields, features, thresholds, similarity, null
    tokens) → (EntitiesConfig options, normaliser options, similarity backend)."""
    from extracteval.core.strategies import parse_strategy_map
    from extracteval.errors import InputError
    from extracteval.io.config import load_mapping, similarity_settings

    raw = load_mapping(path)
    structured = (any(isinstance(v, (dict, list)) for v in raw.values())
                  or bool(set(raw) & {"match_threshold", "fuzzy_threshold", "semantic_threshold"})
                  or isinstance(raw.get("similarity"), str))
    if not structured:
        return {"weights": raw}, {}, ("lexical", {})
    unknown = sorted(set(raw) - _WEIGHTS_KEYS)
    if unknown:
        raise InputError(f"{path}: unknown keys {unknown}; expected some of {sorted(_WEIGHTS_KEYS)}.")
    opts: dict[str, Any] = {}
    for k in ("weights", "types"):
        if k in raw:
            if not isinstance(raw[k], dict):
                raise InputError(f"{path}: {k!r} must be a mapping of field to value, but found {type(raw[k]).__name__}.")
            opts[k] = raw[k]
    if "strategies" in raw:
        opts["strategies"] = parse_strategy_map(raw["strategies"], source=f"{path}: strategies")
    for k in ("key_fields", "features"):
        if k in raw:
            if not isinstance(raw[k], list):
                raise InputError(f"{path}: {k!r} must be a list of field names, but found {type(raw[k]).__name__}.")
            opts[k] = [str(x) for x in raw[k]]
    opts.update({k: raw[k] for k in ("match_threshold", "fuzzy_threshold", "semantic_threshold", "fuzzy_scorer", "zero_division") if k in raw})
    norm: dict[str, Any] = {}
    if "null_tokens" in raw:
        norm["null_tokens"] = frozenset(str(t).strip().casefold() for t in raw["null_tokens"])
    if "dayfirst" in raw:
        norm["dayfirst"] = bool(raw["dayfirst"])
    return opts, norm, similarity_settings(raw, source=str(path))


def build_config(options: Any) -> tuple[Any, str, dict[str, Any]]:
    """(EntitiesConfig, similarity backend name, backend options) of the task's options —
    evaluator_config keys, or the command line's parsed options under the same names
    (`io.config.options_of`): the one translation for every door. `weights` and `strategies` may
    name files: a weights file is read with every option it holds, and the options given beside
    it override them (strategies add to its strategies)."""
    from extracteval.core.strategies import parse_strategy_map
    from extracteval.errors import InputError
    from extracteval.io.config import given_options, load_mapping, options_of, similarity_of, task_config
    from extracteval.tasks.entities.semantics import EntitiesConfig

    config = options_of(options)
    opts: dict[str, Any] = {}
    norm: dict[str, Any] = {}
    file_sim: tuple[str, dict[str, Any]] = ("lexical", {})
    weights = config.get("weights")
    weights_file = str(weights) if isinstance(weights, (str, Path)) else None
    if weights_file is not None:
        opts, norm, file_sim = _weights_file(weights_file)
    elif weights is not None:
        if not isinstance(weights, Mapping):
            raise InputError(f"evaluator_config `weights`: expected a mapping of field to value, but got {type(weights).__name__}.")
        opts["weights"] = dict(weights)
    for k in ("strategies", "types"):
        v = config.get(k)
        if v is None:
            continue
        source = f"evaluator_config `{k}`"
        if isinstance(v, (str, Path)) and k == "strategies":
            source, raw = str(v), load_mapping(v)
            v = raw[k] if isinstance(raw.get(k), dict) else raw
        if not isinstance(v, Mapping):
            raise InputError(f"{source}: expected a mapping of field to value, but got {type(v).__name__}.")
        given = parse_strategy_map(dict(v), source=source) if k == "strategies" else dict(v)
        opts[k] = {**opts.get(k, {}), **given}
    for k in ("features", "key_fields"):
        v = config.get(k)
        if v is not None:
            opts[k] = [x.strip() for x in v.split(",") if x.strip()] if isinstance(v, str) else list(v)
    opts.update(given_options(config, ("default_strategy", "match_threshold", "fuzzy_threshold", "semantic_threshold", "fuzzy_scorer", "zero_division")))
    sim_name, sim_opts = similarity_of(config, file_sim)
    try:
        return task_config(EntitiesConfig, opts, config, normalization=norm), sim_name, sim_opts
    except InputError as e:
        raise InputError(f"{weights_file}: {e}" if weights_file and "weight" in str(e) else str(e)) from None


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
        null_tokens=None, dayfirst=bool(spec.get("dayfirst", False)), zero_division=spec.get("zero_division"),
    )
