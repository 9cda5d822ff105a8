"""The `json` task's options: a strategies file and the command line's flags → its configuration
(`JsonConfig`, similarity backend and options). The command, the MLflow adapter (evaluate,
`evaluator_config`, rescore) and the streaming engines read them here, the same way."""

from __future__ import annotations

import argparse
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


def build_config(args: argparse.Namespace) -> tuple[Any, str, dict[str, Any]]:
    """JsonConfig, similarity backend name and its options from --strategies overlaid with flags."""
    from extracteval.tasks.json.semantics import JsonConfig, RQSWeights
    from extracteval.core.normalize import NormalizationConfig

    opts: dict[str, Any] = {}
    norm: dict[str, Any] = {}
    sim_name, sim_opts = "lexical", {}
    if args.strategies:
        opts, norm, sim_name, sim_opts = strategy_file_options(args.strategies)
    for flag, key in (("fuzzy_threshold", "fuzzy_threshold"), ("semantic_threshold", "semantic_threshold"),
                      ("default_safety", "default_safety"), ("safety_key", "safety_key")):
        v = getattr(args, flag, None)
        if v is not None:
            opts[key] = v
    if getattr(args, "flatten", False):
        opts["flatten"] = True
    if getattr(args, "weights", None):
        w = dict(opts.get("weights", {}))
        w.update(_parse_weights(args.weights))
        opts["weights"] = w
    if "weights" in opts:
        opts["weights"] = RQSWeights(**opts["weights"])
    from extracteval.io.config import normalization_flags  # here: --help loads no pandas

    norm.update(normalization_flags(args))
    if norm:
        opts["normalization"] = NormalizationConfig(**norm)
    if getattr(args, "similarity", None):
        sim_name = args.similarity
    if getattr(args, "embedding_model", None):
        sim_opts["model_path"] = args.embedding_model
    if getattr(args, "judge_base_url", None):
        sim_opts["base_url"] = args.judge_base_url
    if getattr(args, "judge_model", None):
        sim_opts["model"] = args.judge_model
    return JsonConfig(**opts), sim_name, sim_opts


def with_judge(doc: dict[str, Any], backend: Any) -> dict[str, Any]:
    """The LLM judge's calls and failures added to the document's similarity config."""
    judge = getattr(backend, "failure_reasons", None)
    if judge is not None:
        sem = doc["config"]["similarity"]["semantic"]
        doc["config"]["similarity"]["semantic"] = {**sem, "calls": backend.calls, "failures": dict(judge)}
    return doc
