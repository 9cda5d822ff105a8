"""The `json` task's paths and canonical keys: an object flattened into (path, value) leaves, the path and key
tables that code them, and the strategy each path gets (configured, or detected from the truth value)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from itertools import repeat
from typing import Any

import numpy as np

from extracteval.core.normalize import Normalizer, float_key, int_key
from extracteval.core.strategies import Strategy


_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")


_INDEX = re.compile(r"\[\d+\]")


def _segment(key: Any, cache: dict[Any, str]) -> str:
    s = cache.get(key)
    if s is None:
        k = str(key)
        s = cache[key] = k if k and not any(c in k for c in '.[]"') else "[" + json.dumps(k, ensure_ascii=False) + "]"
    return s


def _join(prefix: str, seg: str) -> str:
    if not prefix:
        return seg
    return prefix + seg if seg[0] == "[" else prefix + "." + seg


def flatten_json(obj: Mapping[str, Any], *, flatten: bool = True) -> dict[str, Any]:
    """Leaves of a JSON object by path: `{"a": {"b": 1}, "items": [5]}` → `{"a.b": 1, "items[0]": 5}`.

    Iterative (an explicit stack), so a 10,000-deep nesting is fine. Empty objects and lists are
    leaves (absent values). Keys containing `.`, `[`, `]` or `"` are written `["a.b"]`. With
    `flatten=False` the top-level keys are returned as they are.

    Examples:
        >>> flatten_json({"a": {"b": 1, "c.d": 2}, "items": [{"x": 1}, []]})
        {'a.b': 1, 'a["c.d"]': 2, 'items[0].x': 1, 'items[1]': []}
    """
    if not flatten:
        return {str(k): v for k, v in obj.items()}
    seg_cache: dict[Any, str] = {}
    out: dict[str, Any] = {}
    stack: list[tuple[str, Any]] = [(_segment(k, seg_cache), v) for k, v in reversed(list(obj.items()))]
    while stack:
        p, v = stack.pop()
        if isinstance(v, dict) and v:
            stack.extend((_join(p, _segment(k, seg_cache)), x) for k, x in reversed(list(v.items())))
        elif isinstance(v, (list, tuple)) and v:
            stack.extend((f"{p}[{i}]", v[i]) for i in range(len(v) - 1, -1, -1))
        else:
            out[p] = v
    return out


class _PathTable:
    """Path names and integer codes, shared by the truth and every model. A child's code is
    looked up by (parent code, key) so each distinct path string is built once, not per record."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self.ids: dict[str, int] = {}
        self.by_key: dict[tuple[int, Any], int] = {}
        self.by_index: dict[tuple[int, int], int] = {}
        self.seg_cache: dict[Any, str] = {}
        self.shapes: dict[tuple[int, tuple[Any, ...]], list[int]] = {}
        self.list_shapes: dict[tuple[int, int], list[int]] = {}
        self.fields: dict[int, int] = {}  # path code → field code (its `[*]` pattern)
        self.field_ids: dict[str, int] = {}
        self.tops: list[int] = []  # path code → the code of its top-level key
        self.odd_keys = False  # a key that is not a string was met: two keys may share a path name
        self._tops_array = np.zeros(0, dtype=np.int64)

    def code(self, parent: int, key: Any, index: bool) -> int:
        if index:
            name = f"{self.names[parent]}[{key}]"
        else:
            if type(key) is not str:
                self.odd_keys = True
            seg = _segment(key, self.seg_cache)
            name = seg if parent < 0 else _join(self.names[parent], seg)
        c = self.ids.get(name)
        if c is None:
            c = self.ids[name] = len(self.names)
            self.names.append(name)
            self.tops.append(c if parent < 0 else self.tops[parent])
        (self.by_index if index else self.by_key)[(parent, key)] = c
        return c

    def top_codes(self) -> np.ndarray:
        """`tops` as an array (made again only when paths were added)."""
        arr = self._tops_array
        if len(arr) != len(self.tops):
            arr = self._tops_array = np.asarray(self.tops, dtype=np.int64)
        return arr

    def field(self, code: int) -> int:
        """Code of a path's field: its pattern (`items[*].price`), shared by every index."""
        f = self.fields.get(code)
        if f is None:
            name = _pattern(self.names[code])
            f = self.fields[code] = self.field_ids.setdefault(name, len(self.field_ids))
        return f

    def top(self, key: Any) -> int:
        """Code of an unflattened top-level key (used as it is, no escaping)."""
        t = (-2, key)
        c = self.by_key.get(t)
        if c is None:
            if type(key) is not str:
                self.odd_keys = True
            name = key if type(key) is str else str(key)
            c = self.ids.get(name)
            if c is None:
                c = self.ids[name] = len(self.names)
                self.names.append(name)
                self.tops.append(c)
            self.by_key[t] = c
        return c


