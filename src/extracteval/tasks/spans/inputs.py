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
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from extracteval.tasks.spans.schemes import FactorizedTags, UnknownTagError, get_scheme
from extracteval.tasks.spans.semantics import LazyTokens, SpanCorpus, SpanSet, corpus_from_tags
from extracteval.errors import InputError
from extracteval.io.json_text import check_json_file_keys, check_record_keys
from extracteval.io.memory import is_in_memory, memory_records
from extracteval.io.text_files import read_text, read_utf8

__all__ = ["TokenFile", "read_token_file", "lone_cr_as_newline", "parse_token_bytes", "token_corpus", "load_token_corpus", "load_jsonl_corpus", "is_jsonl", "JSONL_SUFFIXES"]

JSONL_SUFFIXES = (".jsonl", ".ndjson", ".json")
_BREAKS = ("-DOCSTART-", "-X-")


def is_jsonl(path: Any) -> bool:
    """A JSONL (or JSON array) document file, or documents held in memory (read as one)."""
    return is_in_memory(path) or Path(path).suffix.lower() in JSONL_SUFFIXES


# --------------------------------------------------------------------------------------------
# token files


class _TokenFields:
    """Where each token sits in a token file's bytes: token i is `data[start[i]:end[i]]`. Only
    these are kept, not the reader's arrays over every field, which are several times larger."""

    def __init__(self, data: bytes, start: np.ndarray, end: np.ndarray) -> None:
        self.data, self.start, self.end = data, start, end

    def factorize(self) -> FactorizedTags:
        buf = np.frombuffer(self.data + bytes(8), dtype=np.uint8)
        return _factorize_fields(buf, self.start, self.end - self.start, self.data)

    def decode(self, s: int, e: int) -> list[str]:
        data = self.data
        return [data[a:b].decode("utf-8") for a, b in zip(self.start[s:e].tolist(), self.end[s:e].tolist())]


@dataclass(frozen=True)
class TokenFile:
    """A token file read column-wise. `tag_columns[k]` is the k-th column counted from the end
    (0 = last column), dictionary-encoded; `tokens` / `tags` give them as lists of strings.
    `line` is the 1-based line number of each token. The token column is only encoded when
    read (`token_column`, `token_array`, `lazy_tokens`): exact scoring does not need it."""

    path: Path
    token_fields: _TokenFields
    tag_columns: tuple[FactorizedTags, ...]
    sentence_start: np.ndarray
    line: np.ndarray
    n_columns: int
    first_line: int = 1  # the file's first token line (whose columns every token line has)

    def sentences(self, a: int, b: int) -> TokenFile:
        """Sentences [a, b) of these tokens, on their own: the tags re-encoded to the values they
        use, the token bytes copied out (a piece sent to a worker process carries only its bytes)."""
        starts = np.flatnonzero(self.sentence_start)
        s = int(starts[a])
        e = int(starts[b]) if b < len(starts) else len(self.line)
        f = self.token_fields
        lo, hi = (int(f.start[s]), int(f.end[e - 1])) if e > s else (0, 0)
        fields = _TokenFields(f.data[lo:hi], f.start[s:e] - lo, f.end[s:e] - lo)
        return TokenFile(path=self.path, token_fields=fields, tag_columns=tuple(c.take(s, e) for c in self.tag_columns),
                         sentence_start=self.sentence_start[s:e], line=self.line[s:e], n_columns=self.n_columns, first_line=self.first_line)

    @cached_property
    def token_column(self) -> FactorizedTags:
        return self.token_fields.factorize()

    @cached_property
    def token_array(self) -> np.ndarray:
        """The tokens as an object array (each distinct token string built once)."""
        return self.token_column.strings()

    @cached_property
    def lazy_tokens(self) -> LazyTokens:
        """The tokens for `corpus_from_tags`, decoded only where span texts are read."""
        return LazyTokens(len(self.line), self.token_fields.decode, lambda: self.token_array)

    @property
    def tokens(self) -> list[str]:
        return self.token_array.tolist()

    @property
    def tags(self) -> list[list[str]]:
        return [c.strings().tolist() for c in self.tag_columns]


_BLANK = b" \t\n\r\x0b\x0c"  # exactly the bytes bytes.split() cuts at: 9-13 and 32


def _mark_nonblank(arr: np.ndarray, out: np.ndarray) -> None:
    """out[i] = arr[i] is not a `_BLANK` byte. In uint8, byte - 9 wraps round and is ≤ 4 exactly
    for 9-13: two comparisons are ~3x faster than a table lookup per byte."""
    np.greater(arr - np.uint8(9), 4, out=out)
    out &= arr != 32


