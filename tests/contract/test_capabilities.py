"""The capability matrix is read from the task registry: every task has every capability, and a
task whose adapter lacks a member shows "no" (so a new task without it fails here)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from extracteval.mlflow.capabilities import CAPABILITIES, Capability, capability_matrix, provides, render_matrix
from extracteval.mlflow.adapters import TASKS, get_adapter

REPO = Path(__file__).resolve().parents[2]


def test_a_missing_member_is_a_missing_capability() -> None:
    class Partial:
        interval_metrics = ("x",)

        def record_counts(self, path, params):  # noqa: ANN001, ANN201
            return None

    cap = Capability("intervals", ("interval_metrics", "record_counts", "count_metric"))
    assert not provides(Partial(), cap)
    Partial.count_metric = lambda self, metric, columns, params: None  # type: ignore[attr-defined]
    assert provides(Partial(), cap)
    assert not provides(Partial(), Capability("data as method", ("interval_metrics_missing",)))


@pytest.mark.parametrize("task", list(TASKS))
@pytest.mark.parametrize("cap", CAPABILITIES, ids=lambda c: c.label)
def test_every_task_has_every_capability(task: str, cap: Capability) -> None:
    adapter = get_adapter(task)
    missing = [m for m in cap.members if not hasattr(adapter, m)]
    assert provides(adapter, cap) and (cap.also is None or cap.also(task)), f"{task} lacks {cap.label}: missing {missing}"


def test_the_docs_show_the_matrix_the_command_prints(cli_run, product_tasks_only) -> None:
    code, out = cli_run("tasks")
    assert code == 0
    table = out[out.index("| capability |"):].strip()
    assert table == render_matrix().strip()
    page = (REPO / "docs" / "capabilities.md").read_text(encoding="utf-8")
    assert render_matrix().strip() in page, "docs/capabilities.md: paste the output of `extracteval tasks` (the matrix) into it"
    code, out = cli_run("tasks", "--json")
    assert json.loads(out)["capabilities"] == capability_matrix()
    assert re.search(r"(\d+) of \1 cells filled", table), table.splitlines()[-1]


@pytest.fixture
def cli_run(capsys: pytest.CaptureFixture[str]):
    from extracteval.cli import main

    def run(*argv: str) -> tuple[int, str]:
        code = main(list(argv))
        return code, capsys.readouterr().out

    return run


def _protocol_members() -> set[str]:
    from extracteval.mlflow.adapters import TaskAdapter

    return {n for n in vars(TaskAdapter) if not n.startswith("_")} | set(TaskAdapter.__annotations__)


@pytest.mark.parametrize("task", list(TASKS))
def test_every_adapter_has_what_the_adapter_protocol_declares(task: str) -> None:
    members = _protocol_members()
    assert {"score_frame", "chunk_job", "ranking_table", "interval_metrics"} <= members  # the protocol was read
    adapter = get_adapter(task)
    assert sorted(m for m in members if not hasattr(adapter, m)) == [], f"{task}'s adapter lacks members of TaskAdapter"


def test_the_adapter_protocol_declares_what_every_adapter_provides() -> None:
    """A public member every adapter has is part of the contract: the protocol documents it."""
    shared = set.intersection(*({n for n in dir(get_adapter(t)) if not n.startswith("_")} for t in TASKS))
    assert sorted(shared - _protocol_members()) == []


def test_every_task_brings_its_cases() -> None:
    """Each registered task's test folder gives the tests over the registry its example cases
    (tests/tasks/<task>/cases.py), so every engine and door runs on it."""
    from tests.contract.cases import task_cases

    assert sorted(set(TASKS) - set(task_cases())) == [], "add tests/tasks/<task>/cases.py with a CASE (tests/contract/cases.py says what it holds)"


def test_the_test_suites_own_task_is_registered() -> None:
    """The minimal task kept in the test tree (tests/tasks/records/) is in the registry while the
    tests run, from one line of tests/conftest.py, so every test over the registry runs on it."""
    from extracteval.tasks import parts

    assert TASKS["records"].module("adapter") == "tests.tasks.records.adapter"
    assert all("records" in parts(part) for part in ("adapter", "command", "contract", "engines", "outputs", "scorer", "options"))
