"""The `structured` task's count of a model's outputs at once: the references read once, each output parsed
(orjson where it agrees), an exact match found without flattening, every other output diffed key by key."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from itertools import repeat
from typing import Any

from extracteval.core.jsonparse import _orjson, may_misread_numbers
from extracteval.core.decision_track import _key_part, leaf_key, flat_keys, _REF_BOOL, _REF_NO_SHORTCUT, _LossyNumber, _flat_walk
from extracteval.io.model_output import JSON_START, first_fence_body, loads_any_depth, loads_std_any_depth, parse_json_output, parse_json_text
from extracteval.tasks.structured.config import StructuredRecords, _ABSENT
from extracteval.tasks.structured.alignment import generic_path
from extracteval.tasks.structured.counting import _REF_IRREGULAR, _shape_walk, reference_walk


class _References:
    """The references of a run under the default options, read once for every model: per record
    (in id order) the reference, the `_REF_*` flags of what it holds and its profile id. A
    profile is the reference's generic paths with a value, counted (`items[].sku`: 2); references
    of one shape share one, so the per-field counts of exact and missing records are added once
    per profile at the end instead of path by path per record.

    A reference's shape is read by `_shape_walk` (one step per object or array, no path built);
    only the first reference of each shape is flattened, to count its profile. The flattened keys
    of any other reference are made when a record needs them (`keys`)."""

    __slots__ = ("values", "flags", "pids", "tables", "n_present", "_keys")

    def __init__(self, truth: Mapping[str, Any], ids: Sequence[str]) -> None:
        values = list(truth.values()) if isinstance(truth, dict) else None
        if values is None or len(values) != len(ids) or list(truth) != ids:  # ids not in the truth's order
            values = list(map(truth.__getitem__, ids))
        self.values = values
        self.flags: list[int] = []
        self.pids: list[int] = []
        self.tables: list[dict[str, int]] = []
        self.n_present: list[int] = []
        self._keys: dict[int, dict[str, str]] = {}  # position → flattened keys, once made
        profiles: dict[tuple[Any, ...], int] = {}
        add_flags, add_pid = self.flags.append, self.pids.append
        for n, v in enumerate(values):
            t = type(v)
            parts: list[int] = []
            flags = _REF_IRREGULAR
            if (t is dict or t is list) and v:
                try:
                    flags = _shape_walk(v, parts)
                except RecursionError:
                    flags = _REF_IRREGULAR
            if flags & _REF_IRREGULAR:
                # a scalar, a leaf of another type, a key that is not a `str`, a deep document:
                # the profile is the present paths themselves, and no shortcut is taken
                rk, flags = reference_walk(v)
                flags |= _REF_NO_SHORTCUT
                self._keys[n] = rk
                key: tuple[Any, ...] = ("", *[p for p, k in rk.items() if k[0] != "\x00"])
            else:
                key = tuple(parts)
            pid = profiles.get(key)
            if pid is None:
                pid = profiles[key] = len(self.tables)
                table: dict[str, int] = {}
                present = 0
                for p, k in self.keys(n).items():
                    if k[0] != "\x00":
                        g = generic_path(p)
                        table[g] = table.get(g, 0) + 1
                        present += 1
                self.tables.append(table)
                self.n_present.append(present)
            add_flags(flags)
            add_pid(pid)

    def keys(self, n: int) -> dict[str, str]:
        """The flattened keys of the reference at position `n` (`flat_keys`)."""
        rk = self._keys.get(n)
        if rk is None:
            rk = self._keys[n] = reference_walk(self.values[n])[0]
        return rk


def _put_keys(out: dict[str, str], path: str, x: Any) -> None:
    """The flattened keys of `x` under `path` into `out` (a leaf: its one key)."""
    t = type(x)
    if (t is dict or t is list or t is tuple) and x:
        _flat_walk(out, path, x, False)
    else:
        out[path] = leaf_key(x)


def _diff_keys(r: Any, p: Any, path: str, rd: dict[str, str], pd: dict[str, str], hazard: bool) -> None:
    """The flattened keys of a reference `r` and a parsed output `p` (both non-empty objects, or
    both non-empty arrays) where they differ, under `path`: the reference's into `rd`, the
    output's into `pd`. That is `flat_keys` of each less the items both share: an item equal in
    both is skipped whole, so the two maps are equal exactly when the documents' flattened keys
    are, and their differences are those of the whole documents.

    For a regular reference (`_shape_walk`: `str` keys, numbers of magnitude below 1e16, leaves
    of the JSON types only) Python's `==` on two items means equal keys, except where a boolean
    meets a number (`True == 1`): with `hazard` (a boolean in either document) equal leaves must
    also be of one type, and equal containers written alike by orjson. (An output float orjson
    made of an integer beyond 64 bits equals no key of such a reference, read either way.)"""
    dumps = _orjson.dumps  # type: ignore[union-attr]
    if type(r) is dict:
        get = p.get
        shared = 0
        for k, a in r.items():
            b = get(k, _ABSENT)
            if b is _ABSENT:
                _put_keys(rd, path + "." + _key_part(k) if path else _key_part(k), a)
                continue
            shared += 1
            if a == b and (not hazard or _typed_equal(a, b, dumps)):
                continue
            _diff_pair(a, b, path + "." + _key_part(k) if path else _key_part(k), rd, pd, hazard)
        if shared != len(p):  # keys only the output has
            for k, b in p.items():
                if k not in r:
                    _put_keys(pd, path + "." + _key_part(k) if path else _key_part(k), b)
        return
    for j, (a, b) in enumerate(zip(r, p)):
        if a == b and (not hazard or _typed_equal(a, b, dumps)):
            continue
        _diff_pair(a, b, f"{path}[{j}]", rd, pd, hazard)
    shared = min(len(r), len(p))
    for j in range(shared, len(r)):  # items only the reference has
        _put_keys(rd, f"{path}[{j}]", r[j])
    for j in range(shared, len(p)):  # items only the output has
        _put_keys(pd, f"{path}[{j}]", p[j])


def _typed_equal(a: Any, b: Any, dumps: Callable[..., bytes]) -> bool:
    """Two items `==` already equates are one JSON value: leaves of one type, containers written
    alike by orjson (`True == 1`, `[True] == [1]`)."""
    ta = type(a)
    if ta is not type(b):
        return False
    if ta is not dict and ta is not list and ta is not tuple:
        return True
    try:
        return dumps(a) == dumps(b)
    except (TypeError, ValueError, RecursionError):
        return False


def _diff_pair(a: Any, b: Any, path: str, rd: dict[str, str], pd: dict[str, str], hazard: bool) -> None:
    """Two items that differ at `path`: side by side if both are non-empty objects or arrays,
    else the keys of each."""
    ta, tb = type(a), type(b)
    if ((ta is dict and tb is dict) or ((ta is list or ta is tuple) and (tb is list or tb is tuple))) and a and b:
        _diff_keys(a, b, path, rd, pd, hazard)
    else:
        _put_keys(rd, path, a)
        _put_keys(pd, path, b)


def _score_model_exact(
    ids: Sequence[str],
    preds: Mapping[str, Any],
    refs: _References,
    per_field: dict[str, list[int]],
    progress: Callable[[int, int, str, dict[str, float]], None] | None,
    model: str,
) -> tuple[StructuredRecords, list[int], int]:
    """One model's records under the default options (what `_Scorer.record` computes, faster),
    their summed counts in the order of `StructuredCounts`' fields and how many ids had no output.

    Each output string is parsed by orjson when it can be (`json` otherwise, with the fences and
    prose rules of `parse_json_output`). Against a regular reference (see `_diff_keys`) an output
    orjson writes as it writes the reference is exact; any other is compared with the reference
    side by side, flattening only the items that differ. Exact and missing or invalid outputs
    take their per-field counts from the reference's profile, once per profile; the others
    correct it by the paths where the two differ. The records are kept as columns
    (`StructuredRecords`).

    The stages: each output read, compared and counted in one pass (`_count_outputs`; the rarer
    cases in helpers of their own), then the profiles' per-field counts (`_add_profiles`)."""
    total = len(ids)
    # the columns of the records, written where not 0
    codes = [0] * total
    tps = [0] * total
    fps = [0] * total
    fns = [0] * total
    errors: dict[int, str] = {}
    tp_mult = [0] * len(refs.tables)
    fn_mult = [0] * len(refs.tables)
    # each id's output (`_ABSENT` where there is none): the outputs themselves when they are keyed
    # by the ids in their order
    outputs: Any = preds.values() if isinstance(preds, dict) and len(preds) == total and list(preds) == ids else map(preds.get, ids, repeat(_ABSENT))
    n_missing = _count_outputs(outputs, refs, per_field, (codes, tps, fps, fns, errors, tp_mult, fn_mult), progress, model)
    _add_profiles(refs.tables, tp_mult, fn_mult, per_field)
    # the summed counts, from the columns (codes: 1 valid, 2 extracted, 4 exact; 0 invalid)
    n_valid = total - codes.count(0)
    n_extracted = codes.count(3) + codes.count(7)
    n_exact = codes.count(5) + codes.count(7)
    recs = StructuredRecords(ids, codes, tps, fps, fns, errors)
    return recs, [total, n_valid, n_valid - n_extracted, n_extracted, n_exact, sum(tps), sum(fps), sum(fns)], n_missing


