"""Security: nothing from the inputs is ever executed, rendered as markup or used as a path.

- the source never calls eval/exec/pickle/marshal/unsafe YAML (a grep that fails on a new call);
- hostile model outputs (`__import__('os')…` Python calls) are parsed with `ast`, never run;
- the HTML report escapes field names, values and model names (XSS payloads);
- artifact file names derived from field / model names cannot leave the output folder.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "extracteval"

# call forms that execute or deserialise arbitrary input; a hit must be justified here
FORBIDDEN = re.compile(
    r"(?<![\w.])(eval|exec|compile)\s*\("
    r"|\bpickle\.loads?\s*\(|\bcPickle\b|\bmarshal\.loads?\s*\(|\bdill\.|\bshelve\.open\s*\("
    r"|\byaml\.(load|load_all|unsafe_load|full_load)\s*\(|\byaml\.(Unsafe|Full)?Loader\b"
    r"|\b__import__\s*\(|\bos\.system\s*\(|\bsubprocess\.\w+\([^)]*shell\s*=\s*True"
    r"|\btorch\.load\s*\(|\bjoblib\.load\s*\(|\bnp\.load\s*\([^)]*allow_pickle\s*=\s*True"
)


def _code_lines(path: Path):
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        code = line.split("#", 1)[0]
        if code.strip():
            yield n, code


# Reviewed exceptions: (file, code). The Spark engine moves its OWN count ledgers from its
# mapInPandas workers to the driver as pickled bytes; they are produced by extracteval inside
# the same job, never read from a user's file; the streamed `evaluate` on Spark moves each
# batch's truth rows the same way (produced by its own mapInPandas function in the same job).
REVIEWED = {("extracteval/spark/engine.py", 'part = pickle.loads(row["ledger"])'),
            ("extracteval/mlflow/stream.py", 'truth(pickle.loads(row["payload"]))')}


def test_source_has_no_eval_exec_pickle_or_unsafe_yaml() -> None:
    hits = [
        f"{p.relative_to(SRC.parent)}:{n}: {code.strip()}"
        for p in sorted(SRC.rglob("*.py"))
        for n, code in _code_lines(p)
        if FORBIDDEN.search(code) and (str(p.relative_to(SRC.parent)), code.strip()) not in REVIEWED
    ]
    assert not hits, "unsafe call(s) in src/:\n" + "\n".join(hits)


def test_the_grep_would_catch_them() -> None:
    for bad in ("x = eval(s)", "exec(code)", "pickle.load(f)", "yaml.load(text)", "yaml.load(t, Loader=yaml.FullLoader)",
                "__import__('os')", "np.load(p, allow_pickle=True)", "subprocess.run(cmd, shell=True)"):
        assert FORBIDDEN.search(bad), bad
    for fine in ("yaml.safe_load(text)", "model.evaluate(x)", "ast.literal_eval(s)", "self.execute(q)", "json.load(f)"):
        assert not FORBIDDEN.search(fine), fine


def test_yaml_is_loaded_safely(tmp_path: Path, monkeypatch) -> None:
    from extracteval.errors import InputError
    from extracteval.io.config import load_mapping

    monkeypatch.chdir(tmp_path)
    p = tmp_path / "config.yaml"
    p.write_text("a: !!python/object/apply:os.system ['echo pwned > PWNED']\n", encoding="utf-8")
    with pytest.raises(InputError):
        load_mapping(p)
    assert not (tmp_path / "PWNED").exists()


HOSTILE_CALLS = [
    "get_weather(city=__import__('os').system('echo pwned > PWNED'))",
    "__import__('os').system('echo pwned > PWNED')",
    "get_weather(city=(lambda: open('PWNED', 'w'))())",
    "[exec('open(\"PWNED\", \"w\")')]",
    "get_weather(**{'city': eval('1+1')})",
    "get_weather(city=().__class__.__bases__[0].__subclasses__())",
]


@pytest.mark.parametrize("output", HOSTILE_CALLS)
def test_python_call_strings_are_parsed_never_run(tmp_path: Path, monkeypatch, output: str) -> None:
    from extracteval.tasks.toolcalls.bfcl import check_entry, decode_result
    from extracteval.tasks.toolcalls.semantics import parse_calls, reference_calls, score_toolcall_record

    monkeypatch.chdir(tmp_path)
    parse_calls(output)
    rec = score_toolcall_record(reference_calls([{"name": "get_weather", "arguments": {"city": "Paris"}}]), output)
    assert not rec.correct if hasattr(rec, "correct") else True
    check_entry([{"name": "get_weather", "parameters": {"type": "dict", "properties": {"city": {"type": "string"}}, "required": ["city"]}}],
                decode_result(output), [{"get_weather": {"city": ["Paris"]}}], "simple")
    assert not (tmp_path / "PWNED").exists()


XSS = ['<script>alert("x")</script>', '"><img src=x onerror=alert(1)>', "javascript:alert(1)", "</td></tr><script>alert(2)</script>"]


def test_html_report_escapes_names_and_values() -> None:
    import pandas as pd

    from extracteval.mlflow.adapters import Section
    from extracteval.report.html import render_report

    table = pd.DataFrame({XSS[0]: [XSS[1], XSS[3]], "model": [XSS[2], XSS[0]]})
    html = render_report(title=XSS[0], subtitle=XSS[1], meta={XSS[3]: XSS[0]},
                         sections=[Section(title=XSS[1], table=table), Section(title="t", text=XSS[0], items=[XSS[3]])])
    assert "<script" not in html.lower()
    assert "<img" not in html.lower()
    assert "&lt;script&gt;" in html
    assert "default-src 'none'" in html  # and a CSP forbidding scripts even if one slipped through


@pytest.mark.parametrize("name", ["../../etc/passwd", "/etc/passwd", "a\x00b", "..", ".", "", "C:\\Windows\\x", "a/../../b", "~root", "\u202e.exe", "x" * 500])
def test_artifact_names_cannot_escape_the_folder(tmp_path: Path, name: str) -> None:
    from extracteval.io.config import safe_file_name

    safe = safe_file_name(name)
    assert safe and "/" not in safe and "\\" not in safe and "\x00" not in safe and not safe.startswith(".")
    assert len(safe) <= 120
    target = (tmp_path / f"{safe}.csv").resolve()
    assert target.parent == tmp_path.resolve()


def test_hostile_field_and_model_names_through_the_cli(cli, tmp_path: Path) -> None:
    """`score fields --output` with a field named like a path and a model named like markup."""
    evil_field = "../../escape"
    truth = tmp_path / "truth.csv"
    pred = tmp_path / "pred.csv"
    truth.write_text(f"id,{evil_field},name\nR1,a,<b>x</b>\nR2,b,y\n", encoding="utf-8")
    pred.write_text(f"id,{evil_field},name\nR1,a,<script>alert(1)</script>\nR2,c,y\n", encoding="utf-8")
    out = tmp_path / "out"
    r = cli("score", "fields", "--truth", str(truth), "--predictions", f"evil_model={pred}", "--no-ci", "--output", str(out))
    assert r.code == 0, r.err
    written = [p.resolve() for p in tmp_path.rglob("*") if p.is_file()]
    assert all(p.is_relative_to(tmp_path.resolve()) for p in written)
    assert not (tmp_path.parent / "escape").exists() and not any("escape" in p.name and p.parent != out.resolve() for p in written if p.parent.name != "out")
