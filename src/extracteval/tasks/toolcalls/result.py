"""The `toolcalls` task's count of a set of records (`count_toolcalls`: each model's outputs read once per
distinct text, scored on the direct or the general path) and the result of a merged ledger: rates, ranking."""

from __future__ import annotations

import json
import marshal
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import islice
from operator import attrgetter
from typing import Any

from extracteval.tasks.toolcalls.contract import RANKING
from extracteval.core.ranking import rank_by_metrics
from extracteval.core.decision_track import _EXAMPLES, ExtendedScores, extended_scores, paused_gc
from extracteval.io.id_order import natural_ids, natural_sorted

from extracteval.tasks.toolcalls.parsing import ParsedCalls, _NotCalls, _calls_from_object, _new, parse_calls
from extracteval.tasks.toolcalls.references import RefCall, reference_calls
from extracteval.tasks.toolcalls.config import ToolCallConfig, ToolCallCounts, ToolCallModelResult, ToolCallRecord, ToolCallResult, _COUNT_FIELDS
from extracteval.tasks.toolcalls.counting import _ParsedEntry, _RECORD_SET, _score_parsed
from extracteval.tasks.toolcalls.plain import _output_entry, _plain_entry, _plain_refs, _ref_calls, _score_plain
from extracteval.tasks.toolcalls.ledger import ToolCallsLedger, _ModelLedger


def _calls_text(calls: Sequence[tuple[str | None, Any]]) -> str:
    items = sorted(json.dumps({"name": n, "arguments": a}, sort_keys=True, ensure_ascii=False, default=str) for n, a in calls)
    return "[" + ",".join(items) + "]"


def count_toolcalls(
    truth: Mapping[str, Any],
    predictions: Mapping[str, Mapping[str, Any]],
    *,
    possible_answer: bool = False,
    config: ToolCallConfig,
    similarity: Mapping[str, Any] | None = None,
    progress: Callable[[int, int, str, dict[str, float]], None] | None = None,
) -> ToolCallsCount:
    """Every record of every model scored (the arguments of `score_toolcalls`): its ledger, the
    per-record results and the extended metrics. The in-memory score reduces the count of all
    records; the chunk engine adds up the ledgers of its chunks and reduces them the same way
    (`toolcalls_result`)."""
    key_fn = config.key_fn()
    ids = natural_sorted(truth)
    plain = not possible_answer  # plain references: the direct path (`_score_plain`)
    with paused_gc():
        ref_list, ref_slots, _ = _reference_slots(truth, ids, possible_answer, key_fn, plain=plain)
    refs = dict(zip(ids, map(_ref_calls, ref_list) if plain else ref_list)) if similarity else {}
    # an output's entry and the scoring of an entry against a reference
    read: Callable[[str, Callable[[Any], str | None]], Any] = _output_entry if plain else _general_entry
    score: Callable[..., ToolCallRecord] = _score_plain if plain else _score_general
    entry_of: Callable[[ParsedCalls, Callable[[Any], str | None]], Any] = _plain_entry if plain else _ParsedEntry
    pair_cache: dict[tuple[tuple[int, int], ...], tuple[tuple[int, int], ...]] = {}
    ledgers: dict[str, _ModelLedger] = {}
    extended_of: dict[str, dict[str, ExtendedScores]] = {}
    records: dict[str, tuple[ToolCallRecord, ...]] = {}
    interned: dict[tuple[int, ...], ToolCallCounts] = {}
    for m in sorted(predictions):
        preds = predictions[m]
        with paused_gc():
            recs, failed, missing_ids = _score_records(
                m, preds, ids, ref_list, ref_slots, key_fn, read, score, entry_of, interned, pair_cache, progress)
        ledgers[m] = _model_ledger(recs, failed, missing_ids, preds, truth, ids, interned)
        extended_of[m] = _extended_metrics(recs, preds, truth, refs, similarity, possible_answer, config)
        records[m] = tuple(recs)
    return ToolCallsCount(ledger=ToolCallsLedger(n_records=len(ids), models=ledgers), records=records, extended=extended_of)