def _count_outputs(outputs: Any, refs: _References, per_field: dict[str, list[int]],
                   columns: tuple[list[int], list[int], list[int], list[int], dict[int, str], list[int], list[int]],
                   progress: Callable[[int, int, str, dict[str, float]], None] | None, model: str) -> int:
    """The read, compare and count stages of `_score_model_exact`, output by output: each record's
    code, tp, fp, fn and error, and each profile's multiplicities (as TPs, as FNs) written in
    `columns`. Returns how many outputs were missing."""
    codes, tps, fps, fns, errors, tp_mult, fn_mult = columns
    fast_loads, fast_error, dumps = (_orjson.loads, _orjson.JSONDecodeError, _orjson.dumps) if _orjson is not None else (None, ValueError, None)
    n_present = refs.n_present
    total = len(codes)
    n_missing = 0
    running = [0] * 8
    missing = _ABSENT
    side_by_side = dumps is not None  # a reference `_diff_keys` may compare side by side (none without orjson)
    json_start = JSON_START
    text = ""  # read only where orjson read it
    for n, (raw, ref, rflags, pid) in enumerate(zip(outputs, refs.values, refs.flags, refs.pids)):
        value: Any = missing
        extracted = from_orjson = False
        if type(raw) is str and fast_loads is not None:
            text = raw.strip()
            if text:
                c = text[0]
                # else no parser reads the text whole: a fence, prose, or an object or array cut
                # short (a truncated output: `json` gives the reason)
                if c in json_start:
                    if not ((c == "{" and text[-1] != "}") or (c == "[" and text[-1] != "]")):
                        try:
                            value = fast_loads(text)
                            from_orjson = True
                        except fast_error:
                            pass
                        if from_orjson and may_misread_numbers(text):  # a number a float would round: read exactly
                            value, from_orjson = missing, False
                elif c == "`":
                    value, from_orjson, text = _read_fence(raw, text, fast_loads, fast_error)
                    extracted = from_orjson
        if not from_orjson:
            value, extracted, error = _read_other(raw, text if type(raw) is str and fast_loads is not None else None)
            if value is missing:
                n_missing += raw is missing
                fn_mult[pid] += 1
                fns[n] = n_present[pid]
                errors[n] = error  # type: ignore[assignment]
                if progress is not None:
                    running[0] += 1
                    progress(n + 1, total, model, _RunningRates(running))
                continue
        tp_mult[pid] += 1
        tp = n_present[pid]
        if side_by_side and not rflags & _REF_NO_SHORTCUT and type(raw) is str:
            # a regular reference: written alike by orjson is the same document (`==` as well for
            # an output `json` read: orjson writes its NaN and Infinity as null); else the two are
            # compared side by side (orjson refuses to write a document nested deeper than 255
            # levels, or an integer beyond 64 bits)
            try:
                exact = dumps(value) == dumps(ref) and (from_orjson or value == ref)  # type: ignore[misc]
            except (TypeError, ValueError, RecursionError):
                exact = False
            if not exact:
                rd, pd = _regular_keys(ref, value, raw, rflags, refs, n)
                exact = rd == pd
        else:
            rd, pd = _irregular_keys(value, text, from_orjson, refs, n)
            exact = rd == pd
        if exact:
            tps[n] = tp
            codes[n] = 7 if extracted else 5
        else:
            tps[n], fps[n], fns[n] = _count_difference(rd, pd, tp, per_field)
            codes[n] = 3 if extracted else 1
        if progress is not None:
            running[0] += 1
            running[1] += 1
            running[4] += exact
            progress(n + 1, total, model, _RunningRates(running))
    return n_missing


