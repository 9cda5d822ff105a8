"""`extracteval score <task>`: every task scored the same way.

The engine is chosen once from the scale options (`io.scale_options.scale_engine`). In memory,
the task's adapter scores the options exactly as `evaluate`, the Python API and the evaluator
plugin do (`score_args`); with --chunk-size/--workers the task's chunked engine
(`tasks.<task>.engines.chunked`), with --engine spark its Spark job (`tasks.<task>.engines.spark`).
The files `--output` gets are written into a staging folder (`io.outputs.staged_folder`) — the
streaming engines stream their per-record rows there too — and moved into place only when
complete; the task's `outputs` module writes them and renders the terminal report.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


def run(args: argparse.Namespace) -> int:
    from extracteval.io.scale_options import scale_engine
    from extracteval.report.console import print_result
    from extracteval.tasks import task_module

    task = args.task
    engines, outputs = task_module(task, "engines"), task_module(task, "outputs")
    unit = getattr(engines, "chunk_unit", lambda _args: "records")(args) if getattr(args, "chunk_size", None) is not None else "records"
    engine = scale_engine(args, unit)
    if engine == "chunked" and getattr(engines, "reads_whole", lambda _args: False)(args):
        engine = "memory"  # the task reads these files whole and works through them in chunks itself
    output = getattr(args, "output", None)
    if engine == "spark" and output and not getattr(engines, "SPARK_OUTPUT", True):
        from extracteval.errors import InputError

        raise InputError(f"--output with --engine spark is not supported for the {task} task (no per-record rows from Spark); drop --output.")
    getattr(engines, "refuse", lambda _args, _engine: None)(args, engine)
    slicing = _slicing(args, engine)
    safe_csv = getattr(args, "safe_csv", True)
    written: tuple[str, ...] = ()
    if engine == "memory":  # the output folder is made once the scores are there
        from extracteval.mlflow.adapters import get_adapter

        scored = get_adapter(task).score_args(args)
        if slicing is not None:
            _add_slices(scored, slicing)
        with _staged(output) as staging:
            if staging is not None:
                written = outputs.write(scored.result, scored.doc, staging, scored=scored, safe_csv=safe_csv)
        doc = scored.doc
    elif slicing is not None:  # streamed like `evaluate`: each model's per-record rows go to a work folder the slices read
        doc = _streamed_slices(task, args, engine, slicing)
    else:  # the streaming engines write their per-record rows into the staging folder as they score
        with _staged(output) as staging:
            result, doc = _scaled(engines, args, engine, staging)
            if staging is not None:
                written = outputs.write(result, doc, staging, safe_csv=safe_csv)
    render = getattr(outputs, "renderer", lambda _args: outputs.render)(args)  # a task may render in a style its options choose
    if slicing is not None:
        render = _with_slices(render)
    print_result(doc, as_json=args.json, render=render, output=output, written=written)
    return 0


def _slicing(args: argparse.Namespace, engine: str) -> tuple[Any, Any] | None:
    """(SliceOptions, metadata rows) of --slice-by / --cluster-by, read before scoring so that a
    wrong column fails fast; None without them."""
    from extracteval.mlflow.slicing import slice_options, slicing_for

    if engine != "memory" and getattr(args, "output", None) and slice_options(args) is not None:
        from extracteval.errors import InputError

        raise InputError("--slice-by / --cluster-by with --chunk-size, --workers or --engine spark print the result (or --json) but do "
                         "not write --output; drop --output, or slice in memory (or log the run with `extracteval evaluate`).")
    return slicing_for(args)


def _streamed_slices(task: str, args: argparse.Namespace, engine: str, slicing: tuple[Any, Any]) -> dict[str, Any]:
    """The result document of a chunked or Spark run with its slices: scored as `evaluate` streams
    it, each model's per-record rows written to a work folder, read back for the slices, removed."""
    import shutil

    from extracteval.mlflow.adapters import get_adapter
    from extracteval.mlflow.stream import score_streamed

    chunk_size = getattr(args, "chunk_size", None)
    scored = score_streamed(get_adapter(task), args, engine=engine, chunk_size=100_000 if chunk_size is None else chunk_size,
                            workers=getattr(args, "workers", 1) or 1)
    try:
        _add_slices(scored, slicing)
    finally:
        workdir = scored.cache.get("stream_workdir")
        if workdir is not None:
            shutil.rmtree(workdir, ignore_errors=True)
    return scored.doc


def _add_slices(scored: Any, slicing: tuple[Any, Any]) -> None:
    """The result's `slices`; with clusters, its own intervals and comparisons become clustered ones."""
    from extracteval.mlflow.slicing import attach_slices

    attach_slices(scored, slicing)


def _with_slices(render: Any) -> Any:
    from extracteval.report.slices import render_slices

    return lambda doc: render(doc) + "\n\n" + render_slices(doc["slices"])


def _scaled(engines: Any, args: argparse.Namespace, engine: str, folder: Path | None) -> tuple[Any, dict[str, Any]]:
    """The task's streaming engine (its `engines` module): (result, document); per-record rows streamed into `folder`."""
    if engine == "spark":
        from extracteval.spark import session_for

        return engines.spark(args, session_for(args), folder=folder)
    chunk_size = getattr(args, "chunk_size", None)
    return engines.chunked(args, chunk_size=100_000 if chunk_size is None else chunk_size, workers=getattr(args, "workers", 1), folder=folder)


@contextmanager
def _staged(output: str | None) -> Iterator[Path | None]:
    if not output:
        yield None
        return
    from extracteval.io.outputs import staged_folder

    with staged_folder(Path(output)) as staging:
        yield staging