def _score_records(
    m: str, preds: Mapping[str, Any], ids: Sequence[str], ref_list: Sequence[Any], ref_slots: Sequence[int], key_fn: Callable[[Any], str | None],
    read: Callable[[str, Callable[[Any], str | None]], Any], score: Callable[..., ToolCallRecord], entry_of: Callable[[ParsedCalls, Callable[[Any], str | None]], Any],
    interned: dict[tuple[int, ...], ToolCallCounts], pair_cache: Any, progress: Callable[[int, int, str, dict[str, float]], None] | None,
) -> tuple[list[ToolCallRecord], list[str], list[str]]:
    """The scoring stage of model `m`: its record per id (in `ids` order), each output read once
    per distinct text while that pays, with the ids it failed and the ids it has no output for."""
    missing = _MISSING
    get = preds.get
    recs: list[ToolCallRecord] = []
    append = recs.append
    running = [0, 0, 0]  # records, valid, correct: what the progress line shows
    # per model: the reading of each output string met again with another reference
    # (bounded: outputs that never repeat must not hold every parsed output in memory)
    parsed_cache: dict[str, Any] = {}
    # output string → the record it first got and the reference tuple it was scored against
    # (the tuples are shared per distinct reference): the same output against the same
    # reference has the same verdict. An output met again with another reference goes to
    # `other`, keyed by (output, that reference's number). Both are left, as the reference
    # cache is, when few of the first outputs repeat (`_CACHE_PROBE`): each output is then
    # read and scored on its own.
    cached, repeats, probe_at = True, 0, _CACHE_PROBE
    seen_rec: dict[str, ToolCallRecord] = {}
    seen_ref: dict[str, Any] = {}
    other: dict[tuple[str, int], ToolCallRecord] = {}
    failed: list[str] = []
    missing_ids: list[str] = []
    new, s_id, s_valid, s_correct, s_format, s_pairs, s_counts, s_error = (_new, *_RECORD_SET)
    for k, (i, ref, slot) in enumerate(zip(ids, ref_list, ref_slots), start=1):
        raw = get(i, missing)
        if type(raw) is str:
            if not cached:
                rec = score(ref, read(raw, key_fn), i, interned, pair_cache)
                seen = None
            elif (seen := seen_rec.get(raw)) is None:
                # first met: read here; `parsed_cache` keeps the reading only for an
                # output met again with another reference
                rec = seen_rec[raw] = score(ref, read(raw, key_fn), i, interned, pair_cache)
                seen_ref[raw] = ref
                if k >= probe_at:
                    probe_at = len(ids) + 1
                    if repeats < _CACHE_PROBE // _CACHE_PROBE_HITS:
                        cached = False
                        seen_rec.clear()
                        seen_ref.clear()
            else:
                repeats += 1
                if seen_ref[raw] is not ref:
                    seen = other.get((raw, slot))
                    if seen is None:
                        rec = other[raw, slot] = score(ref, _parsed_entry(parsed_cache, raw, key_fn, read), i, interned, pair_cache)
            if seen is not None:
                rec = new(ToolCallRecord)
                s_id(rec, i)
                s_valid(rec, seen.valid)
                s_correct(rec, seen.correct)
                s_format(rec, seen.format)
                s_pairs(rec, seen.pairs)
                s_counts(rec, seen.counts)
                s_error(rec, seen.error)
        elif raw is missing:
            rec = replace(score(ref, entry_of(parse_calls(None), key_fn), i, interned, pair_cache), error="no output for this id")
            missing_ids.append(i)
        else:
            rec = score(ref, entry_of(parse_calls(raw), key_fn), i, interned, pair_cache)
        if not rec.correct:
            failed.append(i)
        append(rec)
        if progress is not None:
            running[0] += 1
            running[1] += rec.valid
            running[2] += rec.correct
            n = running[0]
            progress(k, len(ids), m, {"valid_call_rate": running[1] / n, "call_accuracy": running[2] / n})
    del parsed_cache, seen_rec, seen_ref, other
    return recs, failed, missing_ids


def _model_ledger(recs: Sequence[ToolCallRecord], failed: list[str], missing_ids: list[str], preds: Mapping[str, Any], truth: Mapping[str, Any],
                  ids: Sequence[str], interned: dict[tuple[int, ...], ToolCallCounts]) -> _ModelLedger:
    """The ledger stage of one model: its summed counts, formats, failed, missing and extra ids and
    first invalid outputs."""
    # sum each distinct (shared, from `interned`) counts object once, weighted by how many
    # records hold it
    distinct = {id(c): c for c in interned.values()}
    multiplicity = Counter(map(id, map(_COUNTS_OF, recs)))
    formats = Counter(map(_FORMAT_OF, recs))
    total = ToolCallCounts(**{f: sum(getattr(distinct[c], f) * n for c, n in multiplicity.items()) for f in _COUNT_FIELDS})
    return _ModelLedger(
        counts=total,
        formats=dict(formats),
        failed=tuple(failed),
        missing=tuple(missing_ids),
        # every output key is a truth id when as many keys as matched ids
        extra=() if len(preds) == len(ids) - len(missing_ids) else tuple(str(i) for i in preds if i not in truth),
        invalid_examples=tuple(islice(({"id": r.id, "error": r.error, "output": _preview(preds.get(r.id))} for r in recs if not r.valid), _EXAMPLES)),
    )


