"""JSONL files → chunks of the `json` task, aligned by record id in bounded memory.

The chunked reader gives each chunk the values `tasks.json.inputs.load_json_inputs` gives the
in-memory engine for the same records (records layout: the object minus the id, and for
predictions minus the safety key; pairs layout: `truth`, `prediction`, `status`, safety key), so
both engines score the same data. It streams JSONL only (one record per line, `.jsonl` /
`.ndjson`): a JSON array or a table is read whole by the in-memory engine.

Nothing is indexed: every file must be **sorted by record id** (ascending by code point, as
`LC_ALL=C sort`, ids compared as the strings the in-memory reader makes of them). The files are
merged by id, one record at a time; the first id that is not greater than the one before it in
its file stops the run with an `InputError` naming the file, line and both ids. A pairs file
holding several models (a `model` key) is refused: give one file per model.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from extracteval.tasks.json.semantics import JsonPredictions
from extracteval.io.scale_options import check_chunk_size
from extracteval.errors import InputError
from extracteval.io.id_order import check_id_order
from extracteval.io.config import model_files
from extracteval.tasks.json.inputs import _PAIR_EXTRA, _PAIR_KEYS, _canon, check_pair_keys, _record_id, _safety_value
from extracteval.io.json_text import jsonl_values

__all__ = ["JsonChunk", "JsonStream", "open_json_stream"]

_MISSING = object()


@dataclass(frozen=True)
class JsonChunk:
    """The records of one chunk: truth by id (ascending) and each model's predictions of them."""

    truth: dict[str, Any]
    predictions: list[JsonPredictions]
    truth_source: str


@dataclass
class _Rec:
    rid: str
    where: str
    truth: Any = _MISSING
    prediction: Any = _MISSING
    safety: float | None = None
    status: str | None = None

    @property
    def has_truth(self) -> bool:
        # a property, not `rec.truth is _MISSING` elsewhere: the sentinel does not survive pickling
        return self.truth is not _MISSING


class _JsonlRecords:
    """One JSONL file, record by record, parsed as `read_json_records` parses it."""

    def __init__(self, path: Path, *, role: str, id_key: str, safety_key: str, metadata: Sequence[str] = ()) -> None:
        self.path, self.role, self.id_key, self.safety_key, self.metadata = path, role, id_key, safety_key, tuple(metadata)
        self.pairs: bool | None = None
        self._last: tuple[str, str] | None = None

    def _lines(self) -> Iterator[tuple[str, Any]]:
        p = self.path
        if not p.exists():
            raise InputError(f"{p}: file not found.")
        if p.is_dir():
            raise InputError(f"{p}: is a directory; expected a file.")
        seen = False
        for i, obj in jsonl_values(p, unique_keys=True):
            seen = True
            yield f"line {i}", obj
        if not seen:
            # only blank lines (any other line is a record or an error): the in-memory reader's words
            raise InputError(f"{p}: the file is empty; expected one JSON object per line with an 'id' key.")

    def __iter__(self) -> Iterator[_Rec]:
        p, id_key, safety_key = self.path, self.id_key, self.safety_key
        for where, obj in self._lines():
            if not isinstance(obj, dict):
                raise InputError(f"{p}: {where}: expected a JSON object with an {id_key!r} key, but found {type(obj).__name__}.")
            if self.pairs is None:  # the layout is decided by the first record, as in the in-memory reader
                self.pairs = is_pairs(obj, id_key, safety_key, self.metadata)
            rec = parse_record(p, where, obj, role=self.role, pairs=self.pairs, id_key=id_key, safety_key=safety_key, metadata=self.metadata)
            if self._last is not None:
                check_id_order(p, where, rec.rid, *self._last)
            self._last = (rec.rid, where)
            yield rec


def is_pairs(first: dict[str, Any], id_key: str, safety_key: str, metadata: Sequence[str] = ()) -> bool:
    """The pairs layout ({"id", "truth", "prediction"}), decided by a file's first record (its
    metadata keys aside)."""
    keys = set(first) - {id_key, safety_key} - set(metadata)
    return bool(keys & _PAIR_KEYS) and keys <= _PAIR_KEYS | _PAIR_EXTRA


def parse_record(p: Path | str, where: str, obj: Any, *, role: str, pairs: bool, id_key: str, safety_key: str, metadata: Sequence[str] = ()) -> _Rec:
    """One record as `read_json_records` reads it (also used by the Spark engine's executors)."""
    if not isinstance(obj, dict):
        raise InputError(f"{p}: {where}: expected a JSON object with an {id_key!r} key, but found {type(obj).__name__}.")
    rid = _record_id(Path(p), where, obj, id_key)
    rec = _Rec(rid=rid, where=where)
    if pairs:
        check_pair_keys(p, where, obj, id_key, safety_key, metadata)
        if "model" in obj:
            raise InputError(
                f"{p}: {where}: a `model` key holds several models in one file; --chunk-size and --engine spark need one file "
                "per model (NAME=FILE). Split the file, or score in memory."
            )
        if role == "truth" or "truth" in obj:
            if "truth" not in obj:
                raise InputError(f"{p}: {where}: record {rid!r} has no 'truth' key; the ground truth needs one per record.")
            if not isinstance(obj["truth"], dict):
                raise InputError(f"{p}: {where}: record {rid!r}: 'truth' must be a JSON object, but found {type(obj['truth']).__name__}.")
            rec.truth = obj["truth"]
        if role == "predictions":
            if "prediction" not in obj:
                raise InputError(f"{p}: {where}: record {rid!r} has no 'prediction' key.")
            rec.prediction = obj["prediction"]
            if obj.get("status") is not None:
                rec.status = str(obj["status"])
    else:
        record = {k: v for k, v in obj.items() if k != id_key and (role == "truth" or k != safety_key)}
        if role == "truth":
            rec.truth = record
        else:
            rec.prediction = record
    if role == "predictions" and safety_key in obj:
        rec.safety = _safety_value(Path(p), where, rid, safety_key, obj[safety_key])
    return rec


