"""Exceptions shared by every layer.

`InputError` is the one exception a user is meant to see: the CLI prints its message and exits
with code 2, without a traceback. Its message names the file, record id, column or JSON path,
what was expected and what was found.

`OutputError` is the machine's fault, not the input's (disk full, file too large, permission
denied on the output folder): the CLI prints its message and exits with code 1, so a script can
tell "fix your data" (2) from "fix your environment and rerun" (1).

`Interrupted` is Ctrl-C or SIGTERM answered by the code it interrupted with what the user needs
(what was kept, the command that goes on): the CLI prints its message and exits with code 130,
as for any interrupt.
"""

from __future__ import annotations


class InputError(ValueError):
    """Bad input from the user: a file, a column, an option value."""


class OutputError(Exception):
    """The results could not be written (no space left, file too large, permission denied)."""


class Interrupted(Exception):
    """Ctrl-C or SIGTERM, with a message saying what was kept and how to go on."""
