"""The `extracteval` command: glue only.

Sub-commands live in `extracteval.commands.*`; `commands.runner` builds the parser and runs them
(`main`, `run_command`); here is the console entry point and its exit.
"""

from __future__ import annotations

import signal
import sys
import threading
from typing import NoReturn

from extracteval.commands.runner import COMMANDS, WHOLE_FOLDER_OUTPUTS, CommandParser, build_parser, main, run_command

__all__ = ["COMMANDS", "WHOLE_FOLDER_OUTPUTS", "CommandParser", "build_parser", "main", "run_command", "console", "leave"]


def console() -> NoReturn:
    """The `extracteval` command (and `python -m extracteval`): `main`, then `leave` with its code.
    Once the command's work is done, a late Ctrl-C or SIGTERM (while the interpreter shuts down)
    no longer turns a finished run into a killed one."""
    try:
        code = main()
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
    except KeyboardInterrupt:  # between the command's end and the line above
        code = 130
    leave(code)


def leave(code: int) -> NoReturn:
    """End a `python -m` run with `code` (its `sys.exit`), certain also after Ctrl-C.

    CPython ends a `-m` run by SIGINT itself, whatever code it exits with, once a KeyboardInterrupt
    has passed through code run from a string (`exec`/`eval`, which is how `collections.namedtuple`
    and `dataclasses` build their methods), even when the interrupt was handled. Such a run would
    report "killed by SIGINT" instead of 130, depending on where the interrupt landed. So an
    interrupted run runs its exit handlers, flushes both streams and ends with `os._exit(130)`."""
    if code == 130:
        import atexit
        import os

        run_exit_handlers = getattr(atexit, "_run_exitfuncs", None)
        if run_exit_handlers is not None:
            run_exit_handlers()
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):  # a closed pipe or stream: nothing more can be said there
                pass
        os._exit(130)
    sys.exit(code)


if __name__ == "__main__":  # pragma: no cover
    console()
