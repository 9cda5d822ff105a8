"""The record metadata of the contracts, tickets and invoices examples (experiments/<name>/metadata.csv).

Each example's README shows a slice whose ranking reverses the overall ranking of the two best
models; that slice must exist in the data (scored in-process, as the README's command does), and
make_data.py must write exactly the committed metadata, leaving the truth and predictions as they are.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "experiments"

# example → (score arguments, slice column, the reversing slice's value, its winner, the overall winner)
CASES = {
    "contracts": (["fields", "--truth", "truth.csv", "--strategies", "strategies.yaml",
                   *[a for m in ("gpt-4o-mini", "llama-3.1-8b", "regex-baseline") for a in ("--predictions", f"{m}=predictions/{m}.csv")]],
                  "source", "digital", "regex-baseline", "gpt-4o-mini"),
    "tickets": (["labels", "--truth", "truth.csv", "--config", "config.yaml",
                 *[a for m in ("gpt-4o-mini", "distilbert-clf", "keyword-rules") for a in ("--predictions", f"{m}=predictions/{m}.csv")]],
                "channel", "chat", "keyword-rules", "gpt-4o-mini"),
    "invoices": (["entities", "--truth", "truth.jsonl", "--weights", "weights.yaml",
                  *[a for m in ("gpt-4o", "layout-ocr-v2", "mistral-7b") for a in ("--predictions", f"{m}=predictions/{m}.jsonl")]],
                 "layout", "one-page", "layout-ocr-v2", "gpt-4o"),
}
CUSTOMERS = {"contracts": 23, "tickets": 30, "invoices": 22}  # as each README says


def _generator(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"make_data_{name}", EXAMPLES / name / "make_data.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _slices(cli, monkeypatch: pytest.MonkeyPatch, name: str, *extra: str) -> dict:
    args, column, *_ = CASES[name]
    monkeypatch.chdir(EXAMPLES / name)
    result = cli("score", *args, "--slice-by", column, "--metadata", "metadata.csv", *extra, "--json")
    assert result.code == 0, result.err
    return result.json()["slices"]


@pytest.mark.parametrize("name", list(CASES))
def test_a_slice_reverses_the_two_best_models(name: str, cli, monkeypatch: pytest.MonkeyPatch) -> None:
    _, column, value, winner, overall_winner = CASES[name]
    doc = _slices(cli, monkeypatch, name, "--cluster-by", "customer")
    rows = {(r["slice"], r["value"], r["model"]): r for r in doc["rows"]}
    overall = sorted((r for r in doc["rows"] if r["slice"] == "(all records)"), key=lambda r: r["rank"])
    assert [r["model"] for r in overall[:2]] == [overall_winner, winner]
    mine = [r for (s, v, _), r in rows.items() if (s, v) == (column, value)]
    assert mine[0]["records"] >= 20 and all(r["ranked"] and r["ranking_differs"] for r in mine)
    assert rows[(column, value, winner)]["rank"] == 1 and rows[(column, value, overall_winner)]["rank"] == 2
    assert rows[(column, value, winner)]["estimate"] > rows[(column, value, overall_winner)]["estimate"]
    lead = next(g for g in doc["gaps"] if (g["slice"], g["value"], g["higher"]) == (column, value, winner))
    assert lead["lower"] == overall_winner and not lead["significant"]  # as the README reads it: a lead, not a proven one
    assert overall[0]["clusters"] >= 20  # the customers (tickets: and the two invented ids' (missing))


@pytest.mark.parametrize("name", list(CASES))
def test_customer_clusters_widen_the_runner_up_s_overall_interval(name: str, cli, monkeypatch: pytest.MonkeyPatch) -> None:
    runner_up = CASES[name][3]
    width = {}
    for extra in ((), ("--cluster-by", "customer")):
        row = next(r for r in _slices(cli, monkeypatch, name, *extra)["rows"] if r["slice"] == "(all records)" and r["model"] == runner_up)
        width[extra] = row["high"] - row["low"]
    assert width[("--cluster-by", "customer")] > width[()]


@pytest.mark.parametrize("name", list(CASES))
def test_the_generator_writes_the_committed_metadata_and_leaves_the_data_as_it_is(name: str, tmp_path: Path) -> None:
    mod = _generator(name)
    committed = (EXAMPLES / name / "metadata.csv").read_bytes()
    assert mod.metadata_csv().encode("utf-8") == committed
    rows = [line.split(",") for line in committed.decode("utf-8").splitlines()]
    assert rows[0][0] == "id" and rows[0][-1] == "customer" and len({r[-1] for r in rows[1:]}) == CUSTOMERS[name]
    mod.HERE = tmp_path
    mod.main()
    written = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    assert Path("metadata.csv") in written and len(written) == 5  # truth, three models' predictions, metadata
    for rel in written:
        assert (tmp_path / rel).read_bytes() == (EXAMPLES / name / rel).read_bytes(), rel


@pytest.mark.parametrize("name", ["contracts", "tickets", "invoices"])
def test_the_readme_slice_tables_are_what_the_command_prints(name: str, cli) -> None:
    """Each example's README shows its slice command's tables as the command prints them today."""
    import re
    import shlex

    text = (REPO / "experiments" / name / "README.md").read_text(encoding="utf-8")
    m = re.search(r"```bash runnable\n(extracteval score [^`]*?--slice-by[^`]*?)\n```\n+```\n(.*?)```", text, re.S)
    assert m, f"{name}: no slice command followed by its output in the README"
    argv = shlex.split(m.group(1).replace("\\\n", " "))[1:]
    r = cli(*[str(REPO / a) if a.startswith("experiments/") else a for a in argv])
    assert r.code == 0, r.err
    for line in m.group(2).splitlines():
        assert line in r.out.splitlines(), f"{name}: README line not printed any more: {line!r}"
