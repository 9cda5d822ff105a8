"""JSONL span files → chunks of documents for the chunked `spans` engine, in bounded memory.

Each document is validated and read as `tasks.spans.inputs.load_jsonl_corpus` reads it (the same
checks and messages: offsets, tags, span texts against the document text); a chunk becomes a
`SpanCorpus` of its documents. Token (CoNLL) files are **not** streamed: a sentence's chunks
depend on the tags around them, so token files (`--conll`, or a token `--truth` with its
`--predictions`) are streamed in blocks of whole lines and cut **only at sentence breaks** (blank,
`-DOCSTART-` and `-X-` lines): a chunk is N sentences of every file — the documents of the
in-memory result — so every chunk decodes, matches and counts exactly what the whole file gives
for those sentences. Each block is parsed by the in-memory reader's byte-level parser
(`tasks.spans.inputs.parse_token_bytes`: no Python object per token); the files must line up
sentence by sentence and token by token, as in memory, which each chunk checks.

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

from extracteval.io.scale_options import check_chunk_size
from extracteval.tasks.spans.semantics import SpanCorpus, SpanSet
from extracteval.errors import InputError
from extracteval.io.json_text import check_record_keys
from extracteval.io.text_files import bom_codec, check_regular_file, read_error, text_encoding
from extracteval.io.id_order import check_id_order
from extracteval.tasks.spans.inputs import TokenFile, lone_cr_as_newline, parse_token_bytes, read_span_list, token_corpus

__all__ = ["SpanDoc", "iter_span_docs", "SpansStream", "open_spans_stream", "iter_token_pieces", "TokenChunk", "iter_token_chunks"]


@dataclass
class SpanDoc:
    id: str
    at: str
    text: str | None
    spans: list[tuple[int, int, str, str | None]]


def iter_span_docs(path: Path, keys: Sequence[str]) -> Iterator[SpanDoc]:
    """The documents of one JSONL file, ids checked to ascend strictly."""
    check_regular_file(path)
    last: tuple[str, str] | None = None
    seen = False
    try:
        fh = path.open(encoding=text_encoding(path), newline="")
    except OSError as e:
        raise read_error(path, e) from None
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
                check_record_keys(path, at, line, rec)
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
    check_chunk_size(chunk_size)
    for p in [Path(truth), *(p for _, p in predictions)]:
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


# --------------------------------------------------------------------------------------------
# token files

_BLOCK = 1 << 22  # bytes read at a time (at least; more when N sentences take more)


def _open_bytes(p: Path) -> Any:
    """The file's bytes (`.xz` decompressed) as UTF-8: UTF-16/32 text with its byte-order mark is
    re-encoded as it is read (the rule of every reader of text files), other bytes are as stored."""
    import lzma

    check_regular_file(p)  # a folder, or a named pipe (opening one waits for a writer)
    try:
        fh = lzma.open(p, "rb") if p.suffix == ".xz" else p.open("rb")
    except OSError as e:
        raise read_error(p, e) from None
    try:
        head = fh.read(4)
    except OSError as e:
        fh.close()
        raise read_error(p, e) from None
    except (lzma.LZMAError, EOFError) as e:
        fh.close()
        raise InputError(f"{p}: not a valid .xz file ({e}).") from None
    codec = bom_codec(head)
    return _Utf8Recoded(p, fh, head, codec) if codec else _Prefixed(fh, head)


class _Prefixed:
    """A binary stream with bytes already read put back in front."""

    def __init__(self, fh: Any, head: bytes) -> None:
        self.fh, self.head = fh, head

    def read(self, size: int) -> bytes:
        head, self.head = self.head, b""
        return head + self.fh.read(size - len(head)) if len(head) < size else head

    def __enter__(self) -> "_Prefixed":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.fh.close()


class _Utf8Recoded(_Prefixed):
    """UTF-16/32 text (its byte-order mark first) read as UTF-8 bytes, in bounded memory: `read(n)`
    gives n bytes, fewer only at the end of the file (as a file's read does). Invalid text and a NUL
    character are refused with the in-memory reader's messages."""

    def __init__(self, p: Path, fh: Any, head: bytes, codec: str) -> None:
        import codecs

        super().__init__(fh, b"")
        self.p, self.codec = p, codec
        self.decoder = codecs.getincrementaldecoder(codec)()
        self.out = bytearray()
        self.fed = 0  # bytes of the file given to the decoder
        self.lines = 0  # newlines decoded
        self.eof = False
        self._feed(head, final=False)

    def _feed(self, data: bytes, *, final: bool) -> None:
        pending = len(self.decoder.buffer)  # type: ignore[attr-defined]
        try:
            text = self.decoder.decode(data, final)
        except UnicodeDecodeError as e:
            raise InputError(
                f"{self.p}: starts with a {self.codec.upper()} byte-order mark, but byte {self.fed - pending + e.start} is not valid "
                f"{self.codec.upper()}; save the file again as UTF-8 or UTF-16."
            ) from None
        self.fed += len(data)
        at = text.find("\x00")
        if at >= 0:
            raise InputError(
                f"{self.p}: line {self.lines + text.count(chr(10), 0, at) + 1}: found a NUL byte, which text files do not hold "
                "(a binary file, or UTF-16 text saved without a byte-order mark); save the file as UTF-8."
            )
        self.lines += text.count("\n")
        self.out += text.encode("utf-8")

    def read(self, size: int) -> bytes:
        while len(self.out) < size and not self.eof:
            data = self.fh.read(max(size, 1 << 16))
            self.eof = not data
            self._feed(data, final=self.eof)
        got = bytes(self.out[:size])
        del self.out[:size]
        return got


def _check_utf8(p: Path, body: bytes, line_offset: int, byte_offset: int) -> None:
    at = body.find(b"\x00")
    if at >= 0:
        line = line_offset + body.count(b"\n", 0, at) + 1
        raise InputError(
            f"{p}: line {line}: found a NUL byte, which text files do not hold "
            "(a binary file, or UTF-16 text saved without a byte-order mark); save the file as UTF-8."
        )
    if body.isascii():
        return
    try:
        body.decode("utf-8")
    except UnicodeDecodeError as e:
        line = line_offset + body.count(b"\n", 0, e.start) + 1
        raise InputError(
            f"{p}: line {line}: expected UTF-8 text, but found byte 0x{body[e.start]:02x} at offset {byte_offset + e.start}; "
            "save the file as UTF-8."
        ) from None


def iter_token_pieces(path: str | Path, *, tag_columns: int, sentences: int, block: int | None = None) -> Iterator[TokenFile]:
    """Token file `path` as consecutive pieces of `sentences` sentences (the last may be shorter),
    in bounded memory. Blocks of whole lines are parsed at once; the sentences of a block after
    its last full piece (the last of them may go on in the next block) are read again with it."""
    import lzma

    p = Path(path)
    block = block or _BLOCK
    layout: tuple[int, int] | None = None
    carry = b""  # bytes not yet scored: they start at a token line or a break line
    lines = 0  # lines before `carry`
    consumed = 0  # bytes before `carry` (for error messages)
    want = block
    with _open_bytes(p) as fh:
        first = True
        eof = False
        while not eof:
            size = max(want - len(carry), block)
            try:
                new = fh.read(size)
            except OSError as e:
                raise read_error(p, e) from None
            except (lzma.LZMAError, EOFError) as e:  # not a valid .xz file, or one cut short
                raise InputError(f"{p}: not a valid .xz file ({e}).") from None
            eof = len(new) < size  # a file (plain or .xz) reads short only at its end
            data = carry + new
            if first:
                first = False
                if data.startswith(b"\xef\xbb\xbf"):
                    data, consumed = data[3:], 3
            # after the last line end: an LF, or a lone CR (one whose next byte is read, and not an LF)
            cut = len(data) if eof else max(data.rfind(b"\n"), data.rfind(b"\r", 0, len(data) - 1)) + 1
            if cut == 0:  # one line longer than the block: read on
                carry, want = data, 2 * len(data)
                continue
            body, rest = data[:cut], data[cut:]
            body = lone_cr_as_newline(body)
            _check_utf8(p, body, lines, consumed)
            tf = parse_token_bytes(body, p, tag_columns=tag_columns, line_offset=lines, layout=layout, streamed=True)
            if tf is None:  # only break lines
                carry, lines, consumed = rest, lines + body.count(b"\n"), consumed + len(body)
                continue
            layout = (tf.n_columns, tf.first_line)
            starts = np.flatnonzero(tf.sentence_start)
            n = len(starts)
            full = n if eof else (n - 1) // sentences * sentences  # the last sentence may go on
            for a in range(0, full, sentences):
                yield tf.sentences(a, min(a + sentences, n))
            if full < n:
                keep = int(tf.token_fields.start[starts[full]])  # the first byte of its first token
                carry, lines, consumed = body[keep:] + rest, int(tf.line[starts[full]]) - 1, consumed + keep
                # read enough for the next pieces (bytes per sentence as in this block), so that
                # few bytes are parsed twice and none many times
                want = max(block, 2 * len(carry), int(len(body) / n * (sentences + 1) * (1.1 if full == 0 else 4)))
            else:
                carry, lines, consumed = rest, lines + body.count(b"\n"), consumed + len(body)
    if layout is None:
        raise InputError(f"{p}: no tokens found; expected one token per line with its tags in the last column(s).")


@dataclass(frozen=True)
class TokenChunk:
    """The same sentences of every token file: `golds` (piece, tag column), `preds` (model, piece,
    tag column). Decoded into a `SpanCorpus` where it is scored (a worker process, possibly)."""

    golds: tuple[tuple[TokenFile, int], ...]
    preds: tuple[tuple[str, TokenFile, int], ...]
    scheme: str
    suffix: bool

    def corpus(self) -> SpanCorpus:
        return token_corpus(self.golds, self.preds, scheme=self.scheme, suffix=self.suffix)


def iter_token_chunks(
    *,
    scheme: str,
    conll: Sequence[tuple[str, str | Path]] = (),
    truth: str | Path | None = None,
    predictions: Sequence[tuple[str, str | Path]] = (),
    suffix: bool = False,
    chunk_size: int,
) -> Iterator[TokenChunk]:
    """Token files (as `tasks.spans.inputs.load_token_corpus` takes them) → chunks of `chunk_size`
    sentences of every file; a file that ends before the others is an InputError naming it."""
    from extracteval.tasks.spans.schemes import get_scheme

    check_chunk_size(chunk_size, "sentences")
    sch = get_scheme(scheme).name
    # (model, or None for a separate truth file; path; tag columns)
    files: list[tuple[str | None, Path, int]] = (
        [(name, Path(path), 2) for name, path in conll] if conll
        else [(None, Path(truth), 1), *((name, Path(path), 1) for name, path in predictions)]  # type: ignore[arg-type]
    )
    its = [iter_token_pieces(p, tag_columns=k, sentences=chunk_size) for _, p, k in files]
    while True:
        pieces = [next(it, None) for it in its]
        if all(x is None for x in pieces):
            return
        ref = next(x for x in pieces if x is not None)
        for (_, p, _), x in zip(files, pieces):
            if x is None:
                raise InputError(
                    f"{p}: end of file: tokens and sentence breaks must line up with {ref.path}, "
                    f"which goes on at line {int(ref.line[0])}."
                )
        if conll:
            golds = tuple((x, 1) for x in pieces)  # type: ignore[misc]
            preds = tuple((n, x, 0) for (n, _, _), x in zip(files, pieces))
        else:
            golds = ((pieces[0], 0),)  # type: ignore[assignment]
            preds = tuple((n, x, 0) for (n, _, _), x in zip(files[1:], pieces[1:]))
        yield TokenChunk(golds=golds, preds=preds, scheme=sch, suffix=suffix)  # type: ignore[arg-type]