def _read_fence(raw: str, text: str, fast_loads: Callable[[str], Any], fast_error: type[Exception]) -> tuple[Any, bool, str]:
    """The read stage of a fenced output (stripped `text`): the body of its first fence, what
    `parse_json_text` reads first, read by orjson. Returns the value (`_ABSENT` where orjson did
    not read it: `parse_json_text` then reads all of the text), whether orjson read it, and the
    text read."""
    value: Any = _ABSENT
    from_orjson = False
    body = first_fence_body(text)
    if body and body[0] in JSON_START and not ((body[0] == "{" and body[-1] != "}") or (body[0] == "[" and body[-1] != "]")):
        try:
            value = fast_loads(body)
            from_orjson = True
            text = body
        except fast_error:
            pass
        if from_orjson and may_misread_numbers(body):  # a number a float would round: read exactly
            value, from_orjson, text = _ABSENT, False, raw.strip()
    return value, from_orjson, text


def _read_other(raw: Any, text: str | None) -> tuple[Any, bool, str | None]:
    """The read stage of an output orjson did not read (`text`: its stripped text where orjson
    was tried, else None): `json` reads it, with the fences and prose rules of
    `parse_json_output`. Returns the value (`_ABSENT` for a missing or invalid output), whether
    it was extracted from around other text, and the error of an output that has no value."""
    if raw is _ABSENT:
        return _ABSENT, False, "no output for this id"
    # orjson has refused the text (if it was one): `json` reads it
    parsed = parse_json_text(text, loads_std_any_depth) if text else parse_json_output(raw)
    if parsed.ok:
        return parsed.value, parsed.extracted, None
    return _ABSENT, False, parsed.error or "not valid JSON"


