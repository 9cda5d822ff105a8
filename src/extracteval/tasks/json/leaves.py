"""The `json` task's walk of objects: every leaf's path code and canonical-key code gathered, column by column
for objects of one shape, object by object otherwise; a prediction equal to its truth found without a walk."""

from __future__ import annotations

import gc
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from itertools import repeat
import operator
from operator import itemgetter
from typing import Any

import numpy as np


try:  # a dependency: the typed comparison of a prediction with its truth (`_same_leaves`)
    import orjson as _orjson

    _dumps = _orjson.dumps
    # subclasses (a list subclass is one leaf, not a list), dataclasses and datetimes are not
    # written: such a prediction is walked
    _TYPED = _orjson.OPT_PASSTHROUGH_SUBCLASS | _orjson.OPT_PASSTHROUGH_DATACLASS | _orjson.OPT_PASSTHROUGH_DATETIME
except ImportError:  # pragma: no cover - without orjson every prediction is walked
    _dumps = None
    _TYPED = 0

from extracteval.tasks.json.paths import _KeyTable, _PathTable


_BATCH = 1_000  # objects walked column by column together (see `_leaves`)


_SLACK = 64  # columns beyond two per object, shapes beyond one per eight objects: then walk object by object


@contextmanager
def _gc_paused() -> Iterator[None]:
    """The cyclic garbage collector off for the block (on again after it, if it was on): a walk
    makes many short-lived tuples and no cycles, so collection passes would dominate."""
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if gc_was_enabled:
            gc.enable()


def _scalar_gets(keys: _KeyTable) -> tuple[Callable[[Any], int | None], ...]:
    """The `get` of the key table's dicts of `str`, `int`, `float` and `bool` values (made when
    new, in that order)."""
    return tuple(keys.by_type.setdefault(t, {}).get for t in (str, int, float, bool))


def _gather(
    objs: Sequence[Mapping[str, Any]],
    flatten: bool,
    table: _PathTable,
    keys: _KeyTable,
    codes: array,
    kcodes: array,
) -> np.ndarray:
    """Append every leaf's path code and canonical-key code; returns the number of leaves per object.

    The hot loop of the task: one pass over each object with an explicit stack (no recursion).
    An object's child path codes are cached by (parent code, tuple of keys), so records of the
    same shape cost one look-up per object; a leaf costs one look-up of its value's key code; the
    normaliser runs only for values never seen before."""
    counts: list[int] = []
    shapes: dict[tuple[int, tuple[Any, ...]], list[int]] = table.shapes
    list_shapes: dict[tuple[int, int], list[int]] = table.list_shapes
    new_code, top = table.code, table.top
    key_code = keys.code
    str_get, int_get, float_get, bool_get = _scalar_gets(keys)
    append_c, append_k = codes.append, kcodes.append
    with _gc_paused():  # millions of short-lived tuples and no cycles: collection passes would dominate
        for obj in objs:
            n0 = len(codes)
            stack: list[tuple[int, Any]] = [(-1, obj)]
            push, pop = stack.append, stack.pop
            while stack:
                c, v = pop()
                tv = type(v)
                if tv is list or tv is tuple:  # non-empty (flatten only)
                    lshape = (c, len(v))
                    child = list_shapes.get(lshape)
                    if child is None:
                        child = list_shapes[lshape] = [new_code(c, j, True) for j in range(len(v))]
                    items = zip(child, v)
                else:  # a mapping
                    if not v:
                        if c >= 0:
                            append_c(c)
                            append_k(-1)  # an empty object is an absent value
                        continue
                    shape = (c, tuple(v))
                    child = shapes.get(shape)
                    if child is None:
                        child = shapes[shape] = [new_code(c, k, False) if flatten or c >= 0 else top(k) for k in shape[1]]
                    items = zip(child, v.values())
                for cc, x in items:
                    tx = type(x)
                    if tx is str:
                        kc = str_get(x)
                    elif x is None:
                        kc = -1
                    elif tx is int:
                        kc = int_get(x)
                    elif tx is float:
                        kc = float_get(x)
                    elif tx is bool:
                        kc = bool_get(x)
                    elif not flatten:
                        kc = None
                    elif tx is dict or tx is list or tx is tuple or isinstance(x, Mapping):
                        if x:
                            push((cc, x))
                        else:
                            append_c(cc)
                            append_k(-1)
                        continue
                    else:
                        kc = None
                    append_c(cc)
                    append_k(key_code(x) if kc is None else kc)
            counts.append(len(codes) - n0)
    return np.asarray(counts, dtype=np.int64)