_LOW_BYTES = np.array([(1 << (8 * k)) - 1 for k in range(9)], dtype=np.uint64)  # [k]: the k low bytes


def _factorize_fields(buf: np.ndarray, start: np.ndarray, length: np.ndarray, data: bytes) -> FactorizedTags:
    """Dictionary-encode byte fields `data[start:start+length]`, exactly, without a Python
    object per field.

    Each field is read as (length, 8-byte words), the words as unaligned little-endian uint64
    through a strided view of `buf` (the file bytes plus 8 zero bytes); a 64-bit hash of them is
    factorised (codes number the distinct hashes in order of first appearance, like
    `dict.fromkeys`), then every field is checked word by word against the first field with its
    code, so a hash collision can never merge two different fields: on a collision the fields
    are encoded again by their words alone (`_factorize_exact`).
    """
    n = len(start)
    if n == 0:
        return FactorizedTags(np.zeros(0, dtype=np.int64), ())
    if int(length.max()) > _LONG_FIELD:
        return _factorize_with_long_fields(buf, start, length, data)
    words = np.ndarray(shape=(len(buf) - 7,), dtype="<u8", buffer=buf, strides=(1,))
    h = length.astype(np.uint64) * _MIX
    chunks: list[tuple[np.ndarray | None, np.ndarray]] = []  # (fields having word w, word w)
    sel: np.ndarray | None = None  # None: all fields
    for w in range(0, int(length.max()), 8):
        if w:
            sel = np.flatnonzero(length > w) if sel is None else sel[length[sel] > w]
        at = start + w if sel is None else start[sel] + w
        word = words[at]
        rest = (length if sel is None else length[sel]) - w
        # bytes past the field's end are not part of it; a lookup clipped at 8 (all bytes kept)
        # is one pass, where updating only the short words through a mask took three
        word &= np.take(_LOW_BYTES, rest, mode="clip")
        chunks.append((sel, word))
        if sel is None:
            h = (h ^ word) * _MIX
            h ^= h >> np.uint64(29)
        else:
            hs = (h[sel] ^ word) * _MIX
            h[sel] = hs ^ (hs >> np.uint64(29))
    codes = pd.factorize(h)[0]
    first = _first_occurrences(codes)
    rep = first[codes]  # the first field with the same code
    same = length[rep] == length
    for sel_w, word in chunks:
        if sel_w is None:
            same &= word[rep] == word
        else:
            pos = np.full(n, -1, dtype=np.int64)  # where each field sits in this chunk
            pos[sel_w] = np.arange(len(sel_w))
            same[sel_w] &= word[pos[rep[sel_w]]] == word  # rep has word w too: same length
    if not same.all():
        codes = _factorize_exact(length, chunks, n)
        first = _first_occurrences(codes)
    values = tuple(data[a : a + b].decode("utf-8") for a, b in zip(start[first].tolist(), length[first].tolist()))
    return FactorizedTags(codes, values)


_MIX = np.uint64(0x9E3779B97F4A7C15)
_LONG_FIELD = 256  # bytes: longer fields are encoded one by one (a pass per 8-byte word would take one per field)


def _factorize_with_long_fields(buf: np.ndarray, start: np.ndarray, length: np.ndarray, data: bytes) -> FactorizedTags:
    """`_factorize_fields` when some fields are longer than `_LONG_FIELD` bytes (rare: a pasted
    URL, a whole paragraph on one line): the short ones vectorised, the long ones through a dict
    of their bytes, so a 1 MB token costs one pass over its bytes, not 125,000 array passes."""
    long = length > _LONG_FIELD
    li, si = np.flatnonzero(long), np.flatnonzero(~long)
    keys = np.empty(len(start), dtype=np.int64)
    n_short = 0
    if len(si):
        short = _factorize_fields(buf, start[si], length[si], data)
        keys[si], n_short = short.codes, len(short.values)
    seen: dict[bytes, int] = {}
    keys[li] = [n_short + seen.setdefault(data[a : a + b], len(seen)) for a, b in zip(start[li].tolist(), length[li].tolist())]
    codes = pd.factorize(keys)[0]  # a short field never equals a long one; renumbered by first appearance
    first = _first_occurrences(codes)
    return FactorizedTags(codes, tuple(data[a : a + b].decode("utf-8") for a, b in zip(start[first].tolist(), length[first].tolist())))


def _first_occurrences(codes: np.ndarray) -> np.ndarray:
    """Position of the first occurrence of each code, for codes numbered in order of first
    appearance: a position is a first occurrence exactly when its code exceeds every earlier one."""
    seen = np.maximum.accumulate(codes)
    return np.flatnonzero(np.concatenate(([True], codes[1:] > seen[:-1])))


