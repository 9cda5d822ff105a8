"""`extracteval evaluate <task> …`: score like `score <task>`, then log everything to MLflow.

The results are written in full to `--output` (or a temporary folder) before anything is sent;
if the upload fails the run is marked FAILED, the folder is kept, and
`extracteval evaluate --resume-from DIR` logs it later without scoring again.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from extracteval.core import strict_json
from extracteval.io.common_options import add_slice_arguments, experiment_name, add_tracking_uri_argument

if TYPE_CHECKING:  # pragma: no cover

    from extracteval.mlflow.bundle import Bundle
    from extracteval.mlflow.upload import UploadResult

DESCRIPTION = """\
Score models exactly as `extracteval score <task>` does and log the evaluation to MLflow: one run
for one model, or a parent comparison run with one nested child run per model. Logged: metrics
(overall/, micro/, field/<name>/…, wins/field_wins, CI bounds), params (the configuration), tags
(task, version, truth and config digests), the ground truth as a dataset input, and artifacts
(extracteval/result.json, per-field CSV and table, per-record Parquet, figures, report.html).
With --slice-by / --cluster-by also the slices: extracteval/slices.parquet, slices.json and the
heat map slices.png, slice/<slicing>/<value>/<primary metric> on each model's run (at most 50),
extracteval/record_metadata.parquet, and a Slices section in the report.

The tracking store defaults to $MLFLOW_TRACKING_URI, else ./mlflow.db (MLflow's embedded SQLite
store in the working directory); look at it with `mlflow ui --backend-store-uri sqlite:///mlflow.db`.

examples:
  extracteval evaluate fields --truth truth.csv --predictions gpt=gpt.csv \\
      --predictions llama=llama.csv --experiment contracts
  extracteval evaluate --resume-from ./out/contracts-eval     # after a failed upload
