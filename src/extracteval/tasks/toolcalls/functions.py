"""Per-function counts of a scored tool-call run (the `toolcalls` task's per-item table).

`score_toolcalls` keeps one set of counts per record; the MLflow layer and reports also want
them per function name (which function does the small model get wrong?). Pairing only ever
joins calls of the same name, so a record's counts split exactly by function: the per-function
counts of a model add up to its totals (tested).

The items are the function names of the *reference*: predicted calls to a name the reference
never uses (a hallucinated function, an invalid call without a name) are pooled in one
`OTHER_FUNCTIONS` row, so a model cannot create an unbounded number of items (and metric keys).
Which names those are is known only once every record is read: `named_function_counts` keeps
every name apart (mergeable: a chunk's counts add up), `pool_functions` pools once at the end.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from extracteval.core.decision_track import leaf_key
from extracteval.tasks.toolcalls.semantics import RefCall, ToolCallRecord, parse_calls
from extracteval.tasks.toolcalls.ledger import add_function_counts
from extracteval.tasks.toolcalls.counting import _compare, _pred_keys
from extracteval.tasks.toolcalls.references import _present_keys
from extracteval.tasks.toolcalls.contract import OTHER_FUNCTIONS  # declared beside the ranking that excludes it

__all__ = ["FUNCTION_COUNT_KEYS", "OTHER_FUNCTIONS", "function_counts", "named_function_counts", "pool_functions", "add_function_counts"]

FUNCTION_COUNT_KEYS = ("ref_calls", "pred_calls", "invalid_calls", "name_matches", "args_exact", "tp", "fp", "fn")
_IDX = {k: i for i, k in enumerate(FUNCTION_COUNT_KEYS)}


def function_counts(
    refs: Mapping[str, Sequence[RefCall]],
    outputs: Mapping[str, Any],
    records: Sequence[ToolCallRecord],
    *,
    key_fn: Callable[[Any], str | None] = leaf_key,
) -> dict[str, dict[str, int]]:
    """function name → counts (`FUNCTION_COUNT_KEYS`) of one model: the reference's names in
    order, then `OTHER_FUNCTIONS` when a predicted call used another name (or none).

    Args: as `named_function_counts`.
    """
    names = {c.name for calls in refs.values() for c in calls}
    return pool_functions(named_function_counts(refs, outputs, records, key_fn=key_fn), names)


def named_function_counts(
    refs: Mapping[str, Sequence[RefCall]],
    outputs: Mapping[str, Any],
    records: Sequence[ToolCallRecord],
    *,
    key_fn: Callable[[Any], str | None] = leaf_key,
) -> dict[str | None, tuple[int, ...]]:
    """function name (None: a call without a name) → counts (`FUNCTION_COUNT_KEYS` order) of
    one model, every name apart, predicted names the reference lacks included.

    Args:
        refs: record id → the reference calls as `score_toolcalls` read them (same `key_fn`).
        outputs: record id → the model's raw output (a missing id means no output).
        records: the model's `ToolCallRecord`s; their `pairs` index the reference calls and the
            calls `parse_calls` reads from the output (deterministic, so the indices agree).
    """
    acc: dict[str | None, list[int]] = {}

    def row(name: str | None) -> list[int]:
        return acc.setdefault(name, [0] * len(FUNCTION_COUNT_KEYS))

    for rec in records:
        rcalls = refs[rec.id]
        pcalls = parse_calls(outputs.get(rec.id)).calls if rec.id in outputs else ()
        paired_ref = {i for i, _ in rec.pairs}
        paired_pred = {j for _, j in rec.pairs}
        for r in rcalls:
            row(r.name)[_IDX["ref_calls"]] += 1
        for i, j in rec.pairs:
            r, c = rcalls[i], pcalls[j]
            tp, fp, fn = _compare(r, _pred_keys(c, r, key_fn))
            a = row(r.name)
            a[_IDX["name_matches"]] += 1
            a[_IDX["args_exact"]] += int(fp == 0 and fn == 0 and c.valid)
            a[_IDX["tp"]] += tp
            a[_IDX["fp"]] += fp
            a[_IDX["fn"]] += fn
        for i, r in enumerate(rcalls):
            if i not in paired_ref:
                row(r.name)[_IDX["fn"]] += sum(1 for p in r.accept if p not in r.optional)
        for j, c in enumerate(pcalls):
            a = row(c.name)
            a[_IDX["pred_calls"]] += 1
            a[_IDX["invalid_calls"]] += int(not c.valid)
            if j not in paired_pred and c.valid and c.args is not None:
                a[_IDX["fp"]] += len(_present_keys(c.args, key_fn))
    return {n: tuple(a) for n, a in acc.items()}


def pool_functions(named: Mapping[str | None, tuple[int, ...]], reference_names: set[str] | frozenset[str]) -> dict[str, dict[str, int]]:
    """function name → counts: the reference's names (sorted), then every other name pooled in
    one `OTHER_FUNCTIONS` row (present only when some call landed there)."""
    names = sorted(reference_names)
    acc = {n: [0] * len(FUNCTION_COUNT_KEYS) for n in names}
    for n, c in named.items():
        a = acc.setdefault(n if n in reference_names else OTHER_FUNCTIONS, [0] * len(FUNCTION_COUNT_KEYS))
        for k, v in enumerate(c):
            a[k] += v
    order = names + ([OTHER_FUNCTIONS] if OTHER_FUNCTIONS in acc and OTHER_FUNCTIONS not in reference_names else [])
    return {n: dict(zip(FUNCTION_COUNT_KEYS, acc[n])) for n in order}
