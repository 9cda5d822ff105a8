"""Agreement bar (SPEC §6): on the CoNLL-2000 chunking sample the exact-match results equal
conlleval.pl's printed report to every digit, per type included; the E→B edge case behaves as
documented in `conlleval` and `IOBES` modes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from extracteval.tasks.spans.semantics import SpansConfig, score_spans
from extracteval.tasks.spans.inputs import load_token_corpus
from extracteval.tasks.spans.report import conlleval_lines
from tests.reference.conlleval_port import conlleval_counts

SAMPLE = Path("ner/conll2000_chunking_sample")


def _score(path: Path, scheme: str = "conlleval"):
    corpus = load_token_corpus(scheme=scheme, conll=[("m", path)])
    return corpus, score_spans(corpus, config=SpansConfig(scheme=scheme)).models["m"]


def _report_lines(corpus, m) -> list[str]:
    per_type = [(t, x.tp, x.tp + x.fp, x.tp + x.fn) for t, x in m.exact.per_tag.items()]
    return conlleval_lines(tokens=corpus.n_tokens, correct_tags=m.token_correct, per_type=per_type)


def test_conll2000_report_reproduced_line_for_line(shared_data: Path) -> None:
    corpus, m = _score(shared_data / SAMPLE / "output.txt")
    printed = (shared_data / SAMPLE / "result.conlleval.txt").read_text(encoding="utf-8").replace("\r\n", "\n").rstrip("\n").split("\n")
    assert _report_lines(corpus, m) == printed


def test_conll2000_json_numbers_print_as_conlleval(shared_data: Path) -> None:
    """The --json ratios, printed as conlleval prints them, give the same digits; counts exact."""
    corpus, m = _score(shared_data / SAMPLE / "output.txt")
    printed = (shared_data / SAMPLE / "result.conlleval.txt").read_text(encoding="utf-8").splitlines()
    assert printed[0] == "processed 961 tokens with 459 phrases; found: 539 phrases; correct: 371."
    mi = m.exact.micro
    assert (corpus.n_tokens, mi.tp + mi.fn, mi.tp + mi.fp, mi.tp) == (961, 459, 539, 371)
    assert f"accuracy: {100 * m.token_accuracy:6.2f}%; precision: {100 * mi.precision:6.2f}%; recall: {100 * mi.recall:6.2f}%; FB1: {100 * mi.f1:6.2f}" == printed[1]
    rows = {}
    for line in printed[2:]:
        name, rest = line.split(":", 1)
        rows[name.strip()] = rest
    assert set(rows) == set(m.exact.per_tag)
    for t, x in m.exact.per_tag.items():
        mine = f" precision: {100 * x.precision:6.2f}%; recall: {100 * x.recall:6.2f}%; FB1: {100 * x.f1:6.2f}  {x.tp + x.fp}"
        assert mine == rows[t], t


def test_conll2000_unrounded_counts_match_kaniblu(shared_data: Path) -> None:
    expected = json.loads((shared_data / SAMPLE / "kaniblu_expected_input-001.json").read_text(encoding="utf-8"))
    corpus, m = _score(shared_data / SAMPLE / "output.txt")
    o = expected["overall"]
    mi = m.exact.micro
    assert (mi.tp + mi.fn, mi.tp + mi.fp, mi.tp, corpus.n_tokens) == (o["stats"]["gold"], o["stats"]["pred"], o["stats"]["correct"], o["stats"]["all"])
    assert (mi.precision, mi.recall, mi.f1) == pytest.approx((o["evals"]["prec"], o["evals"]["rec"], o["evals"]["f1"]), rel=1e-12)
    assert set(expected["slots"]) == set(m.exact.per_tag)
    for t, slot in expected["slots"].items():
        x = m.exact.per_tag[t]
        assert (x.tp + x.fn, x.tp + x.fp, x.tp) == (slot["stats"]["gold"], slot["stats"]["pred"], slot["stats"]["correct"]), t
        assert (x.precision, x.recall, x.f1) == pytest.approx((slot["evals"]["prec"], slot["evals"]["rec"], slot["evals"]["f1"]), rel=1e-12, abs=1e-15)


def test_port_of_conlleval_pl_reproduces_the_printed_counts(shared_data: Path) -> None:
    """The oracle used by the property tests is itself checked against conlleval's report."""
    lines = (shared_data / SAMPLE / "output.txt").read_text(encoding="utf-8").splitlines()
    c = conlleval_counts(lines)
    assert (c["tokens"], c["gold"], c["found"], c["correct"]) == (961, 459, 539, 371)
    assert c["per_type"]["NP"] == (206, 317, 262)


def test_e_b_edge_case_conlleval_merges(shared_data: Path) -> None:
    """conlleval.pl has no E→B chunk-end rule: gold `B E B E` is ONE chunk; it reports
    `1 phrases; found: 1; correct: 1`."""
    path = shared_data / "ner/edge_cases/e-b-sequence.iobes.txt"
    corpus, m = _score(path, "conlleval")
    mi = m.exact.micro
    assert (mi.tp + mi.fn, mi.tp + mi.fp, mi.tp) == (1, 1, 1)
    c = conlleval_counts(path.read_text(encoding="utf-8").splitlines())
    assert (c["gold"], c["found"], c["correct"]) == (1, 1, 1)
    assert _report_lines(corpus, m)[0] == "processed 4 tokens with 1 phrases; found: 1 phrases; correct: 1."


def test_e_b_edge_case_strict_iobes_splits(shared_data: Path) -> None:
    """Strict IOBES sees two gold chunks (North African, Grand Prix) and one predicted chunk
    spanning all four tokens: nothing correct, a boundary error and a missed chunk."""
    corpus, m = _score(shared_data / "ner/edge_cases/e-b-sequence.iobes.txt", "IOBES")
    mi = m.exact.micro
    assert (mi.tp + mi.fn, mi.tp + mi.fp, mi.tp) == (2, 1, 0)
    assert corpus.ill_formed == {"gold": 0, "m": 0}
    assert m.errors.counts["boundary"] == 1 and m.errors.counts["missed"] == 1
    assert m.relaxed["relaxed@0.5"].micro.tp == 1  # either half: 0.65·0.5 + 0.35·TextSim ≥ 0.5


def test_suffix_tags_give_the_same_report(shared_data: Path) -> None:
    """seqeval's `suffix=True` copy of the sample (`NP-B`) reads to the same chunks."""
    corpus = load_token_corpus(conll=[("m", shared_data / SAMPLE / "seqeval_ground_truth_inv.txt")], suffix=True)
    m = score_spans(corpus).models["m"]
    printed = (shared_data / SAMPLE / "result.conlleval.txt").read_text(encoding="utf-8").replace("\r\n", "\n").rstrip("\n").split("\n")
    assert _report_lines(corpus, m) == printed


def test_cli_terminal_view_prints_conllevals_report(shared_data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from extracteval.cli import main

    assert main(["score", "spans", "--conll", str(shared_data / SAMPLE / "output.txt")]) == 0
    out = capsys.readouterr().out.splitlines()
    printed = (shared_data / SAMPLE / "result.conlleval.txt").read_text(encoding="utf-8").replace("\r\n", "\n").rstrip("\n").split("\n")
    start = out.index(printed[0])
    assert out[start : start + len(printed)] == printed