"""

_MLFLOW_OPTIONS_HELP = "MLflow options"


def configure(p: argparse.ArgumentParser) -> None:
    from extracteval.commands.runner import CommandParser
    from extracteval.tasks import parts

    p.add_argument("--resume-from", metavar="DIR", help="log the results kept in DIR by a failed `evaluate` (no rescoring)")
    p.add_argument("--tracking-uri", dest="resume_tracking_uri", metavar="URI",
                   help="with --resume-from: tracking store to log to (default: MLflow's default store; a folder whose first attempt "
                        "named another store asks you to give it here)")
    sub = p.add_subparsers(dest="task", metavar="TASK", parser_class=CommandParser)
    for task, mod in parts("command").items():
        tp = sub.add_parser(task, help=mod.HELP, description=mod.DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
        mod.configure(tp)
        for action in tp._actions:  # same option, evaluate's meaning
            if action.dest == "output":
                action.help = "keep the complete local copy of the results here (default: a temporary folder, removed after a successful upload)"
        g = tp.add_argument_group(_MLFLOW_OPTIONS_HELP)
        g.add_argument("--experiment", type=experiment_name, required=True, metavar="NAME", help="MLflow experiment (created when missing)")
        g.add_argument("--run-name", metavar="NAME", help="name of the run (the parent run when several models are compared)")
        add_tracking_uri_argument(g)
        g.add_argument("--no-figures", action="store_true", help="skip the matplotlib figures")
        add_slice_arguments(tp)
        tp.set_defaults(_run=run, _evaluate_task=task)


def run(args: argparse.Namespace) -> int:
    from extracteval.errors import InputError

    if getattr(args, "resume_from", None):
        if getattr(args, "task", None):
            raise InputError("--resume-from DIR logs a finished evaluation; give it without a task and its inputs.")
        return _resume(args)
    if not getattr(args, "task", None):
        raise InputError("evaluate needs a task (e.g. `extracteval evaluate fields --truth … --predictions … --experiment NAME`) or --resume-from DIR.")
    return 0 if evaluate_and_log(args) is not None else 1


def evaluate_and_log(args: argparse.Namespace) -> "UploadResult | None":
    """Score the task's inputs in `args` (parsed `evaluate <task> …` options), print the summary
    and log the runs; what was logged (experiment id, run ids), or None when the upload failed
    (the message printed, the local copy kept)."""
    import shutil
    import tempfile
    from pathlib import Path

    from extracteval.mlflow.bundle import write_bundle
    from extracteval.mlflow.early import EarlyWork
    from extracteval.mlflow.adapters import get_adapter
    from extracteval.mlflow.slicing import slicing_for
    from extracteval.mlflow.upload import UploadError, store_uri, upload_bundle

    engine = _scale_engine(args)
    adapter = get_adapter(args._evaluate_task)
    slicing = slicing_for(args)
    # a task's `configure` may not offer --output/--json; the MLflow layer does not depend on them
    output, as_json = getattr(args, "output", None), bool(getattr(args, "json", False))
    uri = store_uri(args.tracking_uri)
    streamed = None
    # in memory: the adapter may start the local copy's big files while it still scores
    early = EarlyWork(Path(output).absolute().parent if output else None, warm=[_logging_imports(uri, figures=not args.no_figures)]) \
        if engine is None and getattr(adapter, "starts_early", False) else None
    try:
        if engine is None:
            scored = _score_in_memory(adapter, args, early, slicing)
        else:
            from extracteval.mlflow.stream import score_streamed

            chunk_size = getattr(args, "chunk_size", None)
            scored = score_streamed(adapter, args, engine=engine, chunk_size=100_000 if chunk_size is None else chunk_size,
                                    workers=getattr(args, "workers", 1), workdir_parent=Path(output).resolve().parent if output else None)
            streamed = scored.cache["stream_workdir"]
            if slicing is not None:  # from the per-record rows the stream wrote
                from extracteval.mlflow.slicing import attach_slices

                attach_slices(scored, slicing)
        temporary = not output
        with _no_cyclic_gc():
            try:
                out = Path(output) if output else Path(tempfile.mkdtemp(prefix="extracteval-"))
                bundle = write_bundle(scored, adapter, out, experiment=args.experiment, run_name=args.run_name, tracking_uri=uri,
                                      figures=not args.no_figures, safe_csv=getattr(args, "safe_csv", True))
            finally:
                # their files are linked (or copied) into the bundle by now
                if streamed is not None:
                    shutil.rmtree(streamed, ignore_errors=True)
                if early is not None:
                    early.close()
            if not as_json:
                print(adapter.summary(scored))
                print()
                if slicing is not None:
                    from extracteval.report.slices import render_slices

                    print(render_slices(scored.doc["slices"]) + "\n")
            try:
                result = upload_bundle(bundle, tracking_uri=uri, experiment=args.experiment)
            except UploadError as e:
                print(f"extracteval: error: {e}", file=sys.stderr)
                return None
    finally:  # an error while scoring: the background jobs end and their folder goes
        if early is not None:
            early.close()
    if as_json:
        from extracteval.mlflow.significance import logged_doc

        doc = dict(logged_doc(scored))
        doc["mlflow"] = {**result.to_dict(), "experiment": args.experiment, "output": None if temporary else str(out)}
        sys.stdout.write(strict_json.dumps(doc, indent=2, ensure_ascii=False, default=str))
        sys.stdout.write("\n")
    else:
        _print_runs(bundle, result, args.experiment)
        if not temporary:
            print(f"local copy: {out}")
    if temporary:
        shutil.rmtree(out, ignore_errors=True)
    return result


def _score_in_memory(adapter: Any, args: argparse.Namespace, early: Any, slicing: tuple[Any, Any] | None) -> Any:
    """The in-memory scoring of `evaluate <task>` (`early`: the adapter starts its big files while
    it scores), sliced when --slice-by / --cluster-by ask: the metadata columns are not scored."""
    from extracteval.mlflow.slicing import attach_slices

    scored = adapter.score_args(args) if early is None else adapter.score_args(args, early=early)
    if slicing is not None:
        attach_slices(scored, slicing)
    return scored


def _logging_imports(uri: str, *, figures: bool) -> Callable[[], None]:
    """The first import of what writing the local copy and logging it need (MLflow's dataset
    types, client, artifact repositories and, for a database URI, its SQLAlchemy store;
    matplotlib): ≈ 3 s that `evaluate` pays beyond `score`, done while the bootstrap runs."""

    def imports() -> None:
        import mlflow.data.dataset_source_registry  # noqa: F401
        import mlflow.store.artifact.artifact_repository_registry  # noqa: F401
        import mlflow.tracking  # noqa: F401
        import mlflow.types  # noqa: F401
        from mlflow.store.db.db_types import DATABASE_ENGINES

        if uri.split(":", 1)[0].split("+", 1)[0] in DATABASE_ENGINES:
            import mlflow.store.tracking.sqlalchemy_store  # noqa: F401
        if figures:
            import matplotlib

            matplotlib.use("Agg", force=True)
            import matplotlib.figure  # noqa: F401

    return imports


@contextlib.contextmanager
def _no_cyclic_gc() -> Iterator[None]:
    """Python's cyclic garbage collector off while the results are written and logged. With the
    inputs and counts of a large evaluation in memory (100k × 200: tens of millions of objects),
    each full collection that the many small objects of logging trigger walks all of them
    (≈ 0.25 s each, two or three times); what logging itself leaves in cycles is little and is
    collected once the collector is back on."""
    import gc

    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _scale_engine(args: argparse.Namespace) -> str | None:
    """None for the in-memory evaluation; "chunked" or "spark" when the scale options ask for a
    streaming engine, which feeds the same bundle (same metrics, params, tags, artifacts)."""
    from extracteval.io.scale_options import scale_engine

    engine = scale_engine(args)
    return None if engine == "memory" else engine


def _resume(args: argparse.Namespace) -> int:
    from extracteval.mlflow.bundle import load_bundle
    from extracteval.mlflow.upload import UploadError, store_uri, upload_bundle

    bundle = load_bundle(args.resume_from)
    state = bundle.read_state()
    if state.get("status") == "UPLOADED" and not args.resume_tracking_uri:
        print(f"{bundle.path}: already logged to {state.get('tracking_uri')} (runs {', '.join(state['runs'].values())}); nothing to do.")
        return 0
    uri = store_uri(args.resume_tracking_uri or _resume_store(bundle))
    try:
        result = upload_bundle(bundle, tracking_uri=uri)
    except UploadError as e:
        print(f"extracteval: error: {e}", file=sys.stderr)
        return 1
    _print_runs(bundle, result, bundle.manifest.get("experiment") or "extracteval")
    return 0


def _resume_store(bundle: "Bundle") -> str:
    """The store a resumed upload logs to without `--tracking-uri`: the default one. A results
    folder names the store of its first attempt, but it may come from anyone: where that differs
    from the default, the user confirms it by giving it."""
    from extracteval.errors import InputError
    from extracteval.mlflow.upload import default_tracking_uri

    default = default_tracking_uri()
    named = bundle.manifest.get("tracking_uri")
    if isinstance(named, str) and named and named != default:
        shown = named if named.isprintable() else repr(named)  # no control character reaches the terminal
        raise InputError(f"{bundle.path}: this evaluation was to be logged to {shown}, not to the default store ({default}). "
                         f"A results folder may come from anyone, so extracteval logs only where you say: to log it there, run "
                         f"`extracteval evaluate --resume-from {bundle.path} --tracking-uri {shown}` (or give another store).")
    return default


def _print_runs(bundle: "Bundle", result: "UploadResult", experiment: str) -> None:
    from extracteval.mlflow.upload import ui_hint

    runs = {p.key: p for p in bundle.runs}
    print(f"logged to MLflow experiment {experiment!r} (id {result.experiment_id}) at {result.tracking_uri}")
    for key, rid in result.run_ids.items():
        p = runs[key]
        label = "comparison (parent)" if p.role == "comparison" else f"model {p.model}"
        print(f"  run {rid}  {label}")
    print(f"view: {ui_hint(result.tracking_uri)}")
