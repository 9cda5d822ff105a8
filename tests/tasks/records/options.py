"""The task's options → `RecordsConfig`: one translation for the command line's parsed options and
evaluator_config keys, which are the same names."""

from __future__ import annotations

from typing import Any

from extracteval.core.counts import checked_zero_division
from extracteval.errors import InputError
from extracteval.io.config import options_of

from tests.tasks.records.semantics import RecordsConfig


def build_config(options: Any) -> RecordsConfig:
    zd = options_of(options).get("zero_division")
    if zd is None:
        return RecordsConfig()
    try:
        value = float(zd)
    except (TypeError, ValueError):
        raise InputError(f"zero_division: expected a number, but got {zd!r}.") from None
    return RecordsConfig(zero_division=checked_zero_division(value))  # a number in [0, 1]; "nan" is for the tasks that offer it
