"""Tagging schemes: conlleval chunking checked against a port of conlleval.pl's own counting,
strict schemes against hand-made cases and against seqeval (an oracle, when installed)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from extracteval.tasks.spans.schemes import SCHEMES, UnknownTagError, decode, encode_tags, get_scheme
from extracteval.tasks.spans.semantics import corpus_from_tags, score_spans
from tests.reference.conlleval_port import conlleval_counts
from tests.system import python_package


def chunks(tags: list[str], scheme: str, breaks: tuple[int, ...] = ()) -> tuple[list[tuple[int, int, str]], int]:
    enc = encode_tags(tags, scheme=scheme)
    sent = np.zeros(len(tags), dtype=bool)
    sent[list(breaks)] = True
    ch = decode(enc.prefix, enc.type, sent, scheme)
    return [(int(s), int(e), enc.types[t]) for s, e, t in zip(ch.start, ch.end, ch.type)], ch.ill_formed


@pytest.mark.parametrize(
    ("scheme", "tags", "expected", "ill"),
    [
        ("IOB2", "B-X I-X O B-Y", [(0, 2, "X"), (3, 4, "Y")], 0),
        ("IOB2", "I-X I-X B-X", [(2, 3, "X")], 1),  # I after O starts nothing well-formed
        ("IOB2", "B-X I-Y", [(0, 1, "X")], 1),
        ("IOE2", "I-X E-X E-X O I-Y", [(0, 2, "X"), (2, 3, "X")], 1),
        ("IOBES", "B-X I-X E-X S-Y B-X E-X", [(0, 3, "X"), (3, 4, "Y"), (4, 6, "X")], 0),
        ("IOBES", "B-X I-X O S-X S-X", [(3, 4, "X"), (4, 5, "X")], 1),
        ("IOBES", "B-X E-X B-X E-X", [(0, 2, "X"), (2, 4, "X")], 0),
        ("BILOU", "B-X L-X U-X B-Y I-Y L-Y I-X", [(0, 2, "X"), (2, 3, "X"), (3, 6, "Y")], 1),
        # IOB1: B only right after its own type; a stray B is one ill-formed token, read as an O
        ("IOB1", "I-X I-X B-X I-X O I-Y", [(0, 2, "X"), (2, 4, "X"), (5, 6, "Y")], 0),
        ("IOB1", "O B-X I-X I-X", [(2, 4, "X")], 1),
        ("IOB1", "I-X B-X B-X I-Y B-Y", [(0, 1, "X"), (1, 2, "X"), (2, 3, "X"), (3, 4, "Y"), (4, 5, "Y")], 0),
        ("IOB1", "O B-X B-X", [(2, 3, "X")], 1),  # the second B follows a (stray) B-X
        ("IOB1", "I-X B-X B-Y I-Y", [(0, 1, "X"), (3, 4, "Y")], 2),  # lone B-X then B-Y: ill-formed; B-Y stray
        ("IOB1", "I-X B-X I-Y", [(0, 1, "X"), (1, 2, "X"), (2, 3, "Y")], 0),
        # IOE1: E only right before its own type; a chunk ending in E that is not is ill-formed
        ("IOE1", "I-X E-X I-X I-X O", [(0, 2, "X"), (2, 4, "X")], 0),
        ("IOE1", "I-X E-X E-X I-X", [(0, 2, "X"), (2, 3, "X"), (3, 4, "X")], 0),
        ("IOE1", "I-X E-X O I-Y", [(3, 4, "Y")], 1),
        ("IOE1", "I-X I-Y E-Y I-Y", [(0, 1, "X"), (1, 3, "Y"), (3, 4, "Y")], 0),
        ("IOE1", "O E-X I-X E-X", [], 2),  # stray E-X; I-X E-X at the sentence end
        ("conlleval", "B-X E-X B-X E-X", [(0, 4, "X")], 0),  # no E→B boundary in conlleval.pl
        ("conlleval", "S-X S-X O I-X B-X", [(0, 2, "X"), (3, 4, "X"), (4, 5, "X")], 0),
        ("conlleval", "I-X I-Y E-Y E-Y", [(0, 1, "X"), (1, 3, "Y"), (3, 4, "Y")], 0),
    ],
)
def test_scheme_cases(scheme: str, tags: str, expected: list, ill: int) -> None:
    assert chunks(tags.split(), scheme) == (expected, ill)


# seqeval's published examples (tests/test_scheme.py, test_iob1_tokens and test_ioe1_tokens), one
# sentence each, with the number of ill-formed chunks and stray tokens we count besides
SEQEVAL_IOB1_IOE1 = [
    ("IOB1", "B-PER", [], 1),
    ("IOB1", "I-PER", [(0, 1, "PER")], 0),
    ("IOB1", "O", [], 0),
    ("IOB1", "O I-PER", [(1, 2, "PER")], 0),
    ("IOB1", "O B-PER", [], 1),
    ("IOB1", "I-PER O", [(0, 1, "PER")], 0),
    ("IOB1", "I-PER I-PER", [(0, 2, "PER")], 0),
    ("IOB1", "I-PER I-ORG", [(0, 1, "PER"), (1, 2, "ORG")], 0),
    ("IOB1", "I-PER B-PER", [(0, 1, "PER"), (1, 2, "PER")], 0),
    ("IOB1", "I-PER B-ORG", [(0, 1, "PER")], 1),
    ("IOB1", "B-PER O", [], 1),
    ("IOB1", "B-PER I-PER", [(1, 2, "PER")], 1),
    ("IOB1", "B-PER I-ORG", [(1, 2, "ORG")], 1),
    ("IOB1", "B-PER B-PER", [(1, 2, "PER")], 1),
    ("IOB1", "B-PER B-ORG", [], 2),
    ("IOE1", "E-PER", [], 1),
    ("IOE1", "I-PER", [(0, 1, "PER")], 0),
    ("IOE1", "O", [], 0),
    ("IOE1", "O I-PER", [(1, 2, "PER")], 0),
    ("IOE1", "O E-PER", [], 1),
    ("IOE1", "I-PER O", [(0, 1, "PER")], 0),
    ("IOE1", "I-PER I-PER", [(0, 2, "PER")], 0),
    ("IOE1", "I-PER I-ORG", [(0, 1, "PER"), (1, 2, "ORG")], 0),
    ("IOE1", "I-PER E-PER", [], 1),  # seqeval's test leaves this one out; its strict mode drops the chunk
    ("IOE1", "I-PER E-ORG", [(0, 1, "PER")], 1),
    ("IOE1", "E-PER O", [], 1),
    ("IOE1", "E-PER I-PER", [(1, 2, "PER")], 1),
    ("IOE1", "E-PER I-ORG", [(1, 2, "ORG")], 1),
    ("IOE1", "E-PER E-PER", [], 2),
    ("IOE1", "E-PER E-ORG", [], 2),
]


@pytest.mark.parametrize(("scheme", "tags", "expected", "ill"), SEQEVAL_IOB1_IOE1)
def test_iob1_ioe1_seqeval_examples(scheme: str, tags: str, expected: list, ill: int) -> None:
    assert chunks(tags.split(), scheme) == (expected, ill)


def test_iob1_ioe1_accept_their_prefixes_only() -> None:
    # seqeval: IOB1 refuses E and S, IOE1 refuses B and S
    for scheme, good, bad in (("IOB1", "BI", "ESLU"), ("IOE1", "IE", "BSLU")):
        encode_tags(["O", *(f"{p}-X" for p in good)], scheme=scheme)
        for p in bad:
            with pytest.raises(UnknownTagError):
                encode_tags([f"{p}-X"], scheme=scheme)
    assert chunks([], "IOB1") == chunks([], "IOE1") == ([], 0)


def test_sentence_breaks_end_chunks() -> None:
    assert chunks(["B-X", "I-X", "I-X"], "conlleval", breaks=(2,))[0] == [(0, 2, "X"), (2, 3, "X")]
    assert chunks(["B-X", "I-X", "I-X"], "IOB2", breaks=(2,)) == ([(0, 2, "X")], 1)
    # a B right after a break follows no token of its own type; an E before a break precedes none
    assert chunks(["I-X", "B-X", "I-X"], "IOB1", breaks=(1,)) == ([(0, 1, "X"), (2, 3, "X")], 1)
    assert chunks(["I-X", "E-X", "I-X"], "IOE1", breaks=(2,)) == ([(2, 3, "X")], 1)
    assert chunks(["I-X", "E-X", "I-X"], "IOE1") == ([(0, 2, "X"), (2, 3, "X")], 0)


def test_ill_formed_examples_are_the_first_in_position_order() -> None:
    # stray B tokens at 0, 4, 5, 7 and 9; the lone B-X chunk at 6 is followed by B-Z
    tags = "B-X I-X O I-X B-Y B-X B-X B-Z O B-X".split()
    enc = encode_tags(tags, scheme="IOB1")
    ch = decode(enc.prefix, enc.type, np.zeros(len(tags), dtype=bool), "IOB1")
    assert (ch.start.tolist(), ch.end.tolist()) == ([1, 3], [2, 4])
    assert ch.ill_formed == 6 and ch.ill_formed_examples == ((0, 1), (4, 5), (5, 6), (6, 7), (7, 8))


def test_types_keep_hyphens_like_conlleval() -> None:
    assert chunks(["B-ADJP-X", "I-ADJP-X"], "conlleval")[0] == [(0, 2, "ADJP-X")]


def test_unknown_prefix_and_scheme_errors() -> None:
    with pytest.raises(UnknownTagError) as e:
        encode_tags(["O", "B-X", "E-X"], scheme="IOB2")
    assert e.value.position == 2 and e.value.tag == "E-X"
    for bad in ("X", "B-", "Q-PER", "B"):
        with pytest.raises(UnknownTagError):
            encode_tags([bad], scheme="conlleval")
    with pytest.raises(ValueError, match="conlleval, IOB1, IOB2, IOE1, IOE2, IOBES, BILOU"):
        get_scheme("iob9")
    assert get_scheme("iobes") is SCHEMES["IOBES"]


TAGS_ALL = ["O", "B-X", "I-X", "E-X", "S-X", "B-Y", "I-Y", "E-Y", "S-Y"]


def _sequences(alphabet: list[str]):
    return st.lists(st.tuples(st.sampled_from(alphabet), st.sampled_from(alphabet), st.integers(0, 6)), min_size=1, max_size=40)


def _to_lines(rows: list[tuple[str, str, int]]) -> tuple[list[str], list[str], list[str], np.ndarray]:
    lines, gold, pred, sent = [], [], [], []
    for i, (g, p, r) in enumerate(rows):
        is_break = r == 0 and i > 0
        if is_break:
            lines.append("")
        lines.append(f"w{i} {g} {p}")
        gold.append(g)
        pred.append(p)
        sent.append(is_break or i == 0)
    return lines, gold, pred, np.array(sent)


@settings(max_examples=300, deadline=None)
@given(_sequences(TAGS_ALL))
def test_conlleval_scheme_equals_conlleval_pl_counting(rows) -> None:
    """Span matching under the `conlleval` scheme gives exactly the counts of conlleval.pl's own
    state machine (ported line by line), per type, for any mix of B/I/E/S tags and breaks."""
    lines, gold, pred, sent = _to_lines(rows)
    want = conlleval_counts(lines)
    m = score_spans(corpus_from_tags(gold, {"m": pred}, sentence_start=sent)).models["m"]
    micro = m.exact.micro
    assert (micro.tp, micro.tp + micro.fp, micro.tp + micro.fn) == (want["correct"], want["found"], want["gold"])
    got = {t: (x.tp, x.tp + x.fp, x.tp + x.fn) for t, x in m.exact.per_tag.items()}
    assert got == want["per_type"]
    assert m.token_correct == want["correct_tags"]




BIO = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]


def _seqeval_report(y_true, y_pred, **kw) -> dict:
    sm = python_package("seqeval.metrics", "test")
    return sm.classification_report(y_true, y_pred, output_dict=True, zero_division=0, **kw)


def _ours(y_true, y_pred, scheme: str) -> dict:
    flat_g = [t for s in y_true for t in s]
    flat_p = [t for s in y_pred for t in s]
    sent = np.zeros(len(flat_g), dtype=bool)
    sent[np.cumsum([0] + [len(s) for s in y_true[:-1]])] = True
    return score_spans(corpus_from_tags(flat_g, {"m": flat_p}, sentence_start=sent, scheme=scheme)).models["m"].exact


def _compare(report: dict, ours) -> None:
    tags = {t for t in report if t not in ("micro avg", "macro avg", "weighted avg")}
    assert tags == set(ours.per_tag)
    for t in tags:
        assert report[t]["support"] == ours.per_tag[t].support
        for k in ("precision", "recall", "f1-score"):
            assert report[t][k] == pytest.approx(getattr(ours.per_tag[t], k.replace("-score", "")), abs=1e-12), (t, k)
    for k in ("precision", "recall", "f1-score"):
        assert report["micro avg"][k] == pytest.approx(getattr(ours.micro, k.replace("-score", "")), abs=1e-12)
        if tags:  # the means over tags, plain and weighted by support (seqeval's are NaN without a tag)
            assert report["macro avg"][k] == pytest.approx(ours.macro[k.replace("-score", "")], abs=1e-12), ("macro", k)
            assert report["weighted avg"][k] == pytest.approx(ours.weighted[k.replace("-score", "")], abs=1e-12), ("weighted", k)


def _bio_sentences(alphabet: list[str]):
    return st.lists(
        st.lists(st.tuples(st.sampled_from(alphabet), st.sampled_from(alphabet)), min_size=1, max_size=12),
        min_size=1,
        max_size=6,
    )


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # seqeval averages empty arrays
@settings(max_examples=150, deadline=None)
@given(_bio_sentences(BIO))
def test_conlleval_scheme_equals_seqeval_default_on_bio(sents) -> None:
    y_true = [[g for g, _ in s] for s in sents]
    y_pred = [[p for _, p in s] for s in sents]
    _compare(_seqeval_report(y_true, y_pred), _ours(y_true, y_pred, "conlleval"))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # seqeval averages empty arrays
@settings(max_examples=150, deadline=None)
@given(_bio_sentences(BIO))
def test_iob2_equals_seqeval_strict_iob2(sents) -> None:
    python_package("seqeval", "test")
    from seqeval.scheme import IOB2 as SEQEVAL_IOB2

    y_true = [[g for g, _ in s] for s in sents]
    y_pred = [[p for _, p in s] for s in sents]
    report = _seqeval_report(y_true, y_pred, mode="strict", scheme=SEQEVAL_IOB2)
    _compare(report, _ours(y_true, y_pred, "IOB2"))


STRICT_ALPHABETS = {
    "IOBES": ["O", "B-PER", "I-PER", "E-PER", "S-PER", "B-LOC", "E-LOC", "S-LOC"],
    "IOE2": ["O", "I-PER", "E-PER", "I-LOC", "E-LOC"],
    "BILOU": ["O", "B-PER", "I-PER", "L-PER", "U-PER", "B-LOC", "L-LOC", "U-LOC"],
}


@pytest.mark.parametrize("scheme", sorted(STRICT_ALPHABETS))
def test_strict_schemes_equal_seqeval_strict(scheme: str) -> None:
    python_package("seqeval", "test")
    import seqeval.scheme

    @settings(max_examples=100, deadline=None)
    @given(_bio_sentences(STRICT_ALPHABETS[scheme]))
    def check(sents) -> None:
        y_true = [[g for g, _ in s] for s in sents]
        y_pred = [[p for _, p in s] for s in sents]
        report = _seqeval_report(y_true, y_pred, mode="strict", scheme=getattr(seqeval.scheme, scheme))
        _compare(report, _ours(y_true, y_pred, scheme))

    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # seqeval averages empty arrays
        check()


# ---------------------------------------------------------------------------------------------
# every strict scheme against seqeval's strict mode: chunks, micro and per-type P/R/F1

STRICT = ("IOB1", "IOE1", "IOB2", "IOE2", "IOBES", "BILOU")


def _strict_sentences(scheme: str):
    """1–6 sentences of 1–12 tokens (gold, predicted) over `O` and every prefix the scheme's reader
    accepts, with 2 or 3 types."""
    prefixes = SCHEMES[scheme].prefixes
    return st.sampled_from(["X Y", "X Y Z", "PER ORG-A LOC"]).flatmap(
        lambda types: _bio_sentences(["O", *(f"{p}-{t}" for p in prefixes for t in types.split())])
    )


def _our_chunks(sents: list[list[str]], scheme: str) -> list[list[tuple[int, int, str]]]:
    flat = [t for s in sents for t in s]
    offsets = np.cumsum([0] + [len(s) for s in sents])
    sent = np.zeros(len(flat), dtype=bool)
    sent[offsets[:-1]] = True
    enc = encode_tags(flat, scheme=scheme)
    ch = decode(enc.prefix, enc.type, sent, scheme)
    out: list[list[tuple[int, int, str]]] = [[] for _ in sents]
    for s, e, t in zip(ch.start.tolist(), ch.end.tolist(), ch.type.tolist()):
        k = int(np.searchsorted(offsets, s, side="right")) - 1
        out[k].append((s - int(offsets[k]), e - int(offsets[k]), enc.types[t]))
    return out


def _seqeval_chunks(sents: list[list[str]], scheme: str) -> list[list[tuple[int, int, str]]]:
    sq = python_package("seqeval.scheme", "test")
    return [[(e.start, e.end, e.tag) for e in es] for es in sq.Entities(sents, getattr(sq, scheme)).entities]


def _check_against_seqeval(sents, scheme: str) -> None:
    sq = python_package("seqeval.scheme", "test")
    sm = python_package("seqeval.metrics", "test")
    y_true = [[g for g, _ in s] for s in sents]
    y_pred = [[p for _, p in s] for s in sents]
    for y in (y_true, y_pred):
        assert _our_chunks(y, scheme) == _seqeval_chunks(y, scheme), y
    ours = _ours(y_true, y_pred, scheme)
    kw = {"mode": "strict", "scheme": getattr(sq, scheme), "zero_division": 0}
    names = sorted(sq.Entities(y_true, getattr(sq, scheme)).unique_tags | sq.Entities(y_pred, getattr(sq, scheme)).unique_tags)
    assert names == sorted(ours.per_tag)
    for name, fn in (("precision", sm.precision_score), ("recall", sm.recall_score), ("f1", sm.f1_score)):
        assert abs(fn(y_true, y_pred, average="micro", **kw) - getattr(ours.micro, name)) <= 1e-12, name
        per_type = fn(y_true, y_pred, average=None, **kw)
        assert len(per_type) == len(names)
        for t, v in zip(names, per_type):
            assert abs(v - getattr(ours.per_tag[t], name)) <= 1e-12, (name, t)


@pytest.mark.parametrize("scheme", STRICT)
def test_strict_scheme_chunks_and_scores_equal_seqeval_strict(scheme: str) -> None:
    """300 random gold/predicted corpora per scheme: our chunks are seqeval's `Entities` chunks,
    sentence by sentence, and our exact micro and per-type P/R/F1 its strict-mode scores."""
    python_package("seqeval.scheme", "test")

    @settings(max_examples=300, deadline=None)
    @given(_strict_sentences(scheme))
    def check(sents) -> None:
        _check_against_seqeval(sents, scheme)

    check()


@pytest.mark.parametrize("scheme", STRICT)
def test_strict_scheme_chunks_equal_seqeval_on_every_short_sentence(scheme: str) -> None:
    """Every sentence of up to 5 tokens (4 for the four-prefix schemes) over two types: the
    scheme rules look at neighbouring tokens only, so this covers every context they see."""
    import itertools

    prefixes = SCHEMES[scheme].prefixes
    alphabet = ["O", *(f"{p}-{t}" for p in prefixes for t in ("X", "Y"))]
    longest = 5 if len(prefixes) == 2 else 4
    sents = [list(x) for k in range(1, longest + 1) for x in itertools.product(alphabet, repeat=k)]
    assert _our_chunks(sents, scheme) == _seqeval_chunks(sents, scheme)
