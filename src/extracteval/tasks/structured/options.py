"""The `structured` task's options → `StructuredConfig`: one translation for the command line's parsed options
and evaluator_config keys, which are the same names."""

from __future__ import annotations

from typing import Any

__all__ = ["build_config"]


def build_config(options: Any) -> Any:
    """The StructuredConfig of the task's options — evaluator_config keys, or the command line's
    parsed options under the same names (`io.config.options_of`): the one translation for every door."""
    from extracteval.io.config import given_options, options_of, task_config
    from extracteval.tasks.structured.semantics import StructuredConfig

    config = options_of(options)
    return task_config(StructuredConfig, given_options(config, ("list_matching", "value_match", "zero_division", "pass_threshold"),
                                                       numbers=("zero_division", "pass_threshold")))
