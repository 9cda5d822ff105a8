"""Readers for the `spans` task: JSONL span files and CoNLL-style token files → `SpanCorpus`.

JSONL: one document per line (or a JSON array of documents), `{"id", "text"?, "gold": [{"start", "end", "tag", "text"?}], "pred": [...]}`
(a truth file may say `spans` instead of `gold`, a predictions file `spans` instead of `pred`; one
file holding both `gold` and `pred` serves as truth and predictions). Offsets are characters,
`end` exclusive.

Token files: one token per line, whitespace-separated columns, the last two being the gold and the
predicted tag (`--conll`), or the last one being the tag of a truth / predictions file given
separately. A blank line is a sentence break; `-DOCSTART-` lines and conlleval's `-X-` boundary
lines are sentence breaks too and are not counted as tokens. Every error names the file and line.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from extracteval.core.schemes import UnknownTagError, get_scheme
from extracteval.core.spans import SpanCorpus, SpanSet, corpus_from_tags
from extracteval.errors import InputError
from extracteval.io.tables import read_text

__all__ = ["TokenFile", "read_token_file", "load_token_corpus", "load_jsonl_corpus", "is_jsonl", "JSONL_SUFFIXES"]

JSONL_SUFFIXES = (".jsonl", ".ndjson", ".json")
_BREAKS = ("-DOCSTART-", "-X-")


def is_jsonl(path: str | Path) -> bool:
    return Path(path).suffix.lower() in JSONL_SUFFIXES


# --------------------------------------------------------------------------------------------
# token files


@dataclass(frozen=True)
class TokenFile:
    """A token file read column-wise. `tags[k]` is the k-th column counted from the end
    (`tags[0]` = last column). `line` is the 1-based line number of each token."""

    path: Path
    tokens: list[str]
    tags: list[list[str]]
    sentence_start: np.ndarray
    line: np.ndarray
    n_columns: int


def read_token_file(path: str | Path, *, tag_columns: int) -> TokenFile:
    """Read a CoNLL-style token file whose last `tag_columns` columns are tags.

    A line with fewer than `tag_columns + 1` columns, or with another number of columns than the
    first token line, is an InputError naming the file and line.
    """
    p = Path(path)
    text = read_text(p)
    data = text.encode("utf-8")
    # Vectorised over bytes: a field starts at a non-blank byte after a blank one; its line is
    # the number of newlines before it. bytes.split() cuts at the same ASCII whitespace, so the
    # flat field list lines up with the per-line counts, without building a list per line.
    arr = np.frombuffer(data, dtype=np.uint8)
    nl = arr == 10
    blank = nl | (arr == 32) | (arr == 9) | (arr == 13) | (arr == 11) | (arr == 12)
    starts = ~blank
    starts[1:] &= blank[:-1]
    nl_pos = np.flatnonzero(nl)
    n_lines = len(nl_pos) + 1
    widths = np.bincount(np.searchsorted(nl_pos, np.flatnonzero(starts)), minlength=n_lines)
    fields = np.empty(int(widths.sum()), dtype=object)
    fields[:] = data.split()
    first_field = np.cumsum(widths) - widths  # index in `fields` of each line's first field
    has = np.flatnonzero(widths > 0)
    is_break = widths == 0
    firsts = fields[first_field[has]]
    is_break[has] = (firsts == b"-DOCSTART-") | (firsts == b"-X-")
    tok = np.flatnonzero(~is_break)
    if not len(tok):
        raise InputError(f"{p}: no tokens found; expected one token per line with its tags in the last column(s).")
    need = tag_columns + 1
    ncol = int(widths[tok[0]])

    def line_text(i: int) -> str:
        start = int(nl_pos[i - 1]) + 1 if i else 0
        end = data.find(b"\n", start)
        return data[start : None if end < 0 else end].decode("utf-8").strip()

    if ncol < need:
        i = int(tok[0])
        raise InputError(
            f"{p}: line {i + 1}: expected at least {need} whitespace-separated columns (token … "
            f"{'gold pred' if tag_columns == 2 else 'tag'}), but found {ncol}: {line_text(i)!r}."
        )
    bad = tok[widths[tok] != ncol]
    if len(bad):
        i = int(bad[0])
        raise InputError(
            f"{p}: line {i + 1}: expected {ncol} columns as on line {int(tok[0]) + 1} "
            f"(token … {'gold pred' if tag_columns == 2 else 'tag'}), but found {int(widths[i])}: {line_text(i)!r}."
        )
    base = first_field[tok]

    def column(offset: int, decode_each: bool) -> list[str]:
        raw = fields[base + offset].tolist()
        if decode_each:
            return list(map(bytes.decode, raw))
        lut = {b: b.decode("utf-8") for b in dict.fromkeys(raw)}  # few distinct tags: decode each once
        return list(map(lut.__getitem__, raw))

    tokens = column(0, True)
    tags = [column(ncol - 1 - k, False) for k in range(tag_columns)]
    # a token starts a sentence when the line before it is a break (or it is the first token)
    prev_break = np.ones(n_lines, dtype=bool)
    prev_break[1:] = is_break[:-1]
    return TokenFile(path=p, tokens=tokens, tags=tags, sentence_start=prev_break[tok], line=tok + 1, n_columns=ncol)


def _check_aligned(ref: TokenFile, other: TokenFile, what: str) -> None:
    if len(ref.tokens) != len(other.tokens) or not np.array_equal(ref.sentence_start, other.sentence_start):
        n = min(len(ref.tokens), len(other.tokens))
        diff = np.flatnonzero(ref.sentence_start[:n] != other.sentence_start[:n])
        k = int(diff[0]) if len(diff) else n
        where = f"line {int(other.line[k])}" if k < len(other.tokens) else "end of file"
        raise InputError(
            f"{other.path}: {where}: tokens and sentence breaks must line up with {ref.path} ({what}); "
            f"found {len(other.tokens)} tokens against {len(ref.tokens)}."
        )
    if ref.tokens != other.tokens:
        k = next(i for i, (a, b) in enumerate(zip(ref.tokens, other.tokens)) if a != b)
        raise InputError(
            f"{other.path}: line {int(other.line[k])}: token {other.tokens[k]!r} differs from {ref.tokens[k]!r} "
            f"on line {int(ref.line[k])} of {ref.path} ({what})."
        )


def load_token_corpus(
    *,
    scheme: str = "conlleval",
    conll: Sequence[tuple[str, str | Path]] = (),
    truth: str | Path | None = None,
    predictions: Sequence[tuple[str, str | Path]] = (),
    suffix: bool = False,
) -> SpanCorpus:
    """Token files → SpanCorpus (one document per sentence); `suffix=True` reads `TYPE-PREFIX` tags.

    Either `conll` files (`token … gold pred`; several files = several models, whose tokens and
    gold tags must agree) or a `truth` file (`token … gold`) with `predictions` files
    (`token … pred`) whose tokens line up with it.
    """
    sch = get_scheme(scheme).name
    golds: list[tuple[TokenFile, int]] = []
    preds: list[tuple[str, TokenFile, int]] = []
    if conll:
        for name, path in conll:
            tf = read_token_file(path, tag_columns=2)
            golds.append((tf, 1))
            preds.append((name, tf, 0))
    else:
        if truth is None:
            raise InputError("spans: pass --conll FILE, or --truth FILE with --predictions NAME=FILE.")
        tf = read_token_file(truth, tag_columns=1)
        golds.append((tf, 0))
        for name, path in predictions:
            preds.append((name, read_token_file(path, tag_columns=1), 0))
    ref, ref_col = golds[0]
    for tf, _ in golds[1:]:
        _check_aligned(ref, tf, "every --conll file must hold the same tokens")
    for _, tf, _ in preds:
        if tf is not ref:
            _check_aligned(ref, tf, "predictions must tag the truth's tokens")
    for tf, col in golds[1:]:
        if tf.tags[col] != ref.tags[ref_col]:
            k = next(i for i, (a, b) in enumerate(zip(ref.tags[ref_col], tf.tags[col])) if a != b)
            raise InputError(
                f"{tf.path}: line {int(tf.line[k])}: gold tag {tf.tags[col][k]!r} differs from {ref.tags[ref_col][k]!r} "
                f"in {ref.path}; every --conll file must share the same gold column."
            )
    pred_tags: dict[str, list[str]] = {}
    pred_file: dict[str, TokenFile] = {}
    for name, tf, col in preds:
        if name in pred_tags:
            raise InputError(f"--conll/--predictions: model name {name!r} is given twice; use NAME=FILE to name each model.")
        pred_tags[name] = tf.tags[col]
        pred_file[name] = tf
    try:
        return corpus_from_tags(
            ref.tags[ref_col],
            pred_tags,
            sentence_start=ref.sentence_start,
            tokens=ref.tokens,
            scheme=sch,
            doc_ids=[f"line {int(ref.line[i])}" for i in np.flatnonzero(ref.sentence_start)],
            suffix=suffix,
        )
    except UnknownTagError as e:
        who = getattr(e, "source", "gold")
        tf = ref if who == "gold" else pred_file[who]
        raise InputError(
            f"{tf.path}: line {int(tf.line[e.position])}: {'gold' if who == 'gold' else 'predicted'} tag {e.tag!r} is not valid "
            f"under scheme {e.scheme}: expected 'O' or {'TYPE-PREFIX' if suffix else 'PREFIX-TYPE'} with PREFIX one of {', '.join(e.allowed)}"
            + (" (pass --scheme to pick another scheme)" if e.scheme == "conlleval" else "")
            + "."
        ) from None


# --------------------------------------------------------------------------------------------
# JSONL span files


@dataclass
class _Doc:
    id: str
    at: str  # "line N" or "record N"
    text: str | None
    spans: list[tuple[int, int, str, str | None]]


def _records(path: Path, text: str):
    """(number, "line N" / "record N", object) for JSONL, or for a JSON array of documents."""
    if text.lstrip().startswith("["):
        try:
            arr = json.loads(text)
        except ValueError as e:
            raise InputError(f"{path}: not valid JSON ({e}).") from None
        for i, rec in enumerate(arr, start=1):
            yield i, f"record {i}", rec
        return
    for n, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except ValueError as e:
            raise InputError(f"{path}: line {n}: not valid JSON ({e}).") from None
        yield n, f"line {n}", rec


def _read_jsonl(path: Path, keys: Sequence[str], *, required: bool = True) -> tuple[list[_Doc], str | None]:
    text = read_text(path)
    docs: list[_Doc] = []
    seen: dict[str, str] = {}
    used_key: str | None = None
    for n, at, rec in _records(path, text):
        if not isinstance(rec, dict):
            raise InputError(f"{path}: {at}: expected a JSON object per document, but found {type(rec).__name__}.")
        if "id" not in rec or rec["id"] is None or str(rec["id"]).strip() == "":
            raise InputError(f"{path}: {at}: expected an \"id\" key naming the document, but found none.")
        rid = str(rec["id"]).strip()
        if rid in seen:
            raise InputError(f"{path}: {at}: document id {rid!r} repeats {seen[rid]}; ids must be unique.")
        seen[rid] = at
        doc_text = rec.get("text")
        if doc_text is not None and not isinstance(doc_text, str):
            raise InputError(f"{path}: {at} (id {rid!r}): \"text\": expected a string, but found {type(doc_text).__name__}.")
        key = next((k for k in keys if k in rec), None)
        if key is None:
            if required:
                raise InputError(f"{path}: {at} (id {rid!r}): expected a {' or '.join(repr(k) for k in keys)} list of spans, but found keys {sorted(rec)}.")
            return [], None
        used_key = used_key or key
        raw = rec[key]
        if raw is None:
            raw = []
        if not isinstance(raw, list):
            raise InputError(f"{path}: {at} (id {rid!r}): {key!r}: expected a list of spans, but found {type(raw).__name__}.")
        spans = []
        for j, sp in enumerate(raw):
            where = f"{path}: {at} (id {rid!r}): {key}[{j}]"
            if not isinstance(sp, dict):
                raise InputError(f"{where}: expected an object {{\"start\", \"end\", \"tag\"}}, but found {type(sp).__name__}.")
            for k in ("start", "end"):
                v = sp.get(k)
                if isinstance(v, bool) or not isinstance(v, int):
                    if isinstance(v, float) and v.is_integer():
                        sp[k] = int(v)
                        continue
                    raise InputError(f"{where}.{k}: expected an integer character offset, but found {v!r}.")
            s, e = int(sp["start"]), int(sp["end"])
            tag = sp.get("tag", sp.get("label"))
            if not isinstance(tag, str) or not tag.strip():
                raise InputError(f"{where}.tag: expected a non-empty string, but found {tag!r}.")
            if s < 0:
                raise InputError(f"{where}.start: expected an offset ≥ 0, but found {s}.")
            if e <= s:
                raise InputError(f"{where}.end: expected end > start ({s}; end is exclusive), but found {e}{' (end before start)' if e < s else ''}.")
            if doc_text is not None and e > len(doc_text):
                raise InputError(f"{where}: span [{s}, {e}) lies outside the document text ({len(doc_text)} characters).")
            own = sp.get("text")
            if own is not None:
                if not isinstance(own, str):
                    raise InputError(f"{where}.text: expected a string, but found {type(own).__name__}.")
                if doc_text is not None and doc_text[s:e] != own:
                    raise InputError(
                        f"{where}.text: expected the document text at [{s}, {e}), {doc_text[s:e]!r}, but found {own!r}; "
                        "fix the offsets or the span text."
                    )
            spans.append((s, e, tag.strip(), own))
        docs.append(_Doc(id=rid, at=at, text=doc_text, spans=spans))
    if not docs:
        raise InputError(f"{path}: no documents found; expected one JSON object per line.")
    return docs, used_key


def _id_mismatch(truth: Path, pred: Path, t_ids: set[str], p_ids: set[str]) -> None:
    missing = sorted(t_ids - p_ids)
    extra = sorted(p_ids - t_ids)
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"{len(missing)} truth document(s) have no prediction: " + ", ".join(repr(x) for x in missing[:5]) + (" …" if len(missing) > 5 else ""))
        if extra:
            parts.append(f"{len(extra)} predicted document(s) are not in the truth: " + ", ".join(repr(x) for x in extra[:5]) + (" …" if len(extra) > 5 else ""))
        raise InputError(f"{pred}: document ids do not match {truth}: " + "; ".join(parts) + ". Every truth document needs one line (an empty list for no spans).")


def load_jsonl_corpus(truth: str | Path, predictions: Sequence[tuple[str, str | Path]] = ()) -> SpanCorpus:
    """JSONL truth + predictions → SpanCorpus (character offsets). With no `predictions`, the
    truth file must also hold `pred` lists (one model named after the file)."""
    tp = Path(truth)
    gdocs, _ = _read_jsonl(tp, ("gold", "spans"))
    if not predictions:
        pd_, key = _read_jsonl(tp, ("pred",), required=False)
        if key is None:
            raise InputError(f"{tp}: no predictions: pass --predictions NAME=FILE, or put a \"pred\" list next to \"gold\" in each line.")
        predictions = [(tp.stem, tp)]
    order = sorted(range(len(gdocs)), key=lambda i: gdocs[i].id)
    gdocs = [gdocs[i] for i in order]
    index = {d.id: k for k, d in enumerate(gdocs)}
    pdocs: dict[str, list[_Doc]] = {}
    for name, path in predictions:
        if name in pdocs:
            raise InputError(f"--predictions: model name {name!r} is given twice.")
        pp = Path(path)
        docs, _ = _read_jsonl(pp, ("pred", "spans"))
        _id_mismatch(tp, pp, set(index), {d.id for d in docs})
        for d in docs:
            t = gdocs[index[d.id]].text
            if t is not None:
                for j, (s, e, _, own) in enumerate(d.spans):
                    if e > len(t):
                        raise InputError(f"{pp}: {d.at} (id {d.id!r}): pred[{j}]: span [{s}, {e}) lies outside the truth text ({len(t)} characters).")
                    if own is not None and t[s:e] != own:
                        raise InputError(f"{pp}: {d.at} (id {d.id!r}): pred[{j}].text: {own!r} differs from the truth text at [{s}, {e}), {t[s:e]!r}.")
            elif d.text is not None:
                gdocs[index[d.id]].text = None  # only the truth's text counts
        pdocs[name] = docs
    tags = sorted({s[2] for d in gdocs for s in d.spans} | {s[2] for docs in pdocs.values() for d in docs for s in d.spans})
    code = {t: i for i, t in enumerate(tags)}

    def spanset(docs: list[_Doc]) -> SpanSet:
        rows = [(index[d.id], s, e, code[t], own) for d in docs for (s, e, t, own) in d.spans]
        if not rows:
            return SpanSet.empty()
        doc, st, en, tg, own = zip(*rows)
        texts = np.asarray(own, dtype=object) if any(o is not None for o in own) else None
        return SpanSet(
            doc=np.asarray(doc, dtype=np.int64),
            start=np.asarray(st, dtype=np.int64),
            end=np.asarray(en, dtype=np.int64),
            tag=np.asarray(tg, dtype=np.int32),
            text=texts,
        )

    return SpanCorpus(
        doc_ids=tuple(d.id for d in gdocs),
        tags=tuple(tags),
        unit="char",
        texts=tuple(d.text for d in gdocs),
        gold=spanset(gdocs),
        predictions={name: spanset(docs) for name, docs in pdocs.items()},
    )