def _take(seq: Sequence[Any], idx: np.ndarray) -> Sequence[Any]:
    """The items of `seq` at the positions `idx` (one C-level call, not a Python loop)."""
    if len(idx) == 1:
        return (seq[int(idx[0])],)
    return itemgetter(*idx.tolist())(seq)


def _groups(labels: list[Any]) -> list[tuple[Any, np.ndarray | None]]:
    """Positions of each distinct label, in order of first appearance (None: every position)."""
    if labels.count(labels[0]) == len(labels):  # the usual case: one label (compared, not hashed)
        return [(labels[0], None)]
    first: dict[Any, int] = {}
    ids = np.asarray(list(map(first.setdefault, labels, range(len(labels)))), dtype=np.int64)  # a label's first position
    order = np.argsort(ids, kind="stable")
    cuts = np.flatnonzero(ids[order][1:] != ids[order][:-1]) + 1
    return [(labels[int(part[0])], part) for part in np.split(order, cuts)]


_NONE_NEW = np.zeros(0, dtype=np.int64)


def _column_codes(keys: _KeyTable, fkey: tuple[int, type], col: Sequence[Any]) -> tuple[dict[Any, int], np.ndarray, np.ndarray]:
    """A column's codes in the dict of its field and type (`keys.by_field[fkey]`, made when new):
    that dict, the codes (-3 where the dict does not hold the value yet) and the positions of those
    values. A column whose every value the dict holds is looked up whole, by one C-level call (no
    default per value); after a column with new values (or an unhashable one) the field goes value
    by value until one of its columns is all known again."""
    fd = keys.by_field.get(fkey)
    if fd is None:
        fd = keys.by_field[fkey] = {}
    m = len(col)
    if m > 1 and fkey not in keys.missed:
        try:
            return fd, np.fromiter(itemgetter(*col)(fd), dtype=np.int64, count=m), _NONE_NEW
        except (KeyError, TypeError):
            keys.missed.add(fkey)
    try:
        kc = np.fromiter(map(fd.get, col, repeat(-3, m)), dtype=np.int64, count=m)
    except TypeError:  # an unhashable value (kept whole when not flattening): sorted out by type
        kc = np.full(m, -3, dtype=np.int64)
    miss = np.flatnonzero(kc == -3)
    if not len(miss):
        keys.missed.discard(fkey)
    return fd, kc, miss


def _shapes(objs: Sequence[Mapping[str, Any]]) -> list[tuple[Any, np.ndarray | None]]:
    """`_groups` of the objects' key tuples. The usual case, every object with the same keys in the
    same order, is told from the key columns (each one key throughout), without a tuple per object."""
    n = len(objs)
    lens = list(map(len, objs))
    if lens.count(lens[0]) == n and all(ks.count(ks[0]) == n for ks in zip(*objs)):
        return [(tuple(objs[0]), None)]
    return _groups(list(map(tuple, objs)))


_NOTHING = object()


_CONTAINERS = frozenset({dict, list})


def _truths_objects(
    child: list[int], shape: tuple[Any, ...], rs: np.ndarray, cols: Iterable[Sequence[Any]], truths: Sequence[Any],
    kept: list[tuple[np.ndarray, int]],
) -> Iterable[tuple[int, np.ndarray, Sequence[Any]]]:
    """The top-level columns of predictions of one shape (`rs`: their positions, and their truths'
    in `truths`) without the objects and lists that are exactly their truth's — equal, of the same
    type and with the same JSON text (true / 1 / 1.0 apart), all of a column checked at once —:
    those are noted in `kept` as (positions, path code), for the caller to take the truth's leaves
    under them instead of walking them again. Scalar columns are left whole (looking them up costs
    no more than comparing them)."""
    tsub = _take(truths, rs)
    if set(map(type, tsub)) != {dict}:
        return zip(child, repeat(rs), cols)
    m = len(rs)
    out: list[tuple[int, np.ndarray, Sequence[Any]]] = []
    for cc, k, col in zip(child, shape, cols):
        kinds = tuple(map(type, col))
        if _CONTAINERS.isdisjoint(kinds):
            out.append((cc, rs, col))
            continue
        tcol = tuple(map(dict.get, tsub, repeat(k, m), repeat(_NOTHING, m)))
        try:
            hit = np.fromiter(map(operator.eq, col, tcol), dtype=bool, count=m)
        except Exception:  # too deep for ==, or a value whose == is not a truth value
            out.append((cc, rs, col))
            continue
        hit &= np.fromiter(map(operator.is_, kinds, map(type, tcol)), dtype=bool, count=m)
        hit &= np.fromiter(map(_CONTAINERS.__contains__, kinds), dtype=bool, count=m)
        idx = np.flatnonzero(hit)
        if len(idx):
            hit[idx] = _same_texts(_take(col, idx), _take(tcol, idx))
            idx = np.flatnonzero(hit)
        if not len(idx):
            out.append((cc, rs, col))
            continue
        kept.append((rs[idx], cc))
        if len(idx) < m:
            miss = np.flatnonzero(~hit)
            out.append((cc, rs[miss], _take(col, miss)))
    return out


