"""Exceptions shared by every layer.

`InputError` is the one exception a user is meant to see: the CLI prints its message and exits
with code 2, without a traceback. Its message names the file, record id, column or JSON path,
what was expected and what was found.
"""

from __future__ import annotations


class InputError(ValueError):
    """Bad input from the user: a file, a column, an option value."""


class SmallSampleWarning(UserWarning):
    """A metric rests on fewer records than the configured minimum (default 30)."""