def _factorize_exact(length: np.ndarray, chunks: list[tuple[np.ndarray | None, np.ndarray]], n: int) -> np.ndarray:
    """Codes of the fields from their (length, words) alone: one factorisation per word."""
    keys = length.astype(np.int64)
    for sel, word in chunks:
        idx = np.arange(n) if sel is None else sel
        wc, wu = pd.factorize(word)
        keys[idx] = int(keys.max()) + 1 + pd.factorize(keys[idx] * len(wu) + wc)[0]
    return pd.factorize(keys)[0]


def _break_lines(buf: np.ndarray, f_start: np.ndarray, f_end: np.ndarray, first_field: np.ndarray, widths: np.ndarray) -> np.ndarray:
    """True for every line that is a sentence break: no field, or a first field that is exactly
    one of `_BREAKS`, compared as 8-byte words (no string per field: the token column is
    otherwise never decoded). Only first fields starting with `-`, as every marker does, are
    looked at further."""
    out = widths == 0
    if not len(f_start):
        return out
    words = np.ndarray(shape=(len(buf) - 7,), dtype="<u8", buffer=buf, strides=(1,))
    # an empty line's first_field is the next line's (or len(f_start) at the end): clipped,
    # and excluded by its zero width
    cand = np.flatnonzero((buf[f_start[np.minimum(first_field, len(f_start) - 1)]] == ord("-")) & ~out)
    start = f_start[first_field[cand]]
    length = f_end[first_field[cand]] - start
    for b in (x.encode("utf-8") for x in _BREAKS):
        i = np.flatnonzero(length == len(b))
        ok = np.ones(len(i), dtype=bool)
        for w in range(0, len(b), 8):
            chunk = b[w : w + 8]
            ok &= (words[start[i] + w] & _LOW_BYTES[len(chunk)]) == np.uint64(int.from_bytes(chunk, "little"))
        out[cand[i[ok]]] = True
    return out


_LONE_CR = re.compile(rb"\r(?!\n)")


def lone_cr_as_newline(data: bytes) -> bytes:
    """`data` with every CR not followed by LF made an LF (a file saved with old Mac line ends,
    or a mix): a lone CR ends a line, as it does for every other text reader. The same length, so
    byte offsets do not move; CRLF stays as it is (its CR is blank, its LF ends the line)."""
    if b"\r" not in data or data.count(b"\r") == data.count(b"\r\n"):
        return data
    return _LONE_CR.sub(b"\n", data)


def read_token_file(path: str | Path, *, tag_columns: int) -> TokenFile:
    """Read a CoNLL-style token file whose last `tag_columns` columns are tags.

    A line with fewer than `tag_columns + 1` columns, or with another number of columns than the
    first token line, is an InputError naming the file and line.
    """
    p = Path(path)
    tf = parse_token_bytes(read_utf8(p), p, tag_columns=tag_columns)
    assert tf is not None
    return tf


def _check_columns(data: bytes, p: Path, tok: np.ndarray, widths: np.ndarray, ncol: int, first_line: int, *, tag_columns: int, line_offset: int) -> None:
    """The layout check of `parse_token_bytes`: an InputError naming the first token line (`tok`:
    the numbers of the token lines in `data`; `widths`: fields per line) when the columns of the
    file's first token line (`ncol`, on line `first_line`) cannot hold a token and its
    `tag_columns` tags, or when a token line has another number of columns."""
    need = tag_columns + 1

    def line_text(i: int) -> str:  # for an error message only
        return data.split(b"\n", i + 1)[i].decode("utf-8").strip()

    if ncol < need:
        i = int(tok[0])
        raise InputError(
            f"{p}: line {line_offset + i + 1}: expected at least {need} whitespace-separated columns (token … "
            f"{'gold pred' if tag_columns == 2 else 'tag'}), but found {ncol}: {line_text(i)!r}."
        )
    bad = tok[widths[tok] != ncol]
    if len(bad):
        i = int(bad[0])
        raise InputError(
            f"{p}: line {line_offset + i + 1}: expected {ncol} columns as on line {first_line} "
            f"(token … {'gold pred' if tag_columns == 2 else 'tag'}), but found {int(widths[i])}: {line_text(i)!r}."
        )


