"""Configuration files (JSON or YAML, loaded safely) and `NAME=FILE` specs."""

from __future__ import annotations

import json
import re
from pathlib import Path
from collections.abc import Mapping, Sequence
from typing import Any

from extracteval.errors import InputError
from extracteval.io.text_files import read_text

SIZE = "@size"  # the built-in slicing (`--slice-by @size`): each record's size as its task counts it

__all__ = ["load_mapping", "parse_model_spec", "models_in_file", "safe_file_name", "similarity_settings", "similarity_of", "options_of", "given_options", "task_config"]


def load_mapping(path: str | Path) -> dict[str, Any]:
    """A JSON or YAML file whose top level is a mapping. YAML is read with `safe_load` only."""
    p = Path(path)
    text = read_text(p)
    if not text.strip():
        raise InputError(f"{p}: the file is empty; expected a mapping such as {{\"party\": \"FUZZY\"}}.")
    if p.suffix.lower() in (".yaml", ".yml"):
        import yaml

        try:
            obj = yaml.safe_load(text)
            repeated = _repeated_yaml_key(yaml.compose(text, Loader=yaml.SafeLoader))
        except yaml.YAMLError as e:
            raise InputError(f"{p}: not valid YAML ({e}).") from None
        if repeated is not None:
            raise InputError(f"{p}: line {repeated[1]}: the key {repeated[0]!r} appears twice in one mapping; give each key once.")
    else:
        try:
            obj = json.loads(text, object_pairs_hook=_unique_pairs)
        except _RepeatedKey as e:
            raise InputError(f"{p}: the key {e.key!r} appears twice in one object; give each key once.") from None
        except ValueError as e:
            raise InputError(f"{p}: not valid JSON ({e}); YAML files need a .yaml or .yml suffix.") from None
    if not isinstance(obj, dict):
        raise InputError(f"{p}: expected a mapping at the top level, but found {type(obj).__name__}.")
    return obj


class _RepeatedKey(Exception):
    def __init__(self, key: Any) -> None:
        super().__init__(key)
        self.key = key


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise _RepeatedKey(k)
        out[k] = v
    return out


def _repeated_yaml_key(root: Any) -> tuple[str, int] | None:
    """(a key a mapping of the YAML node tree names twice, its line), or None. YAML parsers keep
    the last value without a word; a merge (`<<`) may override keys, as YAML says."""
    import yaml

    stack = [root] if root is not None else []
    while stack:
        node = stack.pop()
        if isinstance(node, yaml.MappingNode):
            seen: set[str] = set()
            for key_node, value_node in node.value:
                if isinstance(key_node, yaml.ScalarNode) and key_node.tag != "tag:yaml.org,2002:merge":
                    if key_node.value in seen:
                        return key_node.value, key_node.start_mark.line + 1
                    seen.add(key_node.value)
                stack.extend((key_node, value_node))
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
    return None


def similarity_settings(raw: Mapping[str, Any], *, source: str, default: str = "lexical") -> tuple[str, dict[str, Any]]:
    """The similarity backend name and its options from a config mapping (a `--strategies` or
    `--weights` file, or an `evaluator_config`): keys `similarity` and `similarity_options`.

    API keys are refused here: configs get logged as params and committed to repositories; the
    judge's key comes from `EXTRACTEVAL_JUDGE_API_KEY` only.
    """
    name = str(raw.get("similarity") or default)
    options = raw.get("similarity_options")
    if options is None:
        return name, {}
    if not isinstance(options, Mapping):
        raise InputError(f"{source}: 'similarity_options' must be a mapping, but found {type(options).__name__}.")
    if "api_key" in options:
        raise InputError(f"{source}: do not put API keys in configs; set EXTRACTEVAL_JUDGE_API_KEY instead.")
    return name, dict(options)


def similarity_of(config: Mapping[str, Any], base: tuple[str, Mapping[str, Any]] = ("lexical", {}), *, source: str = "evaluator_config",
                  ) -> tuple[str, dict[str, Any]]:
    """The similarity backend (name, options) of a task's options: `base` (a strategies or weights
    file's), its name replaced by `similarity` (the file's options kept only for the file's
    backend), its options by `similarity_options` (checked as `similarity_settings` checks them),
    and the command line's --embedding-model, --judge-base-url and --judge-model set as the
    backend's `model_path`, `base_url`, `model`."""
    name, opts = str(base[0]), dict(base[1])
    if config.get("similarity") and str(config["similarity"]) != name:
        name, opts = str(config["similarity"]), {}
    if config.get("similarity_options") is not None:
        opts = similarity_settings(config, source=source)[1]
    for flag, key in (("embedding_model", "model_path"), ("judge_base_url", "base_url"), ("judge_model", "model")):
        if config.get(flag):
            opts[key] = config[flag]
    return name, opts


