"""The registry's one rule for a task part this installation lacks: the task is left out of every
capability the same way (commands, adapters, rankings, scorers, the listing), and any other import
error inside a present task is raised, never hidden."""

from __future__ import annotations

import sys

import pytest

import extracteval.tasks as registry
from extracteval.errors import InputError
from extracteval.tasks import TASKS, TaskSpec, parts, present


@pytest.fixture()
def ghost_task(monkeypatch: pytest.MonkeyPatch) -> None:
    """An extra registered task, `ghost`, whose package this installation does not have."""
    monkeypatch.setitem(TASKS, "ghost", TaskSpec("ghost", "extraction-ghost"))


@pytest.fixture()
def broken_task(monkeypatch: pytest.MonkeyPatch, tmp_path):  # noqa: ANN201
    """An extra registered task, `broken`, whose adapter imports a module that does not exist."""
    pkg = tmp_path / "broken"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "adapter.py").write_text("import extracteval_no_such_module_anywhere  # noqa: F401\n")
    monkeypatch.setattr(registry, "__path__", [*registry.__path__, str(tmp_path)])
    monkeypatch.setitem(TASKS, "broken", TaskSpec("broken", "extraction-broken"))
    yield
    for name in [m for m in sys.modules if m.startswith("extracteval.tasks.broken")]:
        del sys.modules[name]


def test_a_task_without_a_package_is_left_out_of_every_capability(ghost_task: None) -> None:
    from extracteval.tasks import _RegisteredRankings
    from extracteval.mlflow.genai import scorer_tasks
    from extracteval.mlflow.adapters import available_tasks, get_adapter

    assert present("ghost", "adapter") is None and present("ghost", "command") is None
    for part in ("adapter", "command", "contract", "scorer"):
        assert "ghost" not in parts(part)
        assert set(parts(part)) >= {"fields", "spans"}
    assert "ghost" not in available_tasks() and "ghost" not in [t["task"] for t in registry.listing()]
    assert "ghost" not in _RegisteredRankings() and "ghost" not in scorer_tasks()
    with pytest.raises(InputError, match=r"task 'ghost' \(model_type 'extraction-ghost'\) is not available in this version"):
        get_adapter("ghost")


def test_the_command_line_is_built_without_the_absent_task(ghost_task: None, capsys: pytest.CaptureFixture[str]) -> None:
    from extracteval.cli import build_parser

    with pytest.raises(SystemExit):
        build_parser().parse_args(["score", "--help"])
    out = capsys.readouterr().out
    assert "fields" in out and "ghost" not in out


def test_an_import_error_inside_a_present_task_is_raised(broken_task: None) -> None:
    with pytest.raises(ModuleNotFoundError, match="extracteval_no_such_module_anywhere"):
        present("broken", "adapter")
    with pytest.raises(ModuleNotFoundError, match="extracteval_no_such_module_anywhere"):
        parts("adapter")
    assert present("broken", "command") is None  # a part the package does not have
