"""The `labels` task's options → `LabelsConfig` and the features to score: one translation for
the command line's parsed options (a --config file, --type, --positive-label, …) and
evaluator_config keys, which are the same names."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["build_config", "chosen_features"]


def _pairs(value: Any, option: str) -> dict[str, Any]:
    """A {feature: value} option: a mapping (evaluator_config, a --config file), or the command
    line's repeated FEATURE=VALUE items."""
    from extracteval.errors import InputError

    if isinstance(value, Mapping):
        return {str(k): v for k, v in value.items()}
    if not option.startswith("--"):
        raise InputError(f"{option}: expected a mapping of feature to value, but got {type(value).__name__}.")
    out: dict[str, Any] = {}
    for item in value:
        k, sep, v = str(item).partition("=")
        if not sep or not k.strip():
            raise InputError(f"{option} {item!r}: expected FEATURE=VALUE.")
        out[k.strip()] = v.strip()
    return out


_FILE_KEYS = ("types", "positive_labels", "labels", "multi_label", "null_tokens", "dayfirst", "zero_division", "features")


def _multi_label(value: Any, option: str) -> dict[str, Any]:
    """The multi-label features: a mapping {feature: separator or null} (a list of features: each
    with the default separator), or the command line's repeated FEATURE[=SEP] items."""
    from extracteval.errors import InputError

    if isinstance(value, Mapping):
        return {str(k): v for k, v in value.items()}
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        raise InputError(f"{option}: expected a mapping of feature to separator (or null), but got {value!r}.")
    out: dict[str, Any] = {}
    for item in value:
        k, sep, v = str(item).partition("=") if option.startswith("--") else (str(item), "", "")
        if not k.strip():
            raise InputError(f"{option} {item!r}: expected FEATURE or FEATURE=SEP.")
        out[k.strip()] = v if sep else None
    return out


def _config_file(path: str) -> dict[str, Any]:
    """The --config file: its keys checked, as the options they stand for."""
    from extracteval.errors import InputError
    from extracteval.io.config import load_mapping

    raw = load_mapping(path)
    unknown = sorted(set(raw) - set(_FILE_KEYS))
    if unknown:
        raise InputError(f"{path}: unknown keys {unknown}; expected some of {sorted(_FILE_KEYS)}.")
    for k in ("types", "positive_labels", "labels"):
        if k in raw and not isinstance(raw[k], dict):
            raise InputError(f"{path}: {k!r} must be a mapping of feature to value, but found {type(raw[k]).__name__}.")
    if "multi_label" in raw and not isinstance(raw["multi_label"], (dict, list)):
        raise InputError(f"{path}: 'multi_label' must be a mapping of feature to separator (or null), but found {type(raw['multi_label']).__name__}.")
    if "null_tokens" in raw and not isinstance(raw["null_tokens"], list):
        raise InputError(f"{path}: 'null_tokens' must be a list of strings.")
    return raw


def build_config(options: Any) -> Any:
    """LabelsConfig from the task's options — evaluator_config keys, or the command line's parsed
    options under the same names (`io.config.options_of`): the one translation for every door.
    A --config file (`config`) is read first; the options given beside it add to its `types`,
    `positive_labels`, `labels` and `multi_label` and override its other keys."""
    from extracteval.io.config import given_options, metadata_columns, options_of, task_config
    from extracteval.tasks.labels.semantics import LabelsConfig

    import argparse

    config = options_of(options)
    command_line = isinstance(options, argparse.Namespace)
    base = _config_file(config["config"]) if config.get("config") else {}
    opts: dict[str, Any] = {}
    for key, flag in (("types", "--type"), ("positive_labels", "--positive-label"), ("labels", "--labels")):
        given = config.get(key)
        option = flag if command_line else f"evaluator_config `{key}`"
        from_flags = command_line and given is not None and not isinstance(given, Mapping)
        given_pairs = _pairs(given, option) if given is not None else {}
        if key == "labels" and from_flags:  # declared classes on the command line: FEATURE=A,B,C (a list in a file or mapping)
            given_pairs = {f: [c.strip() for c in v.split(",") if c.strip()] for f, v in given_pairs.items()}
        opts[key] = {**_pairs(base.get(key) or {}, key), **given_pairs}
    opts["classes"] = opts.pop("labels")
    given = config.get("multi_label")
    opts["multi_label"] = {**_multi_label(base.get("multi_label") or {}, f"{config['config']}: multi_label" if base else "multi_label"),
                           **(_multi_label(given, "--multi-label" if command_line else "evaluator_config `multi_label`") if given else {})}
    opts.update(given_options({**base, **config}, ("zero_division",)))
    if metadata_columns(config):
        opts["metadata"] = metadata_columns(config)
    return task_config(LabelsConfig, opts, {**{k: base[k] for k in ("null_tokens", "dayfirst") if k in base}, **config})


def chosen_features(options: Any) -> list[str] | None:
    """The features the options name (`--features a,b`, evaluator_config `features`, else the
    --config file's `features`); None for every column."""
    from extracteval.io.config import listed, load_mapping, options_of

    config = options_of(options)
    given = listed(config.get("features"))
    if given is None and config.get("config"):
        raw = load_mapping(config["config"]).get("features")
        if raw is not None:
            return [str(f) for f in raw]
    return given
