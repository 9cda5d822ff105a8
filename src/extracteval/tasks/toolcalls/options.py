"""The `toolcalls` task's options → `ToolCallConfig`: one translation for the command line's parsed options
and evaluator_config keys, which are the same names."""

from __future__ import annotations

from typing import Any

__all__ = ["build_config"]


def build_config(options: Any) -> Any:
    """The ToolCallConfig of the task's options — evaluator_config keys, or the command line's
    parsed options under the same names (`io.config.options_of`): the one translation for every
    door (`possible_answer`, how the references are read, is checked here and read by the readers)."""
    import numpy as np

    from extracteval.errors import InputError
    from extracteval.io.config import given_options, options_of, task_config
    from extracteval.tasks.toolcalls.semantics import ToolCallConfig

    config = options_of(options)
    pa = config.get("possible_answer", False)
    if not isinstance(pa, (bool, np.bool_)):
        raise InputError(f"evaluator_config `possible_answer`: expected true or false, but got {pa!r}.")
    return task_config(ToolCallConfig, given_options(config, ("value_match", "zero_division", "pass_threshold"), numbers=("zero_division", "pass_threshold")))
