"""What the `structured` and `toolcalls` tasks share below their own scoring: JSON values as flat
leaf keys (`flatten`, `flat_keys`, `leaf_key`) and as canonical text (`canonical_text`), the
extended scores of a similarity or judge backend (`extended_scores`, pass at `PASS_THRESHOLD`),
and a pause of the garbage collector while many small objects are made (`paused_gc`)."""

from __future__ import annotations

import gc
import json
import re
from contextlib import contextmanager
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from dataclasses import dataclass
from typing import Any

import numpy as np

from extracteval.core.normalize import ExactFloat, float_key, int_key, number_text_key

__all__ = ["PASS_THRESHOLD", "leaf_key", "flatten", "flat_keys", "ExtendedScores", "extended_scores", "canonical_text", "paused_gc"]


# Keys of absent leaves start with NUL: they take part in exact match, not in field counting.
_ABSENT_NULL, _ABSENT_OBJ, _ABSENT_ARR = "\x00null", "\x00{}", "\x00[]"


# integers written as their decimal text: the normaliser's key of a number (which writes a power
# of ten beyond this many zeros as `1e+40`)
_PLAIN_INT = 10**40

PASS_THRESHOLD = 0.85  # the OpenAI cookbook's pass mark for similarity and judge scores


_PLAIN_KEY = re.compile(r"^[A-Za-z_$][\w$-]*$")


@lru_cache(maxsize=1 << 16)
def _key_part(key: str) -> str:
    return key if _PLAIN_KEY.match(key) else json.dumps(key, ensure_ascii=False)


def leaf_key(v: Any) -> str:
    """Canonical key of a JSON leaf, type-prefixed: `s:` text, `n:` number by value (`1.0` = `1`),
    `b:` boolean; absent leaves (`null`, `{}`, `[]`, NaN) get NUL-prefixed keys."""
    t = type(v)
    if t is str:
        return "s:" + v
    if t is bool:
        return "b:1" if v else "b:0"
    if t is int:
        return "n:" + str(v) if -_PLAIN_INT < v < _PLAIN_INT else int_key(v)
    if t is float:
        if v != v:
            return _ABSENT_NULL
        if v.is_integer() and abs(v) < 1e16:
            return "n:" + str(int(v))
        return float_key(v)  # type: ignore[return-value]
    if t is ExactFloat:  # a number a float could not hold: by its exact value
        return number_text_key(v.text)  # type: ignore[return-value]
    if v is None:
        return _ABSENT_NULL
    if isinstance(v, dict):
        return _ABSENT_OBJ
    if isinstance(v, (list, tuple)):
        return _ABSENT_ARR
    if isinstance(v, (np.integer, np.floating, np.bool_)):
        return leaf_key(v.item())
    return "s:" + str(v)


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """`{"user": {"name": "Al"}, "items": ["a"]}` → `{"user.name": "Al", "items[0]": "a"}`.

    Iterative (an explicit stack), so nesting depth is unlimited. Empty objects/arrays are kept as
    leaves (`{}` / `[]`) so that the flat map still determines the document; a scalar document
    has the single path `$` (or `prefix`).
    """
    out: dict[str, Any] = {}
    stack: list[tuple[str, Any]] = [(prefix, value)]
    while stack:
        path, v = stack.pop()
        if isinstance(v, dict) and v:
            for k in reversed(list(v)):
                part = _key_part(str(k))
                stack.append((f"{path}.{part}" if path else part, v[k]))
        elif isinstance(v, (list, tuple)) and v:
            for i in range(len(v) - 1, -1, -1):
                stack.append((f"{path}[{i}]", v[i]))
        else:
            out[path or "$"] = v
    return out


class _Hole:
    """Placeholder for a reference list item with no predicted partner: flattens to nothing."""

    def __repr__(self) -> str:
        return "<hole>"


_HOLE = _Hole()


def flat_keys(value: Any, key_fn: Callable[[Any], str | None] = leaf_key, *, present_only: bool = False) -> dict[str, str]:
    """`path → canonical key` for every leaf of a document, in one iterative pass.

    Absent leaves keep their NUL-prefixed key (for exact match) unless `present_only`; holes left
    by optimal list alignment are skipped; a leaf the key function maps to None (a null token) is
    absent.
    """
    if key_fn is leaf_key:
        t = type(value)
        if (t is dict or t is list or t is tuple) and value:
            out: dict[str, str] = {}
            try:
                _flat_walk(out, "", value, present_only)
                return out
            except RecursionError:  # deeper than the recursion limit: the explicit stack below
                pass
    return _flat_keys_iterative(value, key_fn, present_only)


