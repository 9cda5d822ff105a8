"""The `toolcalls` task's count of one record (the general path): predicted calls paired with the reference's by
optimal assignment, each argument compared by path and value."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from extracteval.core.matching import max_matching
from extracteval.core.decision_track import leaf_key

from extracteval.tasks.toolcalls.parsing import Call, ParsedCalls, _new, parse_calls
from extracteval.tasks.toolcalls.references import RefCall, _present_keys, _whole_key
from extracteval.tasks.toolcalls.config import ToolCallCounts, ToolCallRecord, _COUNT_FIELDS


def _pred_keys(call: Call, ref: RefCall, key_fn: Callable[[Any], str | None]) -> dict[str, str]:
    if not call.valid or call.args is None:
        return {}
    if ref.whole:
        return {p: _whole_key(v, key_fn) for p, v in call.args.items()}
    return _present_keys(call.args, key_fn)


def _compare(ref: RefCall, pred: Mapping[str, str]) -> tuple[int, int, int]:
    tp = fp = fn = 0
    for p, ok in ref.accept.items():
        k = pred.get(p)
        if k is None:
            if p not in ref.optional:
                fn += 1
        elif k in ok:
            tp += 1
        elif not ok and p in ref.optional:  # only "" acceptable: the parameter must be left out
            fp += 1
        else:
            fp += 1
            fn += 1
    fp += sum(1 for p in pred if p not in ref.accept)
    return tp, fp, fn


def _pair_score(c: tuple[int, int, int]) -> float:
    """0.5 for a same-name pair plus half its argument agreement (Dice of tp, fp, fn)."""
    tp, fp, fn = c
    return 0.5 + 0.5 * (2 * tp / (2 * tp + fp + fn) if (tp + fp + fn) else 1.0)


def score_toolcall_record(refs: Sequence[RefCall], output: Any, *, rid: str = "", key_fn: Callable[[Any], str | None] = leaf_key) -> ToolCallRecord:
    """Score one record's output against its reference calls (see the module docstring)."""
    return _score_parsed(refs, _ParsedEntry(parse_calls(output), key_fn), rid, {})


class _ParsedEntry:
    """One parsed output plus its calls' flattened argument keys, computed on first use.

    `score_toolcalls` keeps one entry per distinct raw output string, so repeated outputs (the
    same call answered to many questions, "no call", a refusal) are parsed and canonicalised
    once; the keys are a pure function of the call's arguments and `key_fn`.
    """

    __slots__ = ("parsed", "key_fn", "_present", "_whole")

    def __init__(self, parsed: ParsedCalls, key_fn: Callable[[Any], str | None]) -> None:
        self.parsed = parsed
        self.key_fn = key_fn
        self._present: list[dict[str, str] | None] = [None] * len(parsed.calls)
        self._whole: list[dict[str, str] | None] | None = None

    def keys(self, j: int, whole: bool) -> dict[str, str]:
        """`_pred_keys` of call j (whole-parameter keys for BFCL references)."""
        if whole:
            if self._whole is None:
                self._whole = [None] * len(self.parsed.calls)
            cache = self._whole
        else:
            cache = self._present
        k = cache[j]
        if k is None:
            c = self.parsed.calls[j]
            if not c.valid or c.args is None:
                k = {}
            elif whole:
                k = {p: _whole_key(v, self.key_fn) for p, v in c.args.items()}
            else:
                k = _present_keys(c.args, self.key_fn)
            cache[j] = k
        return k


_RECORD_SET = tuple(ToolCallRecord.__dict__[f].__set__ for f in ("id", "valid", "correct", "format", "pairs", "counts", "error"))


_PAIR_00 = ((0, 0),)


def _make_record(rid: str, valid: bool, correct: bool, fmt: str, pairs: tuple[tuple[int, int], ...], counts: ToolCallCounts, error: str | None) -> ToolCallRecord:
    r = _new(ToolCallRecord)
    s_id, s_valid, s_correct, s_format, s_pairs, s_counts, s_error = _RECORD_SET
    s_id(r, rid)
    s_valid(r, valid)
    s_correct(r, correct)
    s_format(r, fmt)
    s_pairs(r, pairs)
    s_counts(r, counts)
    s_error(r, error)
    return r


def _counts(interned: dict[tuple[int, ...], ToolCallCounts], values: tuple[int, ...]) -> ToolCallCounts:
    c = interned.get(values)
    if c is None:
        c = interned[values] = ToolCallCounts(**dict(zip(_COUNT_FIELDS, values)))
    return c