_NONE_TYPE = type(None)


def _by_type(ri: np.ndarray, col: Sequence[Any]) -> list[tuple[type, np.ndarray, Sequence[Any]]]:
    """A column split by the type of its values: (type, object indices, values) per type."""
    tset = set(map(type, col))
    if len(tset) == 1:
        return [(tset.pop(), ri, col)]
    tid = {t: i for i, t in enumerate(tset)}
    ti = np.fromiter(map(tid.__getitem__, map(type, col)), dtype=np.int64, count=len(col))
    parts = []
    for t, i in tid.items():
        idx = np.flatnonzero(ti == i)
        parts.append((t, ri[idx], _take(col, idx)))
    return parts


class _ColumnWalk:
    """The state of one walk by column (`_gather_columns`): the groups of mappings or lists left
    to split into columns (`split`), the columns left to code (`code_column`) and the leaves coded
    so far (`arrays`)."""

    def __init__(
        self, flatten: bool, table: _PathTable, keys: _KeyTable, truths: Sequence[Any] | None, kept: list[tuple[np.ndarray, int]] | None
    ) -> None:
        self.flatten, self.table, self.keys, self.truths, self.kept = flatten, table, keys, truths, kept
        self.fast = dict(zip((str, int, float, bool), _scalar_gets(keys)))
        # work: (is a list group, parent path code, object indices, non-empty mappings or lists)
        self.work: list[tuple[bool, int, np.ndarray, Sequence[Any]]] = []
        self.columns: list[tuple[int, np.ndarray, Sequence[Any]]] = []  # (path code, object indices, values)
        self.recs: list[np.ndarray] = []
        self.kcodes: list[np.ndarray] = []
        self.pcodes: list[int] = []
        self.counts: list[int] = []

    def add(self, rs: np.ndarray, kc: np.ndarray, cc: int) -> None:
        """Note the leaves of path code `cc` of the objects `rs`, with key codes `kc`."""
        self.recs.append(rs)
        self.kcodes.append(kc)
        self.pcodes.append(cc)
        self.counts.append(len(rs))

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every leaf noted, as (object index, path code, canonical-key code) arrays."""
        if not self.recs:
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty.copy(), empty.copy()
        rec = np.concatenate(self.recs)
        path = np.repeat(np.asarray(self.pcodes, dtype=np.int64), self.counts)
        return rec, path, np.concatenate(self.kcodes)

    def split(self, is_list: bool, c: int, ri: np.ndarray, vals: Sequence[Any]) -> bool:
        """Queue the columns of a group of non-empty lists or mappings under path code `c` (of the
        objects `ri`), one per index or key and shape. False: the columns would be tiny (a few
        objects per shape) or two keys share a path name, so the caller walks object by object."""
        groups = _groups(list(map(len, vals))) if is_list else _shapes(vals)
        if len(groups) > len(vals) // 8 + _SLACK // 8:
            return False  # a few objects per shape: columns of a few values
        if is_list:
            list_shapes, new_code = self.table.list_shapes, self.table.code
            for length, idx in groups:
                sub = vals if idx is None else _take(vals, idx)
                rs = ri if idx is None else ri[idx]
                child = list_shapes.get((c, length))
                if child is None:
                    child = list_shapes[(c, length)] = [new_code(c, j, True) for j in range(length)]
                self.columns.extend(zip(child, repeat(rs), zip(*sub)))
            return True
        return self.split_mappings(c, ri, vals, groups)

    def split_mappings(self, c: int, ri: np.ndarray, vals: Sequence[Any], groups: list[tuple[Any, np.ndarray | None]]) -> bool:
        """`split` of mappings, grouped by shape (key tuple); at the top level, the objects and lists
        exactly their truth's are kept aside (`_truths_objects`) rather than queued."""
        table, flatten = self.table, self.flatten
        shapes, new_code, top = table.shapes, table.code, table.top
        for shape, idx in groups:
            if not shape:
                continue  # an empty record (only records reach here empty)
            sub = vals if idx is None else _take(vals, idx)
            rs = ri if idx is None else ri[idx]
            child = shapes.get((c, shape))
            if child is None:
                child = shapes[(c, shape)] = [new_code(c, k, False) if flatten or c >= 0 else top(k) for k in shape]
            if len(set(child)) < len(child):
                return False
            rows = map(dict.values, sub) if set(map(type, sub)) == {dict} else [list(v.values()) for v in sub]
            if c == -1 and self.truths is not None and self.kept is not None and not table.odd_keys:
                self.columns.extend(_truths_objects(child, shape, rs, zip(*rows), self.truths, self.kept))
            else:
                self.columns.extend(zip(child, repeat(rs), zip(*rows)))
        return True

    def code_column(self, cc: int, ri: np.ndarray, col: Sequence[Any]) -> None:
        """Code one column of values (path code `cc`, of the objects `ri`): the strings its field
        already holds first (`known_strs`), then the rest one type at a time (`code_part`)."""
        if type(col[0]) is str:
            rest = self.known_strs(cc, ri, col)
            if rest is None:
                return
            ri, col = rest
        for t, rs, vs in _by_type(ri, col):
            coded = self.code_part(cc, t, rs, vs)
            if coded is not None:
                self.add(coded[0], coded[1], cc)

    def known_strs(self, cc: int, ri: np.ndarray, col: Sequence[Any]) -> tuple[np.ndarray, Sequence[Any]] | None:
        """Most leaf columns hold strings: the whole column looked up in the field's dict of strings
        first (no other type is equal to a string, so a hit is a string) and the hits noted. Returns
        the values it does not hold yet, with their objects (None: there are none)."""
        m = len(col)
        _, kc, miss = _column_codes(self.keys, (self.table.field(cc), str), col)
        if len(miss) < m:
            if len(miss):
                hit = np.flatnonzero(kc != -3)
                self.add(ri[hit], kc[hit], cc)
            else:
                self.add(ri, kc, cc)
            if not len(miss):
                return None
            ri, col = ri[miss], _take(col, miss)
        return ri, col

    def code_part(self, cc: int, t: type, rs: np.ndarray, vs: Sequence[Any]) -> tuple[np.ndarray, np.ndarray] | None:
        """The key codes of a column's values of one type `t`: scalars by the dict of their field and
        type (`code_new` for the values it lacks), None absent, mappings and lists when flattening
        by `nested`, anything else by the key table. Returns (objects, key codes) to note, or None."""
        m = len(vs)
        get = self.fast.get(t)
        if get is not None:
            # a small dict per field (path pattern) and type: look-ups stay in cache
            fd, kc, miss = _column_codes(self.keys, (self.table.field(cc), t), vs)
            if len(miss):  # values new to this field: each distinct one is coded once
                self.code_new(t, get, fd, kc, miss, vs)
        elif t is _NONE_TYPE:
            kc = np.full(m, -1, dtype=np.int64)
        elif self.flatten and (t is dict or t is list or t is tuple or issubclass(t, Mapping)):
            return self.nested(cc, t, rs, vs)
        else:
            kc = np.fromiter(map(self.keys.code, vs), dtype=np.int64, count=m)
        return rs, kc

    def code_new(
        self, t: type, get: Callable[[Any], int | None], fd: dict[Any, int], kc: np.ndarray, miss: np.ndarray, vs: Sequence[Any]
    ) -> None:
        """Fill `kc` at `miss`, the values the field's dict `fd` lacks: each distinct one coded once
        (new strings together, `code_new_strs`) and added to `fd` (NaN, absent, never)."""
        fresh = _take(vs, miss)
        if t is str:  # the usual case: coded together, the field's dict filled at once
            distinct = list(set(fresh))
            todo = [v for v, c in zip(distinct, map(get, distinct)) if c is None]
            if todo:
                self.keys.code_new_strs(todo)
            fd.update(zip(distinct, map(get, distinct)))
            distinct = ()
        else:
            distinct = set(fresh)
        key_code = self.keys.code
        for v in distinct:
            c = get(v)
            if c is None:
                c = key_code(v)
            if v == v:  # NaN (absent) is never cached
                fd[v] = c
        kc[miss] = np.fromiter(map(fd.get, fresh, repeat(-1, len(miss))), dtype=np.int64, count=len(miss))

    def nested(self, cc: int, t: type, rs: np.ndarray, vs: Sequence[Any]) -> tuple[np.ndarray, np.ndarray] | None:
        """A column of mappings or lists (flattening): the non-empty ones queued to `split`; returns
        the empty ones' objects and key codes (an empty object or list is absent), None if none."""
        m = len(vs)
        lens = np.fromiter(map(len, vs), dtype=np.int64, count=m)
        full = lens > 0
        if full.all():
            self.work.append((t is list or t is tuple, cc, rs, vs))
            return None
        if full.any():
            idx = np.flatnonzero(full)
            self.work.append((t is list or t is tuple, cc, rs[idx], _take(vs, idx)))
        rs = rs[~full]
        return rs, np.full(len(rs), -1, dtype=np.int64)  # an empty object or list is an absent value


