"""The chunked `spans` engine on token files equals the in-memory one: the same `--json`
document, byte for byte (bootstrap intervals, token accuracy and ill-formed chunks included), for
chunk sizes 1, 2, 3, 7 and 1000 sentences and with workers — on hand-made files that exercise
every kind of sentence break and blocks cut anywhere (schemes conlleval, IOBES, IOB1 and IOE1),
and on the conlleval sample."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from extracteval.tasks.spans import chunks as spans_chunks
from extracteval.tasks.spans.chunks import iter_token_pieces
from extracteval.tasks.spans.inputs import read_token_file

SIZES = ["1", "2", "3", "7", "1000"]
TYPES = ["NP", "VP", "PP"]


def _tag(rng: random.Random, prefixes: str) -> str:
    return "O" if rng.random() < 0.3 else f"{rng.choice(prefixes)}-{rng.choice(TYPES)}"


# the prefixes of the gold and model a, and of model b, per scheme (what its reader accepts)
PREFIXES = {"conlleval": ("BIES", "BI"), "IOBES": ("BIES", "BI"), "IOB1": ("BI", "I"), "IOE1": ("IE", "I")}


def _write_files(folder: Path, seed: int, scheme: str = "conlleval") -> dict[str, Path]:
    """A two-model --conll pair and the same data as a truth file with two prediction files: blank
    lines, runs of them, -DOCSTART- and -X- lines, CRLF, lone CRs, tabs, trailing spaces, a BOM, non-ASCII
    tokens, tags that are ill-formed under the strict schemes (stray tokens under IOB1 and IOE1)."""
    rng = random.Random(seed)
    full, short = PREFIXES[scheme]
    conll_a, conll_b, truth, pred_a, pred_b = [], [], [], [], []
    for s in range(rng.randint(8, 30)):
        brk = rng.choice(["\n", "\n\n\n", "-DOCSTART- -X- O O\n\n", "-X-\n", "  \t\n", "\r\n", "\r", "-X-\r\r"])  # a lone CR ends a line
        for lines in (conll_a, conll_b, truth, pred_a, pred_b):
            lines.append(brk)
        for t in range(rng.randint(1, 9)):
            tok = rng.choice(["the", "Straße", "a", "of", "cat", "naïve", "x" * rng.randint(1, 40)]) + str(t)
            gold, a, b = _tag(rng, full), _tag(rng, full), _tag(rng, short)
            sep = rng.choice([" ", "\t", "  "])
            end = rng.choice(["\n", " \n", "\r\n"])
            conll_a.append(f"{tok}{sep}X {gold} {a}{end}")
            conll_b.append(f"{tok} X{sep}{gold} {b}{end}")
            truth.append(f"{tok} {gold}{end}")
            pred_a.append(f"{tok} {a}\n")
            pred_b.append(f"{tok}\t{b}{end}")
    out = {}
    for name, lines in (("a.conll", conll_a), ("b.conll", conll_b), ("truth.txt", truth), ("a.txt", pred_a), ("b.txt", pred_b)):
        text = "".join(lines)
        out[name] = folder / name
        out[name].write_bytes((b"\xef\xbb\xbf" if name == "a.conll" else b"") + text.encode("utf-8"))
    return out


def _layouts(f: dict[str, Path]) -> list[list[str]]:
    return [
        ["--conll", f"a={f['a.conll']}", "--conll", f"b={f['b.conll']}"],
        ["--truth", str(f["truth.txt"]), "--predictions", f"a={f['a.txt']}", "--predictions", f"b={f['b.txt']}"],
    ]


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("scheme", sorted(PREFIXES))
def test_token_files_chunked_equal_in_memory(cli, tmp_path, monkeypatch, seed, scheme):
    monkeypatch.setattr(spans_chunks, "_BLOCK", 61)  # blocks end mid-sentence, mid-document, anywhere
    files = _write_files(tmp_path, seed, scheme)
    for layout in _layouts(files):
        args = ["score", "spans", *layout, "--scheme", scheme, "--resamples", "50", "--json"]
        want = cli(*args)
        assert want.code == 0, want.err
        for size in SIZES:
            got = cli(*args, "--chunk-size", size)
            assert got.code == 0, got.err
            assert got.out == want.out, (layout[0], size)
        got = cli(*args, "--chunk-size", "2", "--workers", "2")
        assert got.code == 0 and got.out == want.out, got.err


def test_pieces_hold_the_sentences_of_the_whole_file(tmp_path):
    f = _write_files(tmp_path, 5)["a.conll"]
    whole = read_token_file(f, tag_columns=2)
    for block in (8, 61, 1 << 22):
        for n in (1, 3):
            pieces = list(iter_token_pieces(f, tag_columns=2, sentences=n, block=block))
            assert all(int(p.sentence_start.sum()) == n for p in pieces[:-1])
            assert [ln for p in pieces for ln in p.line.tolist()] == whole.line.tolist()
            assert [t for p in pieces for t in p.tokens] == whole.tokens
            assert [t for p in pieces for t in p.tags[0]] == whole.tags[0]


def test_conlleval_sample_chunked_equals_in_memory(cli, shared_data, monkeypatch):
    sample = shared_data / "ner" / "conll2000_chunking_sample" / "output.txt"
    if not sample.exists():
        pytest.skip(f"conlleval sample not found at {sample}")
    monkeypatch.setattr(spans_chunks, "_BLOCK", 4096)
    args = ["score", "spans", "--conll", str(sample), "--json", "--resamples", "100"]
    want = cli(*args)
    assert want.code == 0, want.err
    for size in SIZES:
        got = cli(*args, "--chunk-size", size)
        assert got.code == 0 and got.out == want.out, size
    got = cli(*args, "--chunk-size", "3", "--workers", "2")
    assert got.code == 0 and got.out == want.out, got.err


def test_token_file_errors_name_the_file_and_line_as_in_memory(cli, tmp_path, monkeypatch):
    monkeypatch.setattr(spans_chunks, "_BLOCK", 16)
    bad = tmp_path / "bad.conll"
    bad.write_text("a X B-NP B-NP\nb X I-NP I-NP\n\nc X O O\nd X B-VP\n")
    want = cli("score", "spans", "--conll", str(bad))
    got = cli("score", "spans", "--conll", str(bad), "--chunk-size", "1")
    assert want.code == got.code == 2
    assert "bad.conll: line 5: expected 4 columns as on line 1" in got.err and got.err == want.err
    truth = tmp_path / "t.txt"
    truth.write_text("a B-NP\nb I-NP\n\nc O\n\nd O\n")
    short = tmp_path / "p.txt"
    short.write_text("a B-NP\nb I-NP\n\nc O\n")
    got = cli("score", "spans", "--truth", str(truth), "--predictions", f"p={short}", "--chunk-size", "1")
    assert got.code == 2 and "p.txt: end of file: tokens and sentence breaks must line up with" in got.err and "line 6" in got.err, got.err
    assert "Traceback" not in got.err
    latin = tmp_path / "latin.conll"
    latin.write_bytes(b"a X O O\n\nb\xe9 X O O\n")
    want, got = cli("score", "spans", "--conll", str(latin)), cli("score", "spans", "--conll", str(latin), "--chunk-size", "1")
    assert want.code == got.code == 2 and "latin.conll: line 3: expected UTF-8 text" in got.err and got.err == want.err
    empty = tmp_path / "empty.conll"
    empty.write_text("\n-DOCSTART- -X- O O\n\n")
    got = cli("score", "spans", "--conll", str(empty), "--chunk-size", "2")
    assert got.code == 2 and "empty.conll: no tokens found" in got.err


BOMS = {"utf-16-le": b"\xff\xfe", "utf-16-be": b"\xfe\xff", "utf-32-le": b"\xff\xfe\x00\x00"}


@pytest.mark.parametrize("encoding", list(BOMS))
def test_unicode_token_files_with_a_bom_chunked_equal_in_memory(cli, tmp_path, monkeypatch, encoding):
    """UTF-16/32 with a byte-order mark is read by the streamed token reader as by the in-memory
    one (and as every other text reader): the same result as the same files saved as UTF-8,
    with blocks cut anywhere (a character's code units split across reads included)."""
    monkeypatch.setattr(spans_chunks, "_BLOCK", 61)
    (tmp_path / "utf8").mkdir()
    utf8 = _write_files(tmp_path / "utf8", 4)
    other = tmp_path / encoding
    other.mkdir()
    for name, path in utf8.items():
        text = path.read_bytes().decode("utf-8-sig")
        (other / name).write_bytes(BOMS[encoding] + text.encode(encoding))
    for layout in _layouts(utf8):
        args = ["score", "spans", *layout, "--resamples", "50", "--json"]
        want = cli(*args)
        assert want.code == 0, want.err
        moved = [a.replace(str(tmp_path / "utf8"), str(other)) for a in args]
        memory = cli(*moved)
        assert memory.code == 0 and memory.out.replace(str(other), str(tmp_path / "utf8")) == want.out, memory.err
        for size in ("1", "3", "1000"):
            got = cli(*moved, "--chunk-size", size)
            assert got.code == 0, got.err
            assert got.out == memory.out, (layout[0], size)


def test_broken_unicode_token_files_are_refused_as_in_memory(cli, tmp_path, monkeypatch):
    monkeypatch.setattr(spans_chunks, "_BLOCK", 16)
    body = "a X B-NP B-NP\nb X I-NP I-NP\n\nc X O O\n".encode("utf-16-le")
    cases = {
        "odd.conll": (b"\xff\xfe" + body + b"\x00", "is not valid UTF-16"),  # a byte short of a code unit at the end
        "nul.conll": (b"\xff\xfe" + body + "d\x00 X O O\n".encode("utf-16-le"), "line 5: found a NUL byte"),
        "surrogate.conll": (b"\xfe\xff" + "a X O O\n".encode("utf-16-be") + b"\xdc\x00" + "\n".encode("utf-16-be"), "is not valid UTF-16"),
    }
    for name, (data, needle) in cases.items():
        f = tmp_path / name
        f.write_bytes(data)
        want = cli("score", "spans", "--conll", str(f))
        got = cli("score", "spans", "--conll", str(f), "--chunk-size", "1")
        assert want.code == got.code == 2, (name, got.err)
        assert f"{name}: " in got.err and needle in got.err and got.err == want.err, (name, got.err, want.err)
        assert "Traceback" not in got.err


def test_a_broken_xz_token_file_is_refused(cli, tmp_path):
    """Not .xz at all, or cut short: one line naming the file, chunked as in memory."""
    import lzma

    whole = lzma.compress(("a X B-NP B-NP\nb X I-NP I-NP\n\n" * 2000).encode())
    for name, data in (("junk.conll.xz", b"not xz at all"), ("cut.conll.xz", whole[: len(whole) // 2])):
        f = tmp_path / name
        f.write_bytes(data)
        for extra in ((), ("--chunk-size", "1")):
            got = cli("score", "spans", "--conll", str(f), *extra)
            assert got.code == 2 and "Traceback" not in got.err, got.err
            assert f"{name}: not a valid .xz file" in got.err, got.err
