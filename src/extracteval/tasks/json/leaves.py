"""The `json` task's walk of objects: every leaf's path code and canonical-key code gathered, column by column
for objects of one shape, object by object otherwise; a prediction equal to its truth found without a walk."""

from __future__ import annotations

import gc
from array import array
from collections.abc import Iterable, Mapping, Sequence
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
    str_get = keys.by_type.setdefault(str, {}).get
    int_get = keys.by_type.setdefault(int, {}).get
    float_get = keys.by_type.setdefault(float, {}).get
    bool_get = keys.by_type.setdefault(bool, {}).get
    append_c, append_k = codes.append, kcodes.append
    gc_was_enabled = gc.isenabled()
    gc.disable()  # millions of short-lived tuples and no cycles: collection passes would dominate
    try:
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
    finally:
        if gc_was_enabled:
            gc.enable()
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
    may have been met (`table.odd_keys`), as two keys could then share a path name."""
    n = len(objs)
    budget = 2 * n + _SLACK  # columns before the per-object walk is the cheaper one
    fast = {t: keys.by_type.setdefault(t, {}).get for t in (str, int, float, bool)}
    key_code, new_code, top = keys.code, table.code, table.top
    shapes, list_shapes = table.shapes, table.list_shapes
    recs: list[np.ndarray] = []
    kcodes: list[np.ndarray] = []
    pcodes: list[int] = []
    counts: list[int] = []
    # work: (is a list group, parent path code, object indices, non-empty mappings or lists)
    work: list[tuple[bool, int, np.ndarray, Sequence[Any]]] = [(False, -1, np.arange(n, dtype=np.int64), objs)]
    columns: list[tuple[int, np.ndarray, Sequence[Any]]] = []
    none_type = type(None)
    gc_was_enabled = gc.isenabled()
    gc.disable()  # many short-lived tuples and no cycles, as in `_gather`
    try:
        while work or columns:
            if columns:
                budget -= 1
                if budget < 0:
                    return None
                cc, ri, col = columns.pop()
                if type(col[0]) is str:
                    # most leaf columns hold strings: look the whole column up in the field's
                    # dict of strings first (no other type is equal to a string, so a hit is a
                    # string), then sort out by type only the values it does not hold yet
                    m = len(col)
                    _, kc, miss = _column_codes(keys, (table.field(cc), str), col)
                    if len(miss) < m:
                        if len(miss):
                            hit = np.flatnonzero(kc != -3)
                            recs.append(ri[hit])
                            kcodes.append(kc[hit])
                        else:
                            recs.append(ri)
                            kcodes.append(kc)
                        pcodes.append(cc)
                        counts.append(m - len(miss))
                        if not len(miss):
                            continue
                        ri, col = ri[miss], _take(col, miss)
                tset = set(map(type, col))
                if len(tset) == 1:
                    parts: list[tuple[type, np.ndarray, Sequence[Any]]] = [(tset.pop(), ri, col)]
                else:  # split the column by type
                    tid = {t: i for i, t in enumerate(tset)}
                    ti = np.fromiter(map(tid.__getitem__, map(type, col)), dtype=np.int64, count=len(col))
                    parts = []
                    for t, i in tid.items():
                        idx = np.flatnonzero(ti == i)
                        parts.append((t, ri[idx], _take(col, idx)))
                for t, rs, vs in parts:
                    m = len(vs)
                    get = fast.get(t)
                    if get is not None:
                        # a small dict per field (path pattern) and type: look-ups stay in cache
                        fd, kc, miss = _column_codes(keys, (table.field(cc), t), vs)
                        if len(miss):  # values new to this field: each distinct one is coded once
                            fresh = _take(vs, miss)
                            if t is str:  # the usual case: coded together, the field's dict filled at once
                                distinct = list(set(fresh))
                                todo = [v for v, c in zip(distinct, map(get, distinct)) if c is None]
                                if todo:
                                    keys.code_new_strs(todo)
                                fd.update(zip(distinct, map(get, distinct)))
                                distinct = ()
                            else:
                                distinct = set(fresh)
                            for v in distinct:
                                c = get(v)
                                if c is None:
                                    c = key_code(v)
                                if v == v:  # NaN (absent) is never cached
                                    fd[v] = c
                            kc[miss] = np.fromiter(map(fd.get, fresh, repeat(-1, len(miss))), dtype=np.int64, count=len(miss))
                    elif t is none_type:
                        kc = np.full(m, -1, dtype=np.int64)
                    elif flatten and (t is dict or t is list or t is tuple or issubclass(t, Mapping)):
                        lens = np.fromiter(map(len, vs), dtype=np.int64, count=m)
                        full = lens > 0
                        if full.all():
                            work.append((t is list or t is tuple, cc, rs, vs))
                            continue
                        if full.any():
                            idx = np.flatnonzero(full)
                            work.append((t is list or t is tuple, cc, rs[idx], _take(vs, idx)))
                        rs = rs[~full]
                        m = len(rs)
                        kc = np.full(m, -1, dtype=np.int64)  # an empty object or list is an absent value
                    else:
                        kc = np.fromiter(map(key_code, vs), dtype=np.int64, count=m)
                    recs.append(rs)
                    kcodes.append(kc)
                    pcodes.append(cc)
                    counts.append(m)
                continue
            is_list, c, ri, vals = work.pop()
            groups = _groups(list(map(len, vals))) if is_list else _shapes(vals)
            if len(groups) > len(vals) // 8 + _SLACK // 8:
                return None  # a few objects per shape: columns of a few values
            if is_list:
                for length, idx in groups:
                    sub = vals if idx is None else _take(vals, idx)
                    rs = ri if idx is None else ri[idx]
                    child = list_shapes.get((c, length))
                    if child is None:
                        child = list_shapes[(c, length)] = [new_code(c, j, True) for j in range(length)]
                    columns.extend(zip(child, repeat(rs), zip(*sub)))
                continue
            for shape, idx in groups:
                if not shape:
                    continue  # an empty record (only records reach here empty)
                sub = vals if idx is None else _take(vals, idx)
                rs = ri if idx is None else ri[idx]
                child = shapes.get((c, shape))
                if child is None:
                    child = shapes[(c, shape)] = [new_code(c, k, False) if flatten or c >= 0 else top(k) for k in shape]
                if len(set(child)) < len(child):
                    return None
                rows = map(dict.values, sub) if set(map(type, sub)) == {dict} else [list(v.values()) for v in sub]
                if c == -1 and truths is not None and kept is not None and not table.odd_keys:
                    columns.extend(_truths_objects(child, shape, rs, zip(*rows), truths, kept))
                else:
                    columns.extend(zip(child, repeat(rs), zip(*rows)))
    finally:
        if gc_was_enabled:
            gc.enable()
    if not recs:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty.copy(), empty.copy()
    rec = np.concatenate(recs)
    path = np.repeat(np.asarray(pcodes, dtype=np.int64), counts)
    return rec, path, np.concatenate(kcodes)


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