def _extended_metrics(recs: Sequence[ToolCallRecord], preds: Mapping[str, Any], truth: Mapping[str, Any], refs: Mapping[str, Any],
                      similarity: Mapping[str, Any] | None, possible_answer: bool, config: ToolCallConfig) -> dict[str, ExtendedScores]:
    """The extended stage of one model: each similarity metric asked, over the records' calls
    written as text."""
    extended = {}
    for metric, backend in sorted((similarity or {}).items()):
        pred_texts, ref_texts = [], []
        for r in recs:
            pc = parse_calls(preds.get(r.id))
            pred_texts.append(_calls_text([(c.name, c.args) for c in pc.calls]) if pc.calls else str(preds.get(r.id) or ""))
            ref_texts.append(_calls_text([(c.name, {p: sorted(v) for p, v in c.accept.items()}) for c in refs[r.id]]) if possible_answer else
                             _calls_text([(c.name, c2) for c, c2 in zip(refs[r.id], [_ref_args(truth[r.id], n) for n in range(len(refs[r.id]))])]))
        extended[metric], _ = extended_scores(backend, pred_texts, ref_texts, threshold=config.pass_threshold)
    return extended


@dataclass(frozen=True)
class ToolCallsCount:
    """`count_toolcalls` of a set of records: its ledger, per model the per-record results and
    the extended metrics (means over every record, so never merged across chunks)."""

    ledger: ToolCallsLedger
    records: Mapping[str, tuple[ToolCallRecord, ...]]
    extended: Mapping[str, dict[str, ExtendedScores]]

    def result(self, config: ToolCallConfig) -> ToolCallResult:
        return toolcalls_result(self.ledger, config, records=self.records, extended=self.extended)


def toolcalls_result(ledger: ToolCallsLedger, config: ToolCallConfig, *, records: Mapping[str, tuple[ToolCallRecord, ...]] | None = None,
                     extended: Mapping[str, dict[str, ExtendedScores]] | None = None) -> ToolCallResult:
    """Ratios and ranking of a ledger: where the in-memory score and the chunk engine end."""
    results = {
        m: ToolCallModelResult(
            model=m,
            counts=ml.counts,
            metrics=ml.counts.metrics(zero_division=config.zero_division),
            # one count lists its ids in id order already
            missing_ids=natural_ids(ml.missing) if ml.merged else ml.missing,
            extra_ids=natural_ids(ml.extra),
            failed_ids=natural_ids(ml.failed) if ml.merged else ml.failed,
            formats=dict(sorted(ml.formats.items())),
            invalid_examples=ml.invalid_examples,
            extended=dict((extended or {}).get(m, {})),
        )
        for m, ml in sorted(ledger.models.items())
    }
    return ranked_result(results, config=config, n_records=ledger.n_records, records=records or {})


def ranked_result(results: Mapping[str, ToolCallModelResult], *, config: ToolCallConfig, n_records: int,
                  records: Mapping[str, tuple[Any, ...]]) -> ToolCallResult:
    """The result of every model's counts, ranked by the task's declaration (call accuracy first),
    each model with its rank: the in-memory score and the chunk engine's finalisation end here."""
    order = [r.model for r in rank_by_metrics(RANKING, {m: {f"toolcalls/{k}": float(v) for k, v in results[m].metrics.items()} for m in results})]
    ranked = {m: replace(results[m], rank=rank) for rank, m in enumerate(order, start=1)}
    return ToolCallResult(task="toolcalls", config=config, n_records=n_records, ranking=tuple(order), models={m: ranked[m] for m in results},
                          records=dict(records))


def _read_references(truth: Mapping[str, Any], ids: Sequence[str], possible_answer: bool, key_fn: Callable[[Any], str | None]) -> dict[str, tuple[RefCall, ...]]:
    """`reference_calls` of every record, read once per distinct reference value (see
    `_reference_slots`)."""
    ref_list, _, _ = _reference_slots(truth, ids, possible_answer, key_fn)
    return dict(zip(ids, ref_list))


_MISSING = object()


_PARSED_CACHE_MAX = 1 << 13


_COUNTS_OF = attrgetter("counts")


_FORMAT_OF = attrgetter("format")