def _gather_columns(
    objs: Sequence[Mapping[str, Any]], flatten: bool, table: _PathTable, keys: _KeyTable,
    truths: Sequence[Any] | None = None, kept: list[tuple[np.ndarray, int]] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Every leaf of `objs` as (object index, path code, canonical-key code) arrays, walked by
    column rather than object by object: the objects of one shape (the same keys in the same order
    under the same path) are taken together, each key's values form one column, and a column of
    one type is coded by one C-level dict look-up per value (`map`), so Python runs once per
    column and shape, not once per leaf. Nested objects and lists go on as further columns.

    The same leaves and codes as `_gather`, in another order (callers index cells by (object,
    path), so order is immaterial) — except where two keys of one object have the same path name
    (`1` and `"1"`): there the per-object walk's order decides which leaf a cell keeps, so None is
    returned and the caller walks object by object. So it is too when the columns come out much
    more numerous than the objects (long lists, deep nesting, objects of many shapes): a column
    costs a few numpy calls, which only pay off over many values.

    Given `truths` (aligned with `objs`) and `kept`, a top-level object or list exactly its
    truth's is not walked but noted in `kept` (`_truths_objects`); no key that is not a string
    may have been met (`table.odd_keys`), as two keys could then share a path name.

    Stages (`_ColumnWalk`): groups split into columns (`split`), columns coded (`code_column`),
    the leaves noted joined (`arrays`)."""
    n = len(objs)
    budget = 2 * n + _SLACK  # columns before the per-object walk is the cheaper one
    walk = _ColumnWalk(flatten, table, keys, truths, kept)
    work, columns = walk.work, walk.columns
    work.append((False, -1, np.arange(n, dtype=np.int64), objs))
    with _gc_paused():  # many short-lived tuples and no cycles, as in `_gather`
        while work or columns:
            if columns:
                budget -= 1
                if budget < 0:
                    return None
                walk.code_column(*columns.pop())
            elif not walk.split(*work.pop()):
                return None
    return walk.arrays()


def _same_leaves(objs: Sequence[Any], truths: Sequence[Any]) -> np.ndarray:
    """Which predictions have exactly their truth's leaves, so their codes can be copied instead
    of walked. `==` alone would hide a type (`True == 1 == 1.0`, a big integer equal to a float),
    so an equal pair must also serialise to the same JSON text (true / 1 / 1.0 apart); a value
    orjson does not write (a non-string key, a set, an integer beyond 64 bits, a subclass of
    list, dict, str or int…) is walked."""
    n = len(objs)
    if _dumps is None or n == 0:
        return np.zeros(n, dtype=bool)
    try:
        eq = np.fromiter(map(operator.eq, objs, truths), dtype=bool, count=n)
    except Exception:  # too deep for ==, or a value whose == is not a truth value: pair by pair
        eq = np.zeros(n, dtype=bool)
        for i, (a, b) in enumerate(zip(objs, truths)):
            try:
                eq[i] = bool(a == b)
            except Exception:
                pass
    idx = np.flatnonzero(eq)
    if len(idx):
        eq[idx] = _same_texts(_take(objs, idx), _take(truths, idx))
    return eq


def _same_texts(mine: Sequence[Any], theirs: Sequence[Any]) -> np.ndarray:
    """Whether each pair (equal by `==`) has the same JSON text, a value orjson does not write
    never. The usual case first: the two lists as two texts (the text of a JSON array determines
    each item's text); pair by pair only when those differ or one is not written."""
    whole = _typed_text(list(mine))
    if whole is not None and whole == _typed_text(list(theirs)):
        return np.ones(len(mine), dtype=bool)
    return np.fromiter((a is not None and a == b for a, b in zip(map(_typed_text, mine), map(_typed_text, theirs))), dtype=bool, count=len(mine))


def _typed_text(value: Any) -> bytes | None:
    try:
        return _dumps(value, option=_TYPED)  # type: ignore[misc]
    except TypeError:  # orjson's JSONEncodeError included
        return None


def _leaves(
    sides: Sequence[Sequence[Mapping[str, Any]]], flatten: bool, table: _PathTable, keys: _KeyTable
) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Per side (the truth, then each model, for the same records): (object index, path code, key
    code) of every leaf. Walked by column in batches of `_BATCH` records (see `_gather_columns`;
    object by object where path names collide or columns would be tiny); a prediction with exactly its truth's leaves
    (`_same_leaves`) takes the truth's codes instead of being walked."""
    parts: list[list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = [[] for _ in sides]
    n = len(sides[0]) if sides else 0
    for b0 in range(0, n, _BATCH):
        truth = sides[0][b0:b0 + _BATCH]
        t_rec, t_path, t_key = _walk(truth, flatten, table, keys)
        parts[0].append((t_rec + b0, t_path, t_key))
        for objs, out in zip(sides[1:], parts[1:]):
            batch = objs[b0:b0 + _BATCH]
            same = _same_leaves(batch, truth)
            other = np.flatnonzero(~same)
            kept: list[tuple[np.ndarray, int]] = []
            if len(other) == len(batch):
                rec, path, kc = _walk(batch, flatten, table, keys, truth, kept)
            else:
                rec, path, kc = _walk(_take(batch, other), flatten, table, keys, _take(truth, other), kept) if len(other) else (_NONE_NEW,) * 3
            if kept or len(other) < len(batch):
                copied = same[t_rec]
                if kept:  # the truth's leaves under the top-level keys whose value was exactly the truth's
                    t_top = table.top_codes()[t_path]
                    by_code: dict[int, list[np.ndarray]] = {}
                    for at, cc in kept:
                        by_code.setdefault(cc, []).append(other[at])
                    for cc, ats in by_code.items():
                        mark = np.zeros(len(batch), dtype=bool)
                        for at in ats:
                            mark[at] = True
                        copied |= (t_top == cc) & mark[t_rec]
                rec = np.concatenate([t_rec[copied], other[rec]])
                path = np.concatenate([t_path[copied], path])
                kc = np.concatenate([t_key[copied], kc])
            out.append((rec + b0, path, kc))
    empty = np.zeros(0, dtype=np.int64)
    return [
        (out[0] if len(out) == 1 else tuple(np.concatenate(x) for x in zip(*out))) if out else (empty, empty.copy(), empty.copy())
        for out in parts
    ]  # type: ignore[misc]


def _walk(
    objs: Sequence[Mapping[str, Any]], flatten: bool, table: _PathTable, keys: _KeyTable,
    truths: Sequence[Any] | None = None, kept: list[tuple[np.ndarray, int]] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(object index, path code, key code) of every leaf of `objs`: by column, else object by
    object. With `truths` and `kept`: see `_gather_columns` (nothing is kept object by object)."""
    found = _gather_columns(objs, flatten, table, keys, truths if _dumps is not None else None, kept) if len(objs) else None
    if found is None and kept:
        kept.clear()
    if found is None:
        paths, kcodes = array("q"), array("q")
        counts = _gather(objs, flatten, table, keys, paths, kcodes)
        found = np.repeat(np.arange(len(objs), dtype=np.int64), counts), np.array(paths, dtype=np.int64), np.array(kcodes, dtype=np.int64)
    return found
