"""How the `extracteval` command runs its sub-commands: the table of sub-commands, the parser
(usage errors exit 2), and `run_command`, which turns user errors, output errors and Ctrl-C or
SIGTERM into a message and an exit code. The `extracteval` entry point (`cli.console`) and the
sub-commands that run another one (the demo's leaderboards) use it alike.

Each sub-command module (`extracteval.commands.*`) exposes `configure(parser)` and `run(args) ->
int` and imports its heavy dependencies inside `run`, so `--help` stays fast.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from importlib import import_module
from collections.abc import Callable, Sequence
from typing import Any

from extracteval import __version__
from extracteval.io.common_options import add_slice_arguments
from extracteval.tasks import parts

__all__ = ["COMMANDS", "WHOLE_FOLDER_OUTPUTS", "CommandParser", "build_parser", "main", "run_command"]

COMMANDS = {
    "demo": ("demo", "run every example in experiments/ and print the leaderboards"),
    "compare-models": ("compare_models", "baseline vs candidate: metric gap, fine-tuning verdict, bootstrap interval"),
    "evaluate": ("evaluate", "score models and log the evaluation to MLflow (one run per model)"),
    "leaderboard": ("leaderboard", "rank every model run of an MLflow experiment (tie-breaks, field winners, fairness, intervals)"),
    "compare": ("compare", "baseline run vs candidate run from the tracking store: gap, verdict, paired interval"),
    "rescore": ("rescore", "re-score a logged run's predictions against edited ground truth (new linked run)"),
    "tasks": ("tasks", "list the tasks and the capability matrix"),
}


class CommandParser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # usage errors: exit 2, no traceback, like InputError
        self.print_usage(sys.stderr)
        self.exit(2, f"extracteval: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = CommandParser(
        prog="extracteval",
        description="Score structured-extraction models against ground truth and compare them.",
    )
    parser.add_argument("--version", action="version", version=f"extracteval {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=CommandParser)
    score = sub.add_parser("score", help="score models against ground truth (no MLflow)")
    score_sub = score.add_subparsers(dest="task", metavar="TASK", parser_class=CommandParser)
    for task, mod in parts("command").items():
        p = score_sub.add_parser(task, help=mod.HELP, description=mod.DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
        mod.configure(p)
        _add_overwrite(p)
        add_slice_arguments(p)
        p.set_defaults(_run=_score)
    for name, (module, help_text) in COMMANDS.items():
        mod = import_module(f"extracteval.commands.{module}")
        p = sub.add_parser(name, help=help_text, description=mod.DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
        mod.configure(p)
        if name not in WHOLE_FOLDER_OUTPUTS:
            _add_overwrite(p)
        p.set_defaults(_run=mod.run)
    return parser


def _score(args: argparse.Namespace) -> int:
    """`score <task>`: one runner for every task (`commands/score.py`), imported when it runs."""
    from extracteval.commands.score import run

    return run(args)


# commands whose --output is a results folder replaced as a whole (an evaluation's local copy):
# it must be new, empty or written by extracteval; --overwrite would delete a user's files
WHOLE_FOLDER_OUTPUTS = ("evaluate", "rescore")


def _add_overwrite(p: argparse.ArgumentParser) -> None:
    """--overwrite beside --output: without it, an existing folder that extracteval did not
    write (no `.extracteval-output` marker) is refused."""
    if any(a.dest == "output" for a in p._actions):
        p.add_argument("--overwrite", action="store_true",
                       help="with --output: also write into an existing folder that extracteval did not write (files of the same "
                            "names are replaced, other files are kept); without it such a folder is refused")


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point. Returns the exit code: 0 ok, 2 bad input, 1 environment or internal error,
    130 interrupted."""
    parser = build_parser()
    args = parser.parse_args(argv)
    run = getattr(args, "_run", None)
    if run is None:
        parser.print_help(sys.stderr)
        return 2
    return run_command(run, args)


def run_command(run: Callable[[argparse.Namespace], int | None], args: argparse.Namespace) -> int:
    """Run a sub-command's `run(args)` (or a function standing in for it) the way `main` does:
    its exit code, with user errors (2), output errors (1) and Ctrl-C (130) turned into a message
    and a code instead of a traceback."""
    from extracteval.errors import InputError, Interrupted, OutputError

    token = None
    previous_term = _terminate_as_interrupt()
    previous_hook = sys.unraisablehook
    if previous_term is not None:
        sys.unraisablehook = _interrupt_again(previous_hook)
    try:
        output = getattr(args, "output", None)
        if output:  # refused before any work, a link named with the folder it points to
            from extracteval.io.outputs import OVERWRITE, check_output_folder

            overwrite = bool(getattr(args, "overwrite", False))
            check_output_folder(output, overwrite=overwrite, whole=not hasattr(args, "overwrite"))
            token = OVERWRITE.set(overwrite)
        from extracteval.core.collector import bulk_work
        from extracteval.report.terminal import SafeStream

        stdout = sys.stdout
        sys.stdout = SafeStream(stdout)  # type: ignore[assignment]  # what it prints holds names and values from the inputs
        try:
            with bulk_work():
                return int(run(args) or 0)
        finally:
            sys.stdout = stdout
    except InputError as e:
        print(f"extracteval: error: {_safe(str(e))}", file=sys.stderr)
        return 2
    except OutputError as e:
        print(f"extracteval: error: {_safe(str(e))}", file=sys.stderr)
        return 1
    except (KeyboardInterrupt, Interrupted) as e:
        if isinstance(e, Interrupted):
            print(f"extracteval: error: {_safe(str(e))}", file=sys.stderr)
        print("extracteval: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    finally:
        if token is not None:
            from extracteval.io.outputs import OVERWRITE

            OVERWRITE.reset(token)
        if previous_term is not None:
            signal.signal(signal.SIGTERM, previous_term)
            sys.unraisablehook = previous_hook


def _interrupted(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def _interrupt_again(hook: Callable[[Any], None]) -> Callable[[Any], None]:
    """An interrupt that lands in a clean-up Python cannot raise from (a weak reference's
    callback, a `__del__`) would be printed there as an ignored exception, with a traceback, and
    lost: it is delivered again instead, to land in the command's own code a moment later."""

    def handle(unraisable: Any) -> None:
        if isinstance(unraisable.exc_value, KeyboardInterrupt):
            # sent again from another thread a moment later: a signal raised here would be handled
            # here, inside this hook, and be printed as an exception the hook itself ignored
            timer = threading.Timer(0.01, os.kill, (os.getpid(), signal.SIGTERM))  # our handler: KeyboardInterrupt
            timer.daemon = True
            timer.start()
            return
        hook(unraisable)

    return handle


def _terminate_as_interrupt() -> Any:
    """SIGTERM (a scheduler stopping the job, `kill`) ends a command as Ctrl-C does: what it was
    writing is cleaned up, the store is left usable, the exit status is 130. Returns the handler
    it replaced (None off the main thread, where signals cannot be caught)."""
    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.signal(signal.SIGTERM, _interrupted)


def _safe(message: str) -> str:
    from extracteval.report.terminal import terminal_safe

    return terminal_safe(message, colours=False)