def _parsed_entry(cache: dict[str, Any], raw: str, key_fn: Callable[[Any], str | None], read: Callable[[str, Callable[[Any], str | None]], Any]) -> Any:
    """The entry `read(raw, key_fn)` from the per-model cache, read on first use. The cache is
    emptied when full: outputs that never repeat must not hold every parse in memory."""
    entry = cache.get(raw)
    if entry is None:
        if len(cache) >= _PARSED_CACHE_MAX:
            cache.clear()
        entry = cache[raw] = read(raw, key_fn)
    return entry


def _general_entry(raw: str, key_fn: Callable[[Any], str | None]) -> _ParsedEntry:
    return _ParsedEntry(parse_calls(raw), key_fn)


def _score_general(refs: Sequence[RefCall], entry: _ParsedEntry, rid: str, interned: dict[tuple[int, ...], ToolCallCounts], pair_cache: Any) -> ToolCallRecord:
    return _score_parsed(refs, entry, rid, interned)


def _reference_slots(
    truth: Mapping[str, Any], ids: Sequence[str], possible_answer: bool, key_fn: Callable[[Any], str | None], *, plain: bool = False
) -> tuple[list[Any], list[int], int]:
    """`reference_calls` of every record in `ids` order, each distinct reference value read once,
    with the number of that distinct reference (0, 1, …) per record and how many there are.

    References repeat (the same expected call for many questions); the cache key is the value's
    `marshal` bytes, which exist only for values made of the built-in types themselves (no
    subclass) and tell apart everything `reference_calls` tells apart (`1` / `1.0` / `True` /
    `"1"`, lists / tuples, int / str keys); any other value is keyed by its `repr`, as before. A
    reference that raises is never cached, so each bad record is still named in its own error. A
    value nested too deeply for `repr` is read uncached, so `reference_calls` reports it as it
    would without the cache. With `plain` (never with `possible_answer`) each reference is
    `_plain_refs`' reading of it instead of its `RefCall`s.

    The cache costs more than it saves when references seldom repeat (a key per record, to look
    up and keep): when fewer than one in `_CACHE_PROBE_HITS` of the first `_CACHE_PROBE`
    references was met before, the rest are read one by one, each its own number.
    """
    cache: dict[str | bytes, int] = {}  # key → the number of its distinct reference
    distinct: list[Any] = []  # number → reading
    out: list[Any] = []

    def read(obj: Any, rid: str) -> Any:
        if plain:
            return _plain_refs(obj, key_fn, rid)
        return reference_calls(obj, possible_answer=possible_answer, key_fn=key_fn, where=f"reference {rid}")

    slots: list[int] = []
    n_slots = 0
    dumps = marshal.dumps
    for n, i in enumerate(ids):
        obj = truth[i]
        if n == _CACHE_PROBE and n - n_slots < _CACHE_PROBE // _CACHE_PROBE_HITS:
            break  # the rest below, uncached
        try:
            key: str | bytes = dumps(obj)
        except ValueError:  # a subclass or another type marshal does not write, or too deep
            try:
                key = repr(obj)
            except RecursionError:
                distinct.append(read(obj, i))  # a number of its own, never looked up
                out.append(distinct[n_slots])
                slots.append(n_slots)
                n_slots += 1
                continue
        got = cache.get(key)
        if got is None:
            distinct.append(read(obj, i))
            got = cache[key] = n_slots
            n_slots += 1
        out.append(distinct[got])
        slots.append(got)
    else:
        return out, slots, n_slots
    del cache, distinct
    if plain:
        out += [_plain_refs(truth[i], key_fn, i) for i in ids[len(out):]]
    else:
        out += [read(truth[i], i) for i in ids[len(out):]]
    n_read = len(out) - len(slots)
    slots += range(n_slots, n_slots + n_read)
    return out, slots, n_slots + n_read


# A cache of readings keyed by value is left once the first `_CACHE_PROBE` values show fewer
# than one repeat in `_CACHE_PROBE_HITS`.
_CACHE_PROBE = 4096


_CACHE_PROBE_HITS = 8


def _ref_args(obj: Any, n: int) -> Any:
    try:
        calls, _ = _calls_from_object(json.loads(obj) if isinstance(obj, str) else obj)
        return calls[n].args
    except (ValueError, _NotCalls, IndexError):
        return None


def _preview(raw: Any, limit: int = 160) -> str:
    s = raw if isinstance(raw, str) else json.dumps(raw, ensure_ascii=False, default=str) if raw is not None else ""
    return s if len(s) <= limit else s[:limit] + "…"
