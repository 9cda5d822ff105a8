"""`extracteval demo --only` takes example names repeated, comma-separated, or both (the
MLproject's `only` parameter is comma-separated), and refuses a name that is no example."""

from __future__ import annotations

from pathlib import Path

import pytest

from extracteval.commands.demo import only_names

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("values, names", [
    (None, []),
    (["contracts"], ["contracts"]),
    (["contracts,tickets"], ["contracts", "tickets"]),
    (["contracts", "tickets"], ["contracts", "tickets"]),
    (["contracts, tickets", "customers", "tickets,"], ["contracts", "tickets", "customers"]),
])
def test_only_names_reads_commas_and_repeats_alike(values, names) -> None:
    assert only_names(values) == names


def test_commas_and_repeats_run_the_same_examples(cli) -> None:
    exp = str(REPO / "experiments")
    commas = cli("demo", "--experiments", exp, "--only", "contracts,tickets", "--no-mlflow")
    repeats = cli("demo", "--experiments", exp, "--only", "contracts", "--only", "tickets", "--no-mlflow")
    assert commas.code == 0 and repeats.code == 0, commas.err + repeats.err
    assert commas.out == repeats.out
    one = cli("demo", "--experiments", exp, "--only", "contracts", "--no-mlflow")
    assert one.code == 0 and one.out in commas.out and len(commas.out) > len(one.out)


def test_an_unknown_example_is_named_with_the_valid_ones(cli) -> None:
    r = cli("demo", "--experiments", str(REPO / "experiments"), "--only", "contracts,nosuch", "--no-mlflow")
    assert r.code == 2
    assert "nosuch" in r.err and "contracts, customers" in r.err and "Traceback" not in r.err