def logged_similarity(described: Mapping[str, Any] | None) -> dict[str, Any]:
    """The config keys `similarity` and `similarity_options` that rebuild a backend from its
    description in a logged result (`describe_similarity`): its name, and those described
    values that are options of the backend (not its kind, description or call counts)."""
    import dataclasses

    from extracteval.core.similarity import SIMILARITY_BACKENDS

    if not described or not described.get("name"):
        return {}
    name = str(described["name"])
    cls = SIMILARITY_BACKENDS.get(name)
    if cls is None or not dataclasses.is_dataclass(cls):
        return {"similarity": name}
    settable = {f.name for f in dataclasses.fields(cls) if not f.name.startswith("_")} - {"name", "kind", "failures", "calls", "failure_reasons"}
    options = {k: v for k, v in described.items() if k in settable}
    return {"similarity": name, **({"similarity_options": options} if options else {})}


def parse_model_spec(spec: Any) -> tuple[str | None, Any]:
    """`NAME=FILE` → (NAME, FILE); a bare `FILE` → (None, FILE). A (NAME, source) pair — how
    the Python API passes a table held in memory (`io.memory.InMemoryTable`) — is taken as it is."""
    if isinstance(spec, tuple):
        return str(spec[0]), spec[1]
    if not isinstance(spec, str):  # a path or a table in memory given without a name
        return None, spec
    if "=" in spec:
        name, _, file = spec.partition("=")
        name = name.strip()
        if not name:
            raise InputError(f"--predictions {spec!r}: the model name before '=' is empty; expected NAME=FILE.")
        if not file:
            raise InputError(f"--predictions {spec!r}: the file after '=' is empty; expected NAME=FILE.")
        return name, Path(file)
    return None, Path(spec)


def models_in_file(name: str | None, path: Path, keys: Any, names: dict[str, str], *, column: str = "`model` column") -> list[tuple[str, str]]:
    """(model name, key) of each model a predictions file holds: `keys` are the values of its
    `model` column ("" when it has none); one model is named NAME (from NAME=FILE) or after the
    file, several after their `model` values. Each name is recorded in `names` (name → file) and
    must be new there."""
    keys = list(keys)
    if len(keys) > 1 or "" not in keys:
        if name is not None and len(keys) > 1:
            raise InputError(
                f"{path}: holds several models ({', '.join(sorted(keys))}) in its {column}; give it without a name to score "
                "them all (`--predictions FILE`, or in Python the predictions alone instead of {{name: predictions}}), or split it."
            )
        items = [(name or m, m) for m in sorted(keys)]
    else:
        items = [(name or path.stem, "")]
    for model_name, _ in items:
        if model_name in names:
            raise InputError(f"model {model_name!r} is given twice ({names[model_name]} and {path}); each model needs a unique NAME.")
        names[model_name] = str(path)
    return items


def model_files(specs: Sequence[str]) -> dict[str, Path]:
    """`--predictions` specs (`NAME=FILE`, or `FILE` named by its stem) → model name → file, in
    the order given; a name given twice is an InputError naming both files."""
    models: dict[str, Path] = {}
    for spec in specs:
        name, path = parse_model_spec(spec)
        name = name or path.stem
        if name in models:
            raise InputError(f"model {name!r} is given twice ({models[name]} and {path}); each model needs a unique NAME.")
        models[name] = path
    return models


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def safe_file_name(name: str, *, max_len: int = 120) -> str:
    """A file name derived from user text: no path separators, no leading dots, bounded length."""
    s = _UNSAFE.sub("_", name).strip("._") or "unnamed"
    return s[:max_len]


def distinct_file_name(name: str, *, max_len: int = 120) -> str:
    """`safe_file_name`, made distinct for every `name`: a name that is not a safe file name as
    it is (`a/b`, which would become `a_b`) gets a digest of itself appended (`a_b-1c9f0e2d`), so
    that two names differing only by characters a file name cannot hold never share a file."""
    import hashlib

    s = safe_file_name(name, max_len=max_len)
    if s == name:
        return s
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{s[: max_len - 9]}-{digest}"