def _regular_keys(ref: Any, value: Any, raw: str, rflags: int, refs: _References, n: int) -> tuple[dict[str, str], dict[str, str]]:
    """The compare stage against a regular reference (position `n`) of an output orjson does not
    write alike: the flattened keys of the two where they differ, side by side where both are
    non-empty objects or both non-empty arrays (`_diff_keys`), else whole."""
    tv = type(value)
    if value and (tv is dict if type(ref) is dict else tv is list):
        rd: dict[str, str] = {}
        pd: dict[str, str] = {}
        try:
            _diff_keys(ref, value, "", rd, pd, bool(rflags & _REF_BOOL) or "true" in raw or "false" in raw)
            return rd, pd
        except RecursionError:
            pass
    return refs.keys(n), flat_keys(value)


def _irregular_keys(value: Any, text: str, from_orjson: bool, refs: _References, n: int) -> tuple[dict[str, str], dict[str, str]]:
    """The compare stage where no shortcut is taken (an irregular reference at position `n`, an
    output that is not a string, no orjson): the flattened keys of both whole. orjson reads an
    integer beyond 64 bits as a float: such a document (`text`) is read again by `json`, which
    keeps it exact."""
    tv = type(value)
    if from_orjson and (tv is dict or tv is list) and value:
        pd: dict[str, str] = {}
        try:
            _flat_walk(pd, "", value, False, True)
            return refs.keys(n), pd
        except (_LossyNumber, RecursionError):
            value = loads_any_depth(text)
    elif from_orjson and tv is float and not -9.2e18 < value < 9.2e18:
        value = loads_any_depth(text)
    return refs.keys(n), flat_keys(value)


def _count_difference(rd: dict[str, str], pd: dict[str, str], tp: int, per_field: dict[str, list[int]]) -> tuple[int, int, int]:
    """The count stage of an output that is not exact: `compare_flat` by difference. The profile
    counts every present reference path as a TP (`tp` of them); only the items the two maps do
    not share are looked at one by one, each correcting `per_field`. Returns tp, fp, fn."""
    fp = fn = 0
    for p, k in rd.items() - pd.items():
        if k[0] == "\x00":
            continue
        slot = per_field.get(generic_path(p))
        if slot is None:
            slot = per_field[generic_path(p)] = [0, 0, 0]
        q = pd.get(p)
        tp -= 1
        slot[0] -= 1
        fn += 1
        slot[2] += 1
        if q is not None and q[0] != "\x00":
            fp += 1
            slot[1] += 1
    for p, q in pd.items() - rd.items():
        if q[0] == "\x00":
            continue
        k = rd.get(p)
        if k is None or k[0] == "\x00":
            fp += 1
            slot = per_field.get(generic_path(p))
            if slot is None:
                slot = per_field[generic_path(p)] = [0, 0, 0]
            slot[1] += 1
    return tp, fp, fn


def _add_profiles(tables: list[dict[str, int]], tp_mult: list[int], fn_mult: list[int], per_field: dict[str, list[int]]) -> None:
    """The ledger stage: each profile's per-field counts added to `per_field` once, times the
    number of records that take them as TPs (`tp_mult`: valid outputs) and as FNs (`fn_mult`:
    missing or invalid outputs)."""
    for pid, table in enumerate(tables):
        a, b = tp_mult[pid], fn_mult[pid]
        if not a and not b:
            continue
        for g, c in table.items():
            slot = per_field.get(g)
            if slot is None:
                slot = per_field[g] = [0, 0, 0]
            slot[0] += a * c
            slot[2] += b * c


class _RunningRates(Mapping[str, float]):
    """The running metrics a progress line shows, computed only when it is read."""

    def __init__(self, running: list[int]) -> None:
        self._r = running

    def _rates(self) -> dict[str, float]:
        n = self._r[0] or 1
        return {"json_valid_rate": self._r[1] / n, "exact_match_rate": self._r[4] / n}

    def __getitem__(self, key: str) -> float:
        return self._rates()[key]

    def __iter__(self) -> Any:
        return iter(("json_valid_rate", "exact_match_rate"))

    def __len__(self) -> int:
        return 2


def _preview(raw: Any, limit: int = 160) -> str:
    s = raw if isinstance(raw, str) else repr(raw)
    return s if len(s) <= limit else s[:limit] + "…"
