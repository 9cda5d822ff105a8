"""The `json` task's options → its configuration (`JsonConfig`, similarity backend and options):
one translation for the command line's parsed options (a strategies file, --weights, …) and
evaluator_config keys, which are the same names."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["CONFIG_KEYS", "strategy_file_options", "build_config", "with_judge"]

CONFIG_KEYS = {
    "strategies", "fuzzy_threshold", "semantic_threshold", "fuzzy_scorer", "weights", "clamp", "flatten",
    "null_tokens", "dayfirst", "default_safety", "safety_key", "similarity", "similarity_options",
}


def _parse_weights(text: str) -> dict[str, float]:
    from extracteval.errors import InputError

    out: dict[str, float] = {}
    valid = ("accuracy", "completeness", "hallucination", "safety")
    for part in text.split(","):
        if not part.strip():
            continue
        k, sep, v = part.partition("=")
        k = k.strip()
        if not sep or k not in valid:
            raise InputError(f"--weights {text!r}: expected K=V pairs with K in {', '.join(valid)}, but found {part!r}.")
        try:
            out[k] = float(v)
        except ValueError:
            raise InputError(f"--weights: {k}={v!r} is not a number.") from None
    return out


def strategy_file_options(path: Any) -> tuple[dict[str, Any], dict[str, Any], str, dict[str, Any]]:
    """A strategies file → (JsonConfig options, NormalizationConfig options, similarity backend,
    its options). The file is a plain map {field: strategy} or {strategies: {...}, thresholds,
    weights, similarity…}; `--strategies` and the evaluator's `strategies` (a path) read it alike."""
    from extracteval.core.strategies import parse_strategy_map
    from extracteval.errors import InputError
    from extracteval.io.config import load_mapping, similarity_settings

    opts: dict[str, Any] = {}
    norm: dict[str, Any] = {}
    sim_name, sim_opts = "lexical", {}
    raw = load_mapping(path)
    if "strategies" in raw and isinstance(raw["strategies"], dict):
        unknown = sorted(set(raw) - CONFIG_KEYS)
        if unknown:
            raise InputError(f"{path}: unknown keys {unknown}; expected some of {sorted(CONFIG_KEYS)}.")
        opts["strategies"] = parse_strategy_map(raw["strategies"], source=str(path))
        for k in ("fuzzy_threshold", "semantic_threshold", "fuzzy_scorer", "flatten", "default_safety", "safety_key"):
            if k in raw:
                opts[k] = raw[k]
        if "weights" in raw:
            if not isinstance(raw["weights"], dict):
                raise InputError(f"{path}: 'weights' must be a mapping such as {{\"accuracy\": 0.45}}.")
            bad = sorted(set(raw["weights"]) - {"accuracy", "completeness", "hallucination", "safety"})
            if bad:
                raise InputError(f"{path}: unknown RQS weights {bad}; expected accuracy, completeness, hallucination, safety.")
            opts["weights"] = dict(raw["weights"])
        if "clamp" in raw:
            opts["clamp"] = tuple(raw["clamp"]) if isinstance(raw["clamp"], list) else raw["clamp"]
        if "null_tokens" in raw:
            norm["null_tokens"] = frozenset(str(t).strip().casefold() for t in raw["null_tokens"])
        if "dayfirst" in raw:
            norm["dayfirst"] = bool(raw["dayfirst"])
        sim_name, sim_opts = similarity_settings(raw, source=str(path))
    else:
        opts["strategies"] = parse_strategy_map(raw, source=str(path))
    return opts, norm, sim_name, sim_opts


def build_config(options: Any) -> tuple[Any, str, dict[str, Any]]:
    """(JsonConfig, similarity backend name, backend options) of the task's options —
    evaluator_config keys, or the command line's parsed options under the same names
    (`io.config.options_of`): the one translation for every door. A strategies file (`strategies`
    as a path) is read as `--strategies FILE` reads it (thresholds, weights and similarity backend
    too); the options given beside it override it, and `weights` adds to its weights."""
    from extracteval.core.strategies import parse_strategy_map
    from extracteval.errors import InputError
    from extracteval.io.config import given_options, metadata_columns, options_of, similarity_of, task_config
    from extracteval.tasks.json.semantics import JsonConfig, RQSWeights

    config = options_of(options)
    opts: dict[str, Any] = {}
    norm: dict[str, Any] = {}
    file_sim: tuple[str, dict[str, Any]] = ("lexical", {})
    strategies = config.get("strategies")
    if isinstance(strategies, (str, Path)):
        opts, norm, *sim = strategy_file_options(strategies)
        file_sim = (sim[0], sim[1])
    elif strategies is not None:
        if not isinstance(strategies, Mapping):
            raise InputError(f"evaluator_config `strategies`: expected a mapping {{field: strategy}} or a file path, but got {type(strategies).__name__}.")
        opts["strategies"] = parse_strategy_map(dict(strategies), source="evaluator_config `strategies`")
    opts.update(given_options(config, ("fuzzy_threshold", "semantic_threshold", "fuzzy_scorer", "default_safety", "safety_key")))
    if config.get("flatten") is not None:
        opts["flatten"] = bool(config["flatten"])
    if config.get("clamp") is not None:
        opts["clamp"] = tuple(config["clamp"]) if isinstance(config["clamp"], (list, tuple)) else config["clamp"]
    weights = config.get("weights")
    if isinstance(weights, str):
        weights = _parse_weights(weights)
    elif weights is not None:
        if not isinstance(weights, Mapping):
            raise InputError(f"evaluator_config `weights`: expected a mapping such as {{'accuracy': 0.45}}, but got {type(weights).__name__}.")
        bad = sorted(set(weights) - {"accuracy", "completeness", "hallucination", "safety"})
        if bad:
            raise InputError(f"evaluator_config `weights`: unknown RQS weights {bad}; expected accuracy, completeness, hallucination, safety.")
    if weights is not None:
        opts["weights"] = {**opts.get("weights", {}), **dict(weights)}
    if "weights" in opts:
        opts["weights"] = RQSWeights(**opts["weights"])
    if metadata_columns(config):
        opts["metadata"] = metadata_columns(config)
    sim_name, sim_opts = similarity_of(config, file_sim)
    return task_config(JsonConfig, opts, config, normalization=norm), sim_name, sim_opts


def with_judge(doc: dict[str, Any], backend: Any) -> dict[str, Any]:
    """The LLM judge's calls and failures added to the document's similarity config."""
    judge = getattr(backend, "failure_reasons", None)
    if judge is not None:
        sem = doc["config"]["similarity"]["semantic"]
        doc["config"]["similarity"]["semantic"] = {**sem, "calls": backend.calls, "failures": dict(judge)}
    return doc