@dataclass
class JsonStream:
    """The files of a chunked `json` run. `truth_source` is known after the first chunk when the
    truth comes from pairs files (the first file, in order, that holds a truth)."""

    truth: str | None
    models: dict[str, str]  # name → source, in the order given
    chunk_size: int
    id_key: str
    safety_key: str
    metadata: tuple[str, ...] = ()
    truth_source: str = ""
    _truth_rank: int = field(default=-1, repr=False)

    def chunks(self) -> Iterator[JsonChunk]:
        streams: list[tuple[str | None, Iterator[_Rec]]] = []
        if self.truth is not None:
            streams.append((None, iter(_JsonlRecords(Path(self.truth), role="truth", id_key=self.id_key, safety_key=self.safety_key, metadata=self.metadata))))
            self.truth_source = str(self.truth)
        for name, src in self.models.items():
            streams.append((name, iter(_JsonlRecords(Path(src), role="predictions", id_key=self.id_key, safety_key=self.safety_key, metadata=self.metadata))))
        heads: list[_Rec | None] = [next(it, None) for _, it in streams]
        names = list(self.models)
        truth: dict[str, Any] = {}
        preds: dict[str, dict[str, Any]] = {m: {} for m in names}
        safety: dict[str, dict[str, float]] = {m: {} for m in names}
        status: dict[str, dict[str, str]] = {m: {} for m in names}

        def flush() -> JsonChunk:
            chunk = JsonChunk(
                truth=dict(truth),
                predictions=[
                    JsonPredictions(name=m, records=dict(preds[m]), safety=dict(safety[m]), status=dict(status[m]), source=self.models[m])
                    for m in names
                ],
                truth_source=self.truth_source,
            )
            truth.clear()
            for d in (*preds.values(), *safety.values(), *status.values()):
                d.clear()
            return chunk

        while True:
            live = [h.rid for h in heads if h is not None]
            if not live:
                break
            rid = min(live)
            gt: Any = _MISSING
            gt_where = ""
            for k, (name, it) in enumerate(streams):
                h = heads[k]
                if h is None or h.rid != rid:
                    continue
                src = self.truth if name is None else self.models[name]
                if h.truth is not _MISSING:
                    if self.truth is None and (self._truth_rank < 0 or k < self._truth_rank):
                        # as in memory: the truth's source is the first file, in order, holding one
                        self._truth_rank, self.truth_source = k, str(src)
                    if gt is _MISSING:
                        if name is None or self.truth is None:  # with --truth, only its records are the truth
                            gt, gt_where = h.truth, str(src)
                    elif _canon(gt) != _canon(h.truth):
                        raise InputError(f"{src}: {h.where}: record {rid!r}: its 'truth' differs from the ground truth in {gt_where}.")
                if name is not None:
                    preds[name][rid] = h.prediction
                    if h.safety is not None:
                        safety[name][rid] = h.safety
                    if h.status is not None:
                        status[name][rid] = h.status
                heads[k] = next(it, None)
            if gt is _MISSING:
                who = [self.models[n] for n in names if rid in preds[n]]
                raise InputError(
                    f"{who[0] if who else '?'}: record id {rid!r} is not in the ground truth ({self.truth_source or 'the truth of the pairs files'}). "
                    "Every prediction must have a ground-truth record."
                )
            truth[rid] = gt
            if len(truth) >= self.chunk_size:
                yield flush()
        if truth:
            yield flush()


def open_json_stream(
    truth: str | Path | None, predictions: Sequence[str], *, chunk_size: int, id_key: str = "id", safety_key: str = "safety_score",
    metadata: Sequence[str] = (),
) -> JsonStream:
    """Check the file names and types; the files are read when the chunks are."""
    check_chunk_size(chunk_size)
    if not predictions:
        raise InputError("no predictions: give at least one --predictions NAME=FILE.")
    files = ([Path(truth)] if truth is not None else [])
    models = {name: str(path) for name, path in model_files(predictions).items()}
    files += [Path(path) for path in models.values()]
    for p in files:
        if p.suffix.lower() not in (".jsonl", ".ndjson"):
            raise InputError(
                f"{p}: --chunk-size streams JSONL files (one record per line) for the json task; {p.suffix!r} is not one "
                "(JSON arrays and tables are read whole: drop --chunk-size)."
            )
        if not p.exists():
            raise InputError(f"{p}: file not found.")
    return JsonStream(truth=None if truth is None else str(truth), models=models, chunk_size=chunk_size, id_key=id_key, safety_key=safety_key,
                      metadata=tuple(metadata))