class _KeyTable:
    """Canonical-key codes of leaf values (-1 = absent), cached per (type, value): the type
    keeps `True`, `1` and `1.0` apart, and the normaliser runs once per distinct value."""

    def __init__(self, normalizer: Normalizer) -> None:
        self.normalizer = normalizer
        self.digits_are_numbers = normalizer.config.detect_types
        self.null_tokens = normalizer.config.null_tokens
        self.keys: list[str] = []
        self.ids: dict[str, int] = {}
        self.by_type: dict[type, dict[Any, int]] = {}
        # the same codes again per (field, type), for `_gather_columns`: small dicts stay in cache
        self.by_field: dict[tuple[int, type], dict[Any, int]] = {}
        self.missed: set[tuple[int, type]] = set()  # (field, type) whose last column held new values

    def _key_code(self, key: str | None) -> int:
        if key is None:
            return -1
        c = self.ids.get(key)
        if c is None:
            c = self.ids[key] = len(self.keys)
            self.keys.append(key)
        return c

    def code_new_strs(self, vals: list[str]) -> None:
        """`code` of each of these distinct strings (exact type `str`) not seen before, in this
        order — the same keys and codes as one `code` call each, for fewer calls per value: most
        new values are such strings (ids, zip codes, names), coded once each."""
        joined = "".join(vals)
        if (self.digits_are_numbers and joined.isdigit() and joined.isascii() and min(map(len, vals)) > 0
                and max(map(len, vals)) <= 15 and not any(map(self.null_tokens.__contains__, vals))
                and "\n0" not in "\n" + "\n".join(vals)):
            # all plain ASCII digits without a leading zero (zip codes, ids): their own decimal text
            ks = list(map("n:".__add__, vals))
        else:
            ks = list(map(self._str_key, vals))
        ids, keys = self.ids, self.keys
        new = [k for k in dict.fromkeys(ks) if k is not None and k not in ids]  # first appearances, in order
        if new:
            ids.update(zip(new, range(len(keys), len(keys) + len(new))))
            keys.extend(new)
        self.by_type.setdefault(str, {}).update(zip(vals, map(ids.get, ks, repeat(-1))))

    def _str_key(self, v: str) -> str | None:
        """The canonical key of a string (exact type `str`)."""
        if v.isdigit() and v.isascii() and len(v) <= 15 and self.digits_are_numbers and v not in self.null_tokens:
            # plain ASCII digits (ids, codes, zip codes): what `_string_key` makes of them (no
            # space, case or currency to strip; a number before any date shape), exactly, as such
            # a float is an integer below 1e16
            return "n:" + str(int(v))
        return self.normalizer._string_key(v)

    def code(self, v: Any) -> int:
        """Slow path: a value not seen before (or not hashable)."""
        tv = type(v)
        if tv is str or tv is int or tv is float:
            # The plain JSON scalars (most new values): `Normalizer.key` without its generic
            # dispatch (ABC isinstance checks, hash probe, its own per-value cache, which this
            # table already is). Same rules as `Normalizer._compute` for these exact types.
            if tv is str:
                key = self._str_key(v)
            elif tv is int:
                key = int_key(v)
            elif v != v:  # NaN is absent, and never cached (it is not equal to itself)
                return -1
            else:
                key = float_key(v)
            c = self._key_code(key)
            self.by_type.setdefault(tv, {})[v] = c
            return c
        if isinstance(v, (Mapping, list, tuple, set)):
            return self._key_code(_structured_key(self.normalizer, v))
        try:
            hash(v)
        except TypeError:
            return self._key_code(self.normalizer.key(v))
        c = self._key_code(self.normalizer.key(v))
        if v == v:  # NaN is never equal to itself: do not fill the cache with NaN objects
            self.by_type.setdefault(tv, {})[v] = c
        return c


def _dumps_iterative(value: Any) -> str:
    """`json.dumps(value, sort_keys=True, ensure_ascii=False)` without recursion (any depth)."""
    out: list[str] = []
    stack: list[tuple[bool, Any]] = [(False, value)]
    while stack:
        literal, x = stack.pop()
        if literal:
            out.append(x)
        elif isinstance(x, dict):
            seq: list[tuple[bool, Any]] = [(True, "{")]
            for i, (k, v) in enumerate(sorted(x.items())):
                seq.append((True, (", " if i else "") + json.dumps(k, ensure_ascii=False) + ": "))
                seq.append((False, v))
            seq.append((True, "}"))
            stack.extend(reversed(seq))
        elif isinstance(x, (list, tuple)):
            seq = [(True, "[")]
            for i, v in enumerate(x):
                if i:
                    seq.append((True, ", "))
                seq.append((False, v))
            seq.append((True, "]"))
            stack.extend(reversed(seq))
        else:
            out.append(json.dumps(x, ensure_ascii=False))
    return "".join(out)


def _structured_key(normalizer: Normalizer, v: Any) -> str | None:
    try:
        return normalizer.key(v)
    except RecursionError:  # json.dumps recurses: a very deep value takes the iterative path
        from extracteval.core.normalize import _canonical_json

        return None if len(v) == 0 else "j:" + _dumps_iterative(_canonical_json(v, normalizer))


def auto_strategy(canonical_key: str) -> Strategy:
    """Auto-detected strategy from the truth value's type: numeric, boolean, date, email,
    array and object → EXACT; any other text → SEMANTIC."""
    t = canonical_key[0]
    if t != "t":
        return Strategy.EXACT
    return Strategy.EXACT if _EMAIL.match(canonical_key[2:]) else Strategy.SEMANTIC


def _pattern(path: str) -> str:
    return _INDEX.sub("[*]", path)


def _configured_strategy(path: str, strategies: Mapping[str, Strategy], flatten: bool) -> tuple[str, Strategy] | None:
    """The configured strategy of a path: the longest config key that is the path itself, its
    `[*]` pattern, or an ancestor of either (the exact path wins over the pattern at equal length).
    Linear in the path length for each config key, so 10,000-deep paths stay cheap."""
    hit = strategies.get(path)
    if hit is not None or not flatten:
        return None if hit is None else (path, hit)
    pattern = _pattern(path)
    best: tuple[int, int, str] | None = None
    for key in strategies:
        n = len(key)
        for rank, candidate in ((1, path), (0, pattern)):
            if n <= len(candidate) and candidate.startswith(key) and (n == len(candidate) or candidate[n] in ".["):
                if best is None or (n, rank) > best[:2]:
                    best = (n, rank, key)
    return None if best is None else (best[2], strategies[best[2]])