def _score_parsed(refs: Sequence[RefCall], entry: _ParsedEntry, rid: str, interned: dict[tuple[int, ...], ToolCallCounts]) -> ToolCallRecord:
    parsed = entry.parsed
    preds = parsed.calls
    n_ref, n_pred = len(refs), len(preds)
    pairs: list[tuple[int, int]] = []
    if n_ref == 1 and n_pred == 1:
        p0, r0 = preds[0], refs[0]
        if p0.name == r0.name:
            tp, fp, fn = _compare(r0, entry.keys(0, r0.whole))
            ok = fp == 0 and fn == 0 and p0.valid
            valid = parsed.valid
            return _make_record(rid, valid, valid and ok, parsed.format, _PAIR_00,
                                _counts(interned, (1, int(valid), int(valid and ok), 1, 1, int(not p0.valid), 1, int(ok), tp, fp, fn)),
                                parsed.error or p0.error)
    cmp: Any
    by_name = {c.name: j for j, c in enumerate(preds)}
    if len(by_name) == n_pred and len({r.name for r in refs}) == n_ref:
        # no name repeats on either side: each same-name pair is the only one its calls can form,
        # so the assignment below would pair exactly these (in reference order)
        cmp = {}
        for i, r in enumerate(refs):
            j = by_name.get(r.name)
            if j is not None:
                pairs.append((i, j))
                cmp[i, j] = _compare(r, entry.keys(j, r.whole))
        return _tally(refs, entry, rid, interned, pairs, lambda i, j: cmp[i, j])
    # argument comparison only where the names agree (the only admissible pairs)
    cmp = [[_compare(r, entry.keys(j, r.whole)) if c.name == r.name else (0, 0, 0) for j, c in enumerate(preds)] for r in refs]
    if n_ref and n_pred and not (n_ref == 1 and n_pred == 1):
        pairs = _group_pairs([r.name for r in refs], [c.name for c in preds], cmp)
    return _tally(refs, entry, rid, interned, pairs, lambda i, j: cmp[i][j])


def _group_pairs(ref_names: Sequence[str | None], pred_names: Sequence[str | None], cmp: Sequence[Sequence[tuple[int, int, int]]]) -> list[tuple[int, int]]:
    """The optimal one-to-one pairing (sorted) of calls whose names repeat; `cmp[i][j]` is the
    (tp, fp, fn) of reference call i and predicted call j where their names agree."""
    # Only same-name pairs are admissible, so the assignment splits into one independent
    # problem per function name; most are 1×1 or 1×k and need no solver.
    pairs: list[tuple[int, int]] = []
    groups: dict[str | None, tuple[list[int], list[int]]] = {}
    for i, name in enumerate(ref_names):
        groups.setdefault(name, ([], []))[0].append(i)
    for j, name in enumerate(pred_names):
        if name in groups:
            groups[name][1].append(j)
    for ri, pj in groups.values():
        if not pj:
            continue
        if len(ri) == 1 and len(pj) == 1:
            pairs.append((ri[0], pj[0]))
            continue
        score = [[_pair_score(cmp[i][j]) for j in pj] for i in ri]
        if len(ri) == 1 or len(pj) == 1:
            # a single row or column: the optimum is its best cell (the first on ties)
            flat = [x for row in score for x in row]
            k = max(range(len(flat)), key=flat.__getitem__)
            pairs.append((ri[0], pj[k]) if len(ri) == 1 else (ri[k], pj[0]))
        else:
            pairs += [(ri[a], pj[b]) for a, b in max_matching(np.array(score), 0.5)]
    pairs.sort()
    return pairs


def _tally(refs: Sequence[RefCall], entry: _ParsedEntry, rid: str, interned: dict[tuple[int, ...], ToolCallCounts],
           pairs: list[tuple[int, int]], cmp: Callable[[int, int], tuple[int, int, int]]) -> ToolCallRecord:
    """The record of a pairing: `cmp(i, j)` is the (tp, fp, fn) of paired calls i and j."""
    parsed = entry.parsed
    preds = parsed.calls
    n_ref, n_pred = len(refs), len(preds)
    tp = fp = fn = exact = 0
    paired_ref = {i for i, _ in pairs}
    paired_pred = {j for _, j in pairs}
    for i, j in pairs:
        a, b, c = cmp(i, j)
        tp, fp, fn = tp + a, fp + b, fn + c
        if b == 0 and c == 0 and preds[j].valid:
            exact += 1
    for i in range(n_ref):
        if i not in paired_ref:
            fn += sum(1 for p in refs[i].accept if p not in refs[i].optional)
    for j in range(n_pred):
        if j not in paired_pred and preds[j].valid and preds[j].args is not None:
            fp += len(entry.keys(j, False))
    valid = parsed.valid
    correct = valid and n_pred == n_ref and exact == n_ref
    counts = _counts(interned, (1, int(valid), int(correct), n_ref, n_pred, sum(1 for c in preds if not c.valid), len(pairs), exact, tp, fp, fn))
    error = parsed.error or next((c.error for c in preds if not c.valid), None)
    return _make_record(rid, valid, correct, parsed.format, tuple(pairs), counts, error)
