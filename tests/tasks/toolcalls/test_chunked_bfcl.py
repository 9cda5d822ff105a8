"""`score toolcalls --checker bfcl --chunk-size N [--workers K]` gives the in-memory document:
the same verdicts, per-category accuracies, generic metrics, ranking and warnings, byte for byte
(hand-made files here; the BFCL v4 and v1 samples in tests/reference/test_bfcl.py)."""

from __future__ import annotations

import json
import random
from pathlib import Path

SIZES = ["1", "2", "3", "7", "1000"]


def _fn(name: str) -> dict:
    return {"name": name, "parameters": {"type": "dict", "properties": {"x": {"type": "integer"}, "unit": {"type": "string"}},
                                         "required": ["x"]}}


def _write(path: Path, rows: list) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8")
    return path


def _files(d: Path, seed: int) -> list[str]:
    """Two categories, two models (one calls `a.b` as `a_b`), and the irregular entries the
    checker warns about: a repeated id, a question without answer, an answer without question,
    an answer naming an undescribed function, a record without id, missing results."""
    rng = random.Random(seed)
    argv: list[str] = []
    for cat in ("simple_python", "parallel"):
        qs, ans, ra, rb = [], [], [], []
        for i in rng.sample(range(40), 14):
            rid = f"{cat}_{i}"
            name = rng.choice(["calc.area", "geo_distance", "math.sum"])
            qs.append({"id": rid, "question": [[{"role": "user", "content": "?"}]], "function": [_fn(name)]})
            x = rng.randint(0, 3)
            calls = 2 if cat == "parallel" else 1
            ans.append({"id": rid, "ground_truth": [{name if rng.random() > 0.1 else "undescribed": {"x": [x], "unit": ["", "cm"]}}
                                                    for _ in range(calls)]})
            for out, mangle in ((ra, False), (rb, True)):
                if rng.random() < 0.1:
                    continue  # a missing result
                called = name.replace(".", "_") if mangle else name
                got = x if rng.random() < 0.7 else x + 1
                out.append({"id": rid, "result": [{called: json.dumps({"x": got})} for _ in range(calls)]})
        qs.append(dict(qs[0]))  # a repeated id
        qs.append({"id": f"{cat}_99", "question": [], "function": [_fn("calc.area")]})  # no answer
        ans.append({"id": f"{cat}_98", "ground_truth": [{"calc.area": {"x": [1]}}]})  # no question
        ans.append({"question": "no id"})
        rng.shuffle(ra)
        q, a = _write(d / f"q_{cat}.json", qs), _write(d / f"a_{cat}.json", ans)
        argv += ["--questions", str(q), "--truth", str(a), "--predictions", f"plain={_write(d / f'ra_{cat}.json', ra)}",
                 "--predictions", f"fc={_write(d / f'rb_{cat}.json', rb)}"]
    return argv


def test_bfcl_chunked_equals_in_memory(cli, tmp_path):
    for seed in (1, 2):
        folder = tmp_path / str(seed)
        folder.mkdir()
        args = ["score", "toolcalls", "--checker", "bfcl", *_files(folder, seed), "--json"]
        for extra in ([], ["--underscore-to-dot", "fc"]):
            want = cli(*args, *extra)
            assert want.code == 0, want.err
            doc = json.loads(want.out)
            kinds = set(doc["warning_counts"])
            assert {"repeated_id", "question_without_answer", "answer_without_question", "record_without_id"} <= kinds, kinds
            assert any(m["missing_ids"] for m in doc["models"].values()) and any(m["failed_ids"] for m in doc["models"].values())
            for size in SIZES:
                got = cli(*args, *extra, "--chunk-size", size)
                assert got.code == 0 and got.out == want.out, (seed, extra, size, got.err)
            got = cli(*args, *extra, "--chunk-size", "2", "--workers", "2")
            assert got.code == 0 and got.out == want.out, got.err


def test_bfcl_chunked_output_folder_and_decision_equal_in_memory(cli, tmp_path):
    args = ["score", "toolcalls", "--checker", "bfcl", *_files(tmp_path, 3), "--baseline", "plain", "--candidate", "fc", "--json"]
    want = cli(*args, "--output", str(tmp_path / "mem"))
    got = cli(*args, "--output", str(tmp_path / "chunked"), "--chunk-size", "3")
    assert want.code == got.code == 0, got.err
    assert json.loads(got.out)["decision"] == json.loads(want.out)["decision"]
    for name in ("records.jsonl",):
        assert (tmp_path / "chunked" / name).read_bytes() == (tmp_path / "mem" / name).read_bytes()


def test_bfcl_refuses_spark_and_a_bad_chunk_size(cli, tmp_path, pyspark_or_not):
    args = ["score", "toolcalls", "--checker", "bfcl", *_files(tmp_path, 4)]
    r = cli(*args, "--engine", "spark")
    assert r.code == 2 and "--checker bfcl runs on the local engine" in r.err
    r = cli(*args, "--chunk-size", "0")
    assert r.code == 2 and "positive number" in r.err and "Traceback" not in r.err