# What a walk reports besides the keys (`_flat_walk`, `_shape_walk`): whether Python's `==`
# between a reference and a parsed output can stand for "same flattened keys".
_REF_BOOL = 1  # a boolean leaf: `True == 1`, so equality needs the type-exact check as well


_REF_NO_SHORTCUT = 2  # a leaf or key `==` may equate with a JSON value of another key (1e16 vs 10**16, Decimal, numpy, subclasses)


_REF_ABSENT = 4  # a null / {} / [] / NaN leaf: the present paths are not all the paths


# (parent path, keys of an object) or (parent path, list length) → (the children's paths, last
# child first, and flags): records of one shape build their path strings once. An object with a
# key that is not a `str` is not cached.
_CHILD_PATHS: dict[tuple[str, Any], tuple[list[str], int]] = {}


_CHILD_PATHS_MAX = 1 << 14  # bounded: documents whose keys never repeat must not fill memory


def _child_paths(shape: tuple[str, Any], v: Any) -> tuple[list[str], int]:
    path = shape[0]
    flags = 0
    if type(v) is dict:
        parts = [_key_part(k) if type(k) is str else _key_part(str(k)) for k in shape[1]]
        child = [path + "." + part for part in reversed(parts)] if path else parts[::-1]
        if any(type(k) is not str for k in shape[1]):
            # not cached: keys of other types can be equal and name different paths (`True == 1`
            # but "True" and "1"), and a key tuple finds any equal one in the cache
            return child, _REF_NO_SHORTCUT
    else:
        child = [f"{path}[{i}]" for i in range(len(v) - 1, -1, -1)]
    if len(_CHILD_PATHS) >= _CHILD_PATHS_MAX:
        _CHILD_PATHS.clear()
    got = _CHILD_PATHS[shape] = (child, flags)
    return got


class _LossyNumber(Exception):
    """A float that orjson may have made of an integer beyond 64 bits (`json` keeps it exact)."""


def _flat_walk(out: dict[str, str], path: str, v: Any, present_only: bool, strict: bool = False) -> int:
    """`flat_keys` with `leaf_key` of a non-empty object or array under `path`, recursively, and
    the `_REF_*` flags of what it met (bar `_REF_IRREGULAR`). The same paths, keys and order as
    the explicit stack: children are visited last first, each container whole before its earlier
    siblings. `strict` raises `_LossyNumber` at a float of magnitude 2**63 or more. The common
    leaf types are keyed inline, exactly as `leaf_key` keys them."""
    if type(v) is dict:
        shape: tuple[str, Any] = (path, tuple(v))
        values: Any = reversed(v.values())
    else:
        shape = (path, len(v))
        values = reversed(v)
    got = _CHILD_PATHS.get(shape)
    if got is None:
        got = _child_paths(shape, v)
    child, flags = got
    for cp, x in zip(child, values):
        tx = type(x)
        if tx is str:
            out[cp] = "s:" + x
        elif tx is dict or tx is list or tx is tuple:
            if x:
                flags |= _flat_walk(out, cp, x, present_only, strict)
            else:
                flags |= _REF_ABSENT
                if not present_only:
                    out[cp] = _ABSENT_OBJ if tx is dict else _ABSENT_ARR
        elif tx is int:
            out[cp] = "n:" + str(x) if -_PLAIN_INT < x < _PLAIN_INT else int_key(x)
            if not -10_000_000_000_000_000 < x < 10_000_000_000_000_000:
                flags |= _REF_NO_SHORTCUT
        elif tx is float:
            if x != x:
                flags |= _REF_ABSENT
                if not present_only:
                    out[cp] = _ABSENT_NULL
            elif x.is_integer() and -1e16 < x < 1e16:
                out[cp] = "n:" + str(int(x))
            else:
                if not -1e16 < x < 1e16:
                    if strict and not -9.2e18 < x < 9.2e18:
                        raise _LossyNumber
                    flags |= _REF_NO_SHORTCUT
                out[cp] = float_key(x)  # type: ignore[assignment]
        elif tx is bool:
            out[cp] = "b:1" if x else "b:0"
            flags |= _REF_BOOL
        elif x is None:
            flags |= _REF_ABSENT
            if not present_only:
                out[cp] = _ABSENT_NULL
        elif x is _HOLE:
            continue
        else:
            k = leaf_key(x)
            flags |= _REF_NO_SHORTCUT
            if k[0] == "\x00":
                flags |= _REF_ABSENT
                if present_only:
                    continue
            out[cp] = k
    return flags