def parse_token_bytes(
    data: bytes, p: Path, *, tag_columns: int, line_offset: int = 0, layout: tuple[int, int] | None = None, streamed: bool = False,
) -> TokenFile | None:
    """The tokens of `data`, whole lines of token file `p` that follow `line_offset` lines (the
    streaming reader's blocks; 0 for a whole file). `layout` is (columns, line) of the file's first
    token line when an earlier block had it: every token line must have its number of columns.
    Bytes without a token are an InputError, or None when `streamed` (a block of break lines)."""
    # Vectorised over bytes: fields are the runs of non-blank bytes (the ASCII whitespace
    # bytes.split() cuts at; UTF-8 multi-byte characters never contain those bytes), a field's
    # line is the number of newlines before it, and the tag columns are dictionary-encoded in
    # place (`_factorize_fields`): no Python object per field or line. The token column stays
    # field positions until read (`TokenFile.token_fields`); break lines are found by bytes.
    data = lone_cr_as_newline(data)
    buf = np.frombuffer(data + bytes(8), dtype=np.uint8)
    arr = buf[: len(data)]
    nonblank = np.zeros(len(data) + 2, dtype=bool)
    _mark_nonblank(arr, nonblank[1:-1])
    edges = np.flatnonzero(nonblank[1:] != nonblank[:-1])  # field starts and ends, alternating
    f_start, f_end = edges[0::2], edges[1::2]
    # A field's line is the number of newlines in the blank gaps before it. Gap k runs from the
    # end of field k-1 to the start of field k; most gaps are one byte (a space or a newline),
    # so the first byte of every gap is read, and only the bytes after it in longer gaps (blank
    # lines, CRLF, runs of spaces) are gathered: no further pass over the bytes, no search per line.
    gap_start = np.concatenate(([0], f_end))
    gap_len = np.concatenate((f_start, [len(data)])) - gap_start
    per_gap = (buf[gap_start] == 10).astype(np.int64)  # buf[len(data)] is a zero pad byte
    long = np.flatnonzero(gap_len > 1)
    if len(long):
        rest = gap_len[long] - 1
        first = np.cumsum(rest) - rest  # where each long gap's bytes begin in `at`
        at = np.repeat(gap_start[long] + 1 - first, rest) + np.arange(int(rest.sum()))
        per_gap[long] += np.add.reduceat((arr[at] == 10).astype(np.int64), first)
    field_line = np.cumsum(per_gap)[:-1]  # newlines before each field
    n_lines = int(per_gap.sum()) + 1
    widths = np.bincount(field_line, minlength=n_lines)  # fields per line
    first_field = np.cumsum(widths) - widths  # index of each line's first field
    is_break = _break_lines(buf, f_start, f_end, first_field, widths)
    tok = np.flatnonzero(~is_break)
    if not len(tok):
        if streamed:
            return None
        raise InputError(f"{p}: no tokens found; expected one token per line with its tags in the last column(s).")
    ncol, first_line = layout if layout is not None else (int(widths[tok[0]]), line_offset + int(tok[0]) + 1)
    _check_columns(data, p, tok, widths, ncol, first_line, tag_columns=tag_columns, line_offset=line_offset)
    base = first_field[tok]

    def column(offset: int) -> FactorizedTags:
        f = base + offset
        start = f_start[f]
        return _factorize_fields(buf, start, f_end[f] - start, data)

    tags = tuple(column(ncol - 1 - k) for k in range(tag_columns))
    # a token starts a sentence when the line before it is a break (or it is the first token)
    prev_break = np.ones(n_lines, dtype=bool)
    prev_break[1:] = is_break[:-1]
    return TokenFile(
        path=p,
        token_fields=_TokenFields(data, f_start[base], f_end[base]),
        tag_columns=tags,
        sentence_start=prev_break[tok],
        line=tok + 1 + line_offset,
        n_columns=ncol,
        first_line=first_line,
    )


def _first_difference(a: np.ndarray, b: np.ndarray) -> int | None:
    n = min(len(a), len(b))
    diff = np.flatnonzero(a[:n] != b[:n])
    return int(diff[0]) if len(diff) else (None if len(a) == len(b) else n)


