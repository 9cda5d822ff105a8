"""Token-file reader: the vectorised byte-level parser agrees with a plain line-by-line reading
on any mix of blank lines, -DOCSTART-/-X- lines, CRLF, tabs, repeated spaces and a BOM."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from extracteval.errors import InputError
from extracteval.tasks.spans.inputs import load_jsonl_corpus, read_token_file


def naive(text: str, tag_columns: int) -> tuple[list[str], list[list[str]], list[bool], list[int]]:
    tokens, tags, starts, lines = [], [[] for _ in range(tag_columns)], [], []
    prev_break = True
    for n, line in enumerate(text.split("\n"), start=1):
        f = line.split()
        if not f or f[0] in ("-DOCSTART-", "-X-"):
            prev_break = True
            continue
        tokens.append(f[0])
        for k in range(tag_columns):
            tags[k].append(f[-1 - k])
        starts.append(prev_break)
        lines.append(n)
        prev_break = False
    return tokens, tags, starts, lines


# near misses of the break markers are tokens; the markers themselves make a break line,
# whatever follows them (break lines are compared by bytes, not decoded)
WORDS = st.sampled_from(["The", "cat", "Zürich", "naïve", "3.5", "'s", "--", "日本", "-X", "-X--", "-x-", "-DOCSTART", "-DOCSTART--", "-DOCSTARt-", "-X-", "-DOCSTART-"])
TAGS = st.sampled_from(["O", "B-PER", "I-PER", "B-LOC"])
SEPS = st.sampled_from([" ", "\t", "  ", " \t"])
ENDS = st.sampled_from(["\n", "\r\n"])


@st.composite
def token_files(draw: st.DrawFn) -> str:
    out = []
    if draw(st.booleans()):
        out.append("-DOCSTART- -X- O O" + draw(ENDS) + draw(ENDS))
    for _ in range(draw(st.integers(1, 5))):
        for _ in range(draw(st.integers(1, 6))):
            sep = draw(SEPS)
            out.append(sep.join([draw(WORDS), "NN", draw(TAGS), draw(TAGS)]) + draw(ENDS))
        out.append(draw(st.sampled_from(["\n", "\r\n", "\n\n", "   \n", "-X-\n", "-X- O\r\n", "\t-DOCSTART-\n"])))
    return "".join(out)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(token_files(), st.booleans())
def test_reader_equals_line_by_line(tmp_path: Path, text: str, bom: bool) -> None:
    f = tmp_path / "x.conll"
    f.write_bytes(("\ufeff" if bom else "").encode() + text.encode("utf-8"))
    tokens, tags, starts, lines = naive(text, 2)
    if not tokens:  # only breaks (`-X- NN O O`, blank lines): a file with no token is refused
        with pytest.raises(InputError, match="no tokens found"):
            read_token_file(f, tag_columns=2)
        return
    tf = read_token_file(f, tag_columns=2)
    assert tf.tokens == tokens
    assert tf.tags == tags
    assert tf.sentence_start.tolist() == starts
    assert tf.line.tolist() == lines


def test_reader_errors_name_file_line_and_content(tmp_path: Path) -> None:
    f = tmp_path / "x.conll"
    f.write_text("a NN B-X B-X\n\n-DOCSTART- -X- O O\nb NN I-X\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"x.conll: line 4: expected 4 columns as on line 1 .*found 3: 'b NN I-X'"):
        read_token_file(f, tag_columns=2)
    f.write_text("\n\n", encoding="utf-8")
    with pytest.raises(InputError, match="no tokens found"):
        read_token_file(f, tag_columns=2)


def test_jsonl_offsets_may_be_whole_floats_and_labels(tmp_path: Path) -> None:
    t = tmp_path / "t.jsonl"
    t.write_text('{"id": 1, "text": "abc def", "gold": [{"start": 0.0, "end": 3, "label": "X"}]}\n', encoding="utf-8")
    p = tmp_path / "p.jsonl"
    p.write_text('{"id": "1", "pred": [{"start": 4, "end": 7, "tag": "X", "text": "def"}]}\n', encoding="utf-8")
    c = load_jsonl_corpus(t, [("m", p)])
    assert c.doc_ids == ("1",) and c.tags == ("X",)
    assert c.gold.start.tolist() == [0] and c.predictions["m"].start.tolist() == [4]


def test_document_and_span_order_in_files_changes_nothing(tmp_path: Path) -> None:
    import json
    import random

    from extracteval.tasks.spans.semantics import score_spans

    repo = Path(__file__).resolve().parents[3] / "experiments" / "requirements"
    truth = [json.loads(x) for x in (repo / "truth.jsonl").read_text(encoding="utf-8").splitlines()]
    pred = [json.loads(x) for x in (repo / "predictions" / "llama-3.1-8b.jsonl").read_text(encoding="utf-8").splitlines()]
    base = score_spans(load_jsonl_corpus(repo / "truth.jsonl", [("m", repo / "predictions" / "llama-3.1-8b.jsonl")])).to_dict()
    rng = random.Random(5)
    for rows in (truth, pred):
        rng.shuffle(rows)
        for r in rows:
            rng.shuffle(r["gold"] if "gold" in r else r["pred"])
    (tmp_path / "t.jsonl").write_text("\n".join(json.dumps(r) for r in truth), encoding="utf-8")
    (tmp_path / "p.jsonl").write_text("\n".join(json.dumps(r) for r in pred), encoding="utf-8")
    shuffled = score_spans(load_jsonl_corpus(tmp_path / "t.jsonl", [("m", tmp_path / "p.jsonl")])).to_dict()
    assert shuffled == base


# Tags and tokens are dictionary-encoded from the raw bytes, 8 bytes at a time: fields that
# differ only past byte 8, only by length, or by a NUL byte must stay distinct.
TRICKY = ["A", "A\x00", "A\x00\x00", "B-ORGANIZATION", "B-ORGANIZATIOM", "B-ORGANIZATION-X", "I-ORGANIZATION", "x" * 17, "x" * 16, "x" * 24, "日本語のトークン"]


@pytest.mark.parametrize("collide", [False, True])
def test_reader_keeps_fields_apart_that_share_their_first_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, collide: bool) -> None:
    import numpy as np

    from extracteval.tasks.spans import inputs as spans_inputs

    if collide:  # every field hashes alike: the word-by-word check must catch it and re-encode
        monkeypatch.setattr(spans_inputs, "_MIX", np.uint64(0))
    rng = __import__("random").Random(4)
    rows = [(rng.choice(TRICKY), "NN", rng.choice(TRICKY), rng.choice(TRICKY)) for _ in range(300)]
    text = "".join(" ".join(r) + ("\n\n" if k % 7 == 6 else "\n") for k, r in enumerate(rows))
    f = tmp_path / "x.conll"
    # the bytes straight to the parser: a file holding NUL bytes is refused by the file reader
    tf = spans_inputs.parse_token_bytes(text.encode("utf-8"), f, tag_columns=2)
    tokens, tags, starts, lines = naive(text, 2)
    assert tf.tokens == tokens
    assert tf.tags == tags
    assert tf.sentence_start.tolist() == starts and tf.line.tolist() == lines
    for col in (tf.token_column, *tf.tag_columns):  # one code per distinct string
        assert len(set(col.values)) == len(col.values)


def test_blank_bytes_are_those_bytes_split_cuts_at() -> None:
    import numpy as np

    from extracteval.tasks.spans.inputs import _mark_nonblank

    every = bytes(range(256))
    out = np.zeros(256, dtype=bool)
    _mark_nonblank(np.frombuffer(every, dtype=np.uint8), out)
    assert [bytes([b]) for b in every if not out[b]] == [bytes([b]) for b in every if not bytes([b]).split()]


def test_token_column_is_decoded_only_where_read(tmp_path: Path) -> None:
    """Exact scoring of a token file builds no token strings beyond its error examples, and
    every way of reading the tokens (slices, the whole column, relaxed TextSim) gives what a
    plain token list gives."""
    from extracteval.tasks.spans.semantics import LazyTokens, SpansConfig, corpus_from_tags, score_spans
    from extracteval.tasks.spans.inputs import load_token_corpus

    rows = []
    for k in range(400):
        rows.append(f"w{k % 37} NN {'B-PER' if k % 5 == 0 else 'I-PER' if k % 5 == 1 else 'O'} {'B-PER' if k % 7 == 0 else 'O'}\n")
        if k % 9 == 8:
            rows.append("\n")
    text = "".join(rows)
    f = tmp_path / "x.conll"
    f.write_text(text, encoding="utf-8")
    tokens, (pred, gold), starts, _ = naive(text, 2)

    corpus = load_token_corpus(conll=[("m", f)])
    assert isinstance(corpus.tokens, LazyTokens)
    exact = score_spans(corpus, config=SpansConfig(relaxed=False, bootstrap=0))
    assert corpus.tokens._all is None  # the whole column was never built
    plain = corpus_from_tags(gold, {"m": pred}, sentence_start=starts, tokens=tokens, doc_ids=corpus.doc_ids)
    assert exact.to_dict() == score_spans(plain, config=SpansConfig(relaxed=False, bootstrap=0)).to_dict()
    assert exact.models["m"].errors.examples["spurious"][0]["pred"]["text"]  # example texts come from the tokens

    full = load_token_corpus(conll=[("m", f)])
    assert score_spans(full, config=SpansConfig(bootstrap=0)).to_dict() == score_spans(plain, config=SpansConfig(bootstrap=0)).to_dict()
    assert full.tokens[3:9].tolist() == tokens[3:9] and full.tokens[5:5].tolist() == []
    assert np.asarray(full.tokens).tolist() == tokens and full.tokens._all is not None
    assert full.tokens[3:9].tolist() == tokens[3:9] and full.tokens[-2] == tokens[-2]


def test_lazy_tokens_build_the_column_once_slices_have_read_a_quarter() -> None:
    from extracteval.tasks.spans.semantics import LazyTokens

    words = [f"t{i}" for i in range(40_000)]
    decoded = []
    built = []

    def decode(s: int, e: int) -> list[str]:
        decoded.append(e - s)
        return words[s:e]

    def build() -> np.ndarray:
        built.append(1)
        return np.array(words, dtype=object)

    lazy = LazyTokens(len(words), decode, build)
    got = [lazy[i : i + 100].tolist() for i in range(0, len(words), 100)]
    assert sum(got, []) == words
    assert built == [1] and sum(decoded) <= len(words) // 4 + 4096  # then the column, once
    assert lazy[::2].tolist() == words[::2] and built == [1]


@pytest.mark.parametrize("long_first", [True, False])
def test_long_tokens_are_encoded_like_short_ones(tmp_path: Path, long_first: bool) -> None:
    """Tokens longer than the vectorised encoder's words (a pasted paragraph, a 1 MB token) are
    encoded one by one: the same tokens, the same first-appearance numbering, equal long tokens
    one value, long and short tokens never merged."""
    big, other = "y" * 300_000, "y" * 299_999 + "z"
    words = [big, "a", other, big, "b", "a", "é" * 200, big] if long_first else ["a", big, "a", "é" * 200, other, "a"]
    f = tmp_path / "x.conll"
    f.write_text("".join(f"{w} O\n" for w in words), encoding="utf-8")
    tf = read_token_file(f, tag_columns=1)
    assert tf.tokens == words
    column = tf.token_column
    assert column.values == tuple(dict.fromkeys(words))