def _flat_keys_iterative(value: Any, key_fn: Callable[[Any], str | None], present_only: bool) -> dict[str, str]:
    out: dict[str, str] = {}
    stack: list[tuple[str, Any]] = [("", value)]
    pop, push = stack.pop, stack.append
    exact_keys = key_fn is leaf_key
    while stack:
        path, v = pop()
        t = type(v)
        if t is dict and v:
            for k, x in v.items():
                part = _key_part(k) if type(k) is str else _key_part(str(k))
                push((path + "." + part if path else part, x))
        elif (t is list or t is tuple) and v:
            for i, x in enumerate(v):
                push((f"{path}[{i}]", x))
        elif t is str and exact_keys:
            out[path or "$"] = "s:" + v
        elif v is _HOLE:
            continue
        else:
            k = leaf_key(v)
            if k[0] != "\x00" and not exact_keys:
                k = key_fn(v) or _ABSENT_NULL
            if present_only and k[0] == "\x00":
                continue
            out[path or "$"] = k
    return out


def _canonical(flat: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((p, leaf_key(v)) for p, v in flat.items() if v is not _HOLE))


@dataclass(frozen=True, kw_only=True)
class ExtendedScores:
    """Mean score and pass rate (score ≥ threshold) of one similarity / judge backend."""

    backend: str
    mean: float
    pass_rate: float
    threshold: float
    scored: int

    def to_dict(self) -> dict[str, Any]:
        return {"backend": self.backend, "mean": self.mean, "pass_rate": self.pass_rate, "threshold": self.threshold, "scored": self.scored}


def extended_scores(backend: Any, predicted: Sequence[str], reference: Sequence[str], *, threshold: float = PASS_THRESHOLD) -> tuple[ExtendedScores, np.ndarray]:
    """Score (prediction text, reference text) pairs with any `SimilarityBackend`, one batched call.

    Scores must lie in [0, 1] (an LLM judge's 1–7 rubric divided by 7); values outside are
    clipped and NaN counts as 0 (a judge reply that could not be read).
    """
    if len(predicted) != len(reference):
        raise ValueError("predicted and reference texts must have equal length")
    if not predicted:
        return ExtendedScores(backend=str(getattr(backend, "name", type(backend).__name__)), mean=0.0, pass_rate=0.0, threshold=threshold, scored=0), np.zeros(0)
    s = np.asarray(backend.similarity(list(predicted), list(reference)), dtype=np.float64).reshape(-1)
    if s.shape[0] != len(predicted):
        raise ValueError(f"similarity backend {getattr(backend, 'name', backend)!r} returned {s.shape[0]} scores for {len(predicted)} pairs")
    s = np.clip(np.nan_to_num(s, nan=0.0), 0.0, 1.0)
    return (
        ExtendedScores(
            backend=str(getattr(backend, "name", type(backend).__name__)),
            mean=float(s.mean()),
            pass_rate=float((s >= threshold - 1e-12).mean()),
            threshold=threshold,
            scored=int(s.shape[0]),
        ),
        s,
    )


def canonical_text(value: Any) -> str:
    """Sorted-key compact JSON of a value (any depth); the text similarity backends compare."""
    try:
        return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    except (RecursionError, TypeError, ValueError):
        return json.dumps(_canonical(flatten(value)), ensure_ascii=False)


_EXAMPLES = 5  # invalid outputs a result shows


@contextmanager
def paused_gc() -> Any:
    """Pause the cyclic garbage collector around a scoring loop.

    The loop allocates millions of small acyclic objects (parsed JSON, AST nodes, counts) and
    keeps the per-record results; generation-2 collections then rescan the whole growing heap
    again and again, costing a third of the run. Nothing in the loop creates cycles.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