def _check_aligned(ref: TokenFile, other: TokenFile, what: str) -> None:
    if len(ref.line) != len(other.line) or not np.array_equal(ref.sentence_start, other.sentence_start):
        n = min(len(ref.line), len(other.line))
        diff = np.flatnonzero(ref.sentence_start[:n] != other.sentence_start[:n])
        k = int(diff[0]) if len(diff) else n
        where = f"line {int(other.line[k])}" if k < len(other.line) else "end of file"
        raise InputError(
            f"{other.path}: {where}: tokens and sentence breaks must line up with {ref.path} ({what}); "
            f"found {len(other.line)} tokens against {len(ref.line)}."
        )
    a, b = ref.token_array, other.token_array
    k = _first_difference(a, b)
    if k is not None:
        raise InputError(
            f"{other.path}: line {int(other.line[k])}: token {b[k]!r} differs from {a[k]!r} "
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
    return token_corpus(golds, preds, scheme=sch, suffix=suffix)


def token_corpus(
    golds: Sequence[tuple[TokenFile, int]], preds: Sequence[tuple[str, TokenFile, int]], *, scheme: str, suffix: bool,
) -> SpanCorpus:
    """The SpanCorpus of token files already read (whole files, or the same sentences of each file
    when streamed): `golds` (file, tag column) whose tokens and gold tags must agree, the first being
    the reference, and `preds` (model, file, tag column) whose tokens must line up with it."""
    ref, ref_col = golds[0]
    for tf, _ in golds[1:]:
        _check_aligned(ref, tf, "every --conll file must hold the same tokens")
    for _, tf, _ in preds:
        if tf is not ref:
            _check_aligned(ref, tf, "predictions must tag the truth's tokens")
    ref_gold = ref.tag_columns[ref_col].strings() if len(golds) > 1 else None  # built only to compare
    for tf, col in golds[1:]:
        assert ref_gold is not None
        other_gold = tf.tag_columns[col].strings()
        k = _first_difference(ref_gold, other_gold)
        if k is not None:
            raise InputError(
                f"{tf.path}: line {int(tf.line[k])}: gold tag {other_gold[k]!r} differs from {ref_gold[k]!r} "
                f"in {ref.path}; every --conll file must share the same gold column."
            )
    pred_tags: dict[str, FactorizedTags] = {}
    pred_file: dict[str, TokenFile] = {}
    for name, tf, col in preds:
        if name in pred_tags:
            raise InputError(f"--conll/--predictions: model name {name!r} is given twice; use NAME=FILE to name each model.")
        pred_tags[name] = tf.tag_columns[col]
        pred_file[name] = tf
    try:
        return corpus_from_tags(
            ref.tag_columns[ref_col],
            pred_tags,
            sentence_start=ref.sentence_start,
            tokens=ref.lazy_tokens,
            scheme=scheme,
            doc_ids=[f"line {n}" for n in ref.line[ref.sentence_start].tolist()],
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


_LINE_END = re.compile(r"\r\n?|\n")


def _records(path: Path, text: str):
    """(number, "line N" / "record N", object) for JSONL, or for a JSON array of documents."""
    if text.lstrip().startswith("["):
        try:
            arr = json.loads(text)
        except ValueError as e:
            raise InputError(f"{path}: not valid JSON ({e}).") from None
        check_json_file_keys(path, text, arr)
        for i, rec in enumerate(arr, start=1):
            yield i, f"record {i}", rec
        return
    # a line ends at LF, CRLF or a lone CR (as for the other JSONL readers); not at the other
    # characters str.splitlines() cuts at, which JSON strings may hold raw
    for n, line in enumerate(_LINE_END.split(text), start=1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except ValueError as e:
            raise InputError(f"{path}: line {n}: not valid JSON ({e}).") from None
        check_record_keys(path, f"line {n}", line, rec)
        yield n, f"line {n}", rec


def read_span_list(raw: Any, *, origin: str, key: str, doc_text: str | None) -> list[tuple[int, int, str, str | None]]:
    """The validated `(start, end, tag, text)` spans of one document's `key` list (JSONL inputs,
    in memory and chunked). `origin` names the file, line and document id in every error."""
    if raw is None:
        raw = []
    if not isinstance(raw, list):
        raise InputError(f"{origin}: {key!r}: expected a list of spans, but found {type(raw).__name__}.")
    spans = []
    for j, sp in enumerate(raw):
        where = f"{origin}: {key}[{j}]"
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
    return spans


def _read_jsonl(path: Any, keys: Sequence[str], *, required: bool = True) -> tuple[list[_Doc], str | None]:
    docs: list[_Doc] = []
    seen: dict[str, str] = {}
    used_key: str | None = None
    found = ((n, at, rec) for n, (at, rec) in enumerate(memory_records(path), start=1)) if is_in_memory(path) else _records(path, read_text(path))
    for n, at, rec in found:
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
        spans = read_span_list(rec[key], origin=f"{path}: {at} (id {rid!r})", key=key, doc_text=doc_text)
        docs.append(_Doc(id=rid, at=at, text=doc_text, spans=spans))
    if not docs:
        raise InputError(f"{path}: no documents found; expected one JSON object per line.")
    return docs, used_key


def _id_mismatch(truth: Any, pred: Any, t_ids: set[str], p_ids: set[str]) -> None:
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
    tp = truth if is_in_memory(truth) else Path(truth)
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
        pp = path if is_in_memory(path) else Path(path)
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