def normalization_keys(config: Mapping[str, Any]) -> dict[str, Any]:
    """The normalisation options of an `evaluator_config`-style mapping: `null_tokens` (a list or
    comma-separated text; stripped, casefolded) and `dayfirst`, where given."""
    norm: dict[str, Any] = {}
    if config.get("null_tokens") is not None:
        tokens = config["null_tokens"]
        if isinstance(tokens, str):
            tokens = tokens.split(",")
        norm["null_tokens"] = frozenset(str(t).strip().casefold() for t in tokens if str(t).strip())
    if config.get("dayfirst") is not None:
        norm["dayfirst"] = bool(config["dayfirst"])
    return norm



def options_of(options: Any) -> Mapping[str, Any]:
    """The one options mapping a task's `build_config` reads: evaluator_config keys as given,
    or the command line's parsed options, whose destinations are the same names — a flag not
    given (None, False for an on/off flag, empty text — but `--null-tokens ''`, no null tokens) is
    absent, `--no-ci` is `bootstrap: 0` and `--resamples N` is `bootstrap: N`."""
    import argparse

    if not isinstance(options, argparse.Namespace):
        return options
    opts = {k: v for k, v in vars(options).items()
            if not k.startswith("_") and v is not None and v is not False and (v != "" or k == "null_tokens")}
    resamples = opts.pop("resamples", None)
    if opts.pop("no_ci", False):
        opts["bootstrap"] = 0
    elif resamples is not None:
        opts["bootstrap"] = resamples
    return opts


def slicings(value: Any) -> tuple[tuple[str, ...], ...]:
    """`--slice-by` / evaluator_config `slice_by` as slicings, each a tuple of columns: a name,
    `a,b` for crossed columns, or a list of those (a list inside the list: crossed columns)."""
    raw = value or ()
    if isinstance(raw, str):
        raw = [raw]
    out = []
    for v in raw:
        cols = tuple(str(c).strip() for c in (v if isinstance(v, (list, tuple)) else str(v).split(",")) if str(c).strip())
        if cols:
            out.append(cols)
    return tuple(out)


def metadata_columns(options: Any) -> tuple[str, ...]:
    """The ground-truth columns the options make record metadata (`--slice-by`, `--cluster-by`,
    evaluator_config `slice_by`, `cluster_by`), in the order named, but the built-in `@size`: they
    describe a record and are not scored. None when the metadata comes from a file (or table) of
    its own (`--metadata FILE`; an empty name is none): the ground truth is then scored whole."""
    config = options_of(options)
    if config.get("metadata") is not None and not (isinstance(config["metadata"], str) and not config["metadata"]):
        return ()
    names = dict.fromkeys(c for by in slicings(config.get("slice_by")) for c in by)
    if config.get("cluster_by"):
        names[str(config["cluster_by"]).strip()] = None
    names.pop(SIZE, None)  # the built-in size slice is no column of the truth
    return tuple(names)


def listed(value: Any) -> list[str] | None:
    """A list option (`fields`, `features`) given as a list or as comma-separated text
    (`--fields a,b`); None when not given or empty."""
    if value is None:
        return None
    items = value.split(",") if isinstance(value, str) else list(value)
    out = [str(v).strip() for v in items if str(v).strip()]
    return out or None


def given_options(config: Mapping[str, Any], keys: Sequence[str], *, numbers: Sequence[str] = ()) -> dict[str, Any]:
    """The evaluator_config options among `keys` that are given (not None); those in `numbers`
    read as floats, a clear error naming the option otherwise."""
    from extracteval.errors import InputError

    opts = {k: config[k] for k in keys if config.get(k) is not None}
    for k in numbers:
        if k in opts:
            try:
                opts[k] = float(opts[k])
            except (TypeError, ValueError):
                raise InputError(f"evaluator_config `{k}`: expected a number in [0, 1], but got {opts[k]!r}.") from None
    return opts


def task_config(cls: Any, opts: dict[str, Any], config: Mapping[str, Any] | None = None, *, normalization: Mapping[str, Any] | None = None,
                errors: tuple[type[Exception], ...] = (TypeError,), where: str = "evaluator_config") -> Any:
    """A task's configuration `cls(**opts)` from evaluator_config options. With `config`, its
    normaliser keys (`null_tokens`, `dayfirst`, …) over `normalization` (those read from a
    strategies file) become `opts["normalization"]`. A wrongly typed option is an `InputError`
    (`where`: what its message names as the options' source)."""
    from extracteval.errors import InputError

    if config is not None:
        from extracteval.core.normalize import NormalizationConfig
        from extracteval.io.config import normalization_keys

        norm = {**(normalization or {}), **normalization_keys(config)}
        if norm:
            opts["normalization"] = NormalizationConfig(**norm)
    try:
        return cls(**opts)
    except errors as e:
        raise InputError(f"{where}: {e}") from None
