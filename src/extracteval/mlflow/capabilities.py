"""What each task can do, read from the task registry: the capability matrix.

A capability is written once, over the task contract (the adapter protocol of
`extracteval.mlflow.adapters`); a task has it when its adapter provides every member the capability
uses. The matrix is read from the adapters themselves, never from a list kept by hand, so a task
added to `TASKS` without a member shows "no" in `extracteval tasks` and fails the registry test
(tests/contract/test_capabilities.py), which also runs each capability on every task.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Capability", "CAPABILITIES", "capability_matrix", "provides", "render_matrix"]


@dataclass(frozen=True)
class Capability:
    """One row of the matrix: its label, the adapter members it uses, and (optionally) a check
    beyond the adapter (a scorer's row spec, say)."""

    label: str
    members: tuple[str, ...]
    also: Callable[[str], bool] | None = None


def _module_has(part: str, *names: str) -> Callable[[str], bool]:
    """The task's module `part` is there and defines `names` (the `score` command's outputs and
    streaming engines are modules of the task, beside its adapter)."""

    def check(task: str) -> bool:
        from extracteval.tasks import present

        mod = present(task, part)
        return mod is not None and all(callable(getattr(mod, n, None)) for n in names)

    return check


def _genai_scorer(task: str) -> bool:
    from extracteval.mlflow.genai import scorer_tasks

    return task in scorer_tasks()


CAPABILITIES: tuple[Capability, ...] = (
    Capability("`score` in memory", ("score_args", "score_experiment", "summary"), also=_module_has("outputs", "write", "render")),
    Capability("`score --chunk-size/--workers`", ("chunk_job",), also=_module_has("engines", "chunked")),
    Capability("`--engine spark`", ("spark_job",), also=_module_has("engines", "spark")),
    # every task streams its evaluation through the one path of mlflow/stream.py
    Capability("`evaluate` streamed / Spark", ("chunk_job", "spark_job", "chunk_outputs", "scored_from_chunks")),
    Capability("`leaderboard` intervals", ("interval_metrics", "record_counts", "count_metric")),
    Capability("`compare` paired interval", ("interval_metrics", "record_counts", "count_metric")),
    Capability("`rescore`", ("write_predictions", "read_predictions", "rescore_options")),
    Capability("`mlflow.models.evaluate`", ("build_config", "score_frame", "metrics", "records_frame")),
    Capability("`mlflow.genai` scorer", ("score_frame",), also=_genai_scorer),
    Capability("Python API (`extracteval.score`)", ("score_inputs", "item_table", "records_frame")),
)


def capability_matrix() -> dict[str, dict[str, bool]]:
    """capability label → task → whether the task's adapter provides it (tasks in registry order)."""
    from extracteval.mlflow.adapters import available_tasks, get_adapter

    adapters = {t: get_adapter(t) for t in available_tasks()}
    return {cap.label: {t: provides(a, cap) and (cap.also is None or cap.also(t)) for t, a in adapters.items()} for cap in CAPABILITIES}


# members that are data, not methods
_ATTRIBUTES = frozenset({"interval_metrics", "record_is_value"})


def provides(adapter: object, cap: Capability) -> bool:
    """Whether the adapter has every member the capability uses (a method, or a data member)."""
    return all(hasattr(adapter, m) and (m in _ATTRIBUTES or callable(getattr(adapter, m))) for m in cap.members)


def render_matrix(matrix: dict[str, dict[str, bool]] | None = None) -> str:
    """The matrix as a Markdown table (what `extracteval tasks` prints and docs/capabilities.md shows)."""
    matrix = matrix if matrix is not None else capability_matrix()
    tasks = list(next(iter(matrix.values()), {}))
    lines = ["| capability | " + " | ".join(tasks) + " |", "|---|" + "---|" * len(tasks)]
    for label, row in matrix.items():
        lines.append(f"| {label} | " + " | ".join("yes" if row[t] else "**no**" for t in tasks) + " |")
    filled = sum(v for row in matrix.values() for v in row.values())
    total = sum(len(row) for row in matrix.values())
    lines.append("")
    lines.append(f"{filled} of {total} cells filled.")
    return "\n".join(lines)
