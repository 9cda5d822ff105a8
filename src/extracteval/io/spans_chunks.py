"""JSONL span files → chunks of documents for the chunked `spans` engine, in bounded memory.

Each document is validated and read as `io.spans_inputs.load_jsonl_corpus` reads it (the same
checks and messages: offsets, tags, span texts against the document text); a chunk becomes a
`SpanCorpus` of its documents. Token (CoNLL) files are **not** streamed: a sentence's chunks
depend on the tags around them and the files are aligned token by token, so `--conll` and token
`--truth` files are read whole by the in-memory engine (`--chunk-size` is refused for them).

Every file must be sorted by document id (ascending by code point, `LC_ALL=C sort`; ids are
compared after stripping spaces, as the in-memory reader does). The first id not greater than
the one before it stops the run with an `InputError` naming the file, line and both ids; a truth
document without a prediction line, or a prediction without a truth document, is an error naming
the file and the id (as in memory: every truth document needs one line per model).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from extracteval.core.spans import SpanCorpus, SpanSet
from extracteval.errors import InputError
from extracteval.io.id_order import check_id_order
from extracteval.io.spans_inputs import read_span_list

__all__ = ["SpanDoc", "iter_span_docs", "SpansStream", "open_spans_stream"]


@dataclass
class SpanDoc:
    id: str
    at: str
    text: str | None
    spans: list[tuple[int, int, str, str | None]]


def iter_span_docs(path: Path, keys: Sequence[str]) -> Iterator[SpanDoc]:
    """The documents of one JSONL file, ids checked to ascend strictly."""
    if not path.exists():
        raise InputError(f"{path}: file not found.")
    last: tuple[str, str] | None = None
    seen = False
    try:
        fh = path.open(encoding="utf-8-sig", newline="")
    except PermissionError:
        raise InputError(f"{path}: permission denied; cannot read the file.") from None
    with fh:
        try:
            for n, line in enumerate(fh, start=1):
                if not line.strip():
                    continue
                at = f"line {n}"
                try:
                    rec = json.loads(line)
                except ValueError as e:
                    raise InputError(f"{path}: line {n}: not valid JSON ({e}).") from None
                doc = _doc(path, at, rec, keys)
                if last is not None:
                    check_id_order(path, at, doc.id, *last, noun="document id")
                last = (doc.id, at)
                seen = True
                yield doc
        except UnicodeDecodeError as e:
            raise InputError(f"{path}: expected UTF-8 text, but found byte 0x{e.object[e.start]:02x}; save the file as UTF-8.") from None
    if not seen:
        raise InputError(f"{path}: no documents found; expected one JSON object per line.")


def _doc(path: Path, at: str, rec: Any, keys: Sequence[str]) -> SpanDoc:
    if not isinstance(rec, dict):
        raise InputError(f"{path}: {at}: expected a JSON object per document, but found {type(rec).__name__}.")
    if "id" not in rec or rec["id"] is None or str(rec["id"]).strip() == "":
        raise InputError(f"{path}: {at}: expected an \"id\" key naming the document, but found none.")
    rid = str(rec["id"]).strip()
    doc_text = rec.get("text")
    if doc_text is not None and not isinstance(doc_text, str):
        raise InputError(f"{path}: {at} (id {rid!r}): \"text\": expected a string, but found {type(doc_text).__name__}.")
    key = next((k for k in keys if k in rec), None)
    if key is None:
        raise InputError(f"{path}: {at} (id {rid!r}): expected a {' or '.join(repr(k) for k in keys)} list of spans, but found keys {sorted(rec)}.")
    spans = read_span_list(rec[key], origin=f"{path}: {at} (id {rid!r})", key=key, doc_text=doc_text)
    return SpanDoc(id=rid, at=at, text=doc_text, spans=spans)


def chunk_corpus(gold: list[SpanDoc], preds: dict[str, list[SpanDoc]]) -> SpanCorpus:
    """The `SpanCorpus` of one chunk (documents in id order, tags of the chunk sorted)."""
    tags = sorted({s[2] for d in gold for s in d.spans} | {s[2] for docs in preds.values() for d in docs for s in d.spans})
    code = {t: i for i, t in enumerate(tags)}

    def spanset(docs: list[SpanDoc]) -> SpanSet:
        rows = [(k, s, e, code[t], own) for k, d in enumerate(docs) for (s, e, t, own) in d.spans]
        if not rows:
            return SpanSet.empty()
        doc, st, en, tg, own = zip(*rows)
        texts = np.asarray(own, dtype=object) if any(o is not None for o in own) else None
        return SpanSet(doc=np.asarray(doc, dtype=np.int64), start=np.asarray(st, dtype=np.int64), end=np.asarray(en, dtype=np.int64),
                       tag=np.asarray(tg, dtype=np.int32), text=texts)

    return SpanCorpus(
        doc_ids=tuple(d.id for d in gold), tags=tuple(tags), unit="char", texts=tuple(d.text for d in gold),
        gold=spanset(gold), predictions={m: spanset(docs) for m, docs in preds.items()},
    )


@dataclass
class SpansStream:
    truth: str
    models: dict[str, str]  # name → file ({truth stem: truth} when the truth holds the `pred` lists)
    chunk_size: int

    def chunks(self) -> Iterator[SpanCorpus]:
        tp = Path(self.truth)
        inline = list(self.models.values()) == [self.truth]
        gold_it = iter_span_docs(tp, ("gold", "spans"))
        pred_its = {m: iter_span_docs(Path(f), ("pred",) if inline else ("pred", "spans")) for m, f in self.models.items()}
        gold: list[SpanDoc] = []
        preds: dict[str, list[SpanDoc]] = {m: [] for m in self.models}
        for g in gold_it:
            for m, it in pred_its.items():
                d = next(it, None)
                src = self.models[m]
                if d is None or d.id > g.id:
                    raise InputError(
                        f"{src}: document ids do not match {tp}: truth document {g.id!r} has no prediction. "
                        "Every truth document needs one line (an empty list for no spans); with --chunk-size both files must be sorted by id."
                    )
                if d.id < g.id:
                    raise InputError(
                        f"{src}: {d.at}: document ids do not match {tp}: predicted document {d.id!r} is not in the truth "
                        "(with --chunk-size both files must be sorted by id)."
                    )
                if g.text is not None:
                    for j, (s, e, _, own) in enumerate(d.spans):
                        if e > len(g.text):
                            raise InputError(f"{src}: {d.at} (id {d.id!r}): pred[{j}]: span [{s}, {e}) lies outside the truth text ({len(g.text)} characters).")
                        if own is not None and g.text[s:e] != own:
                            raise InputError(f"{src}: {d.at} (id {d.id!r}): pred[{j}].text: {own!r} differs from the truth text at [{s}, {e}), {g.text[s:e]!r}.")
                preds[m].append(d)
            gold.append(g)
            if len(gold) >= self.chunk_size:
                yield chunk_corpus(gold, preds)
                gold, preds = [], {m: [] for m in self.models}
        for m, it in pred_its.items():
            d = next(it, None)
            if d is not None:
                raise InputError(f"{self.models[m]}: {d.at}: document ids do not match {tp}: predicted document {d.id!r} is not in the truth.")
        if gold:
            yield chunk_corpus(gold, preds)


def open_spans_stream(truth: str, predictions: Sequence[tuple[str, Path]], *, chunk_size: int) -> SpansStream:
    if chunk_size < 1:
        raise InputError(f"Expected --chunk-size to be a positive number of records, but got {chunk_size}.")
    from extracteval.io.spans_inputs import is_jsonl

    for p in [Path(truth), *(p for _, p in predictions)]:
        if not is_jsonl(p):
            raise InputError(
                f"{p}: --chunk-size streams JSONL span files; token (CoNLL) files are read whole (a chunk's tags depend on "
                "its neighbours): drop --chunk-size."
            )
        if not p.exists():
            raise InputError(f"{p}: file not found.")
    models: dict[str, str] = {}
    for name, p in predictions:
        if name in models:
            raise InputError(f"--predictions: model name {name!r} is given twice.")
        models[name] = str(p)
    if not models:
        models = {Path(truth).stem: str(truth)}
    return SpansStream(truth=str(truth), models=models, chunk_size=chunk_size)
