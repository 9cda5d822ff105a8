"""`extracteval demo`: run every example under experiments/ and print its leaderboard."""

from __future__ import annotations

import argparse
import sys
from extracteval.core import strict_json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from extracteval.commands.leaderboard import LeaderboardCall

DESCRIPTION = """\
Run every example in an experiments folder (each a sub-folder with an experiment.yaml naming
its task, truth, predictions and config), score all models, print each leaderboard and log
each example to MLflow: one parent run per example (the comparison) with one child run per
model, in the experiment `extracteval-demo-<example>`, then build each experiment's
cross-run leaderboard with `extracteval leaderboard` (a leaderboard run in the same experiment;
run again, the demo's new runs are ranked and the earlier ones listed as superseded, their
metrics unchanged).
The store defaults to $MLFLOW_TRACKING_URI, else ./mlflow.db (no server needed); `--no-mlflow`
only prints. At the end: the HTML reports and PNG figures logged, and what to look at in the UI.
"""

def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--experiments", default="experiments", metavar="DIR", help="folder of examples (default: ./experiments)")
    p.add_argument("--only", metavar="NAME", action="append",
                   help="run only these examples: a name, or names separated by commas (repeatable: "
                        "`--only contracts,tickets` = `--only contracts --only tickets`)")
    p.add_argument("--output", metavar="DIR", help="write each example's result.json under DIR/<name>/")
    p.add_argument("--tracking-uri", metavar="URI", help="MLflow tracking store (default: $MLFLOW_TRACKING_URI, else sqlite:///mlflow.db here)")
    p.add_argument("--experiment-prefix", default="extracteval-demo", metavar="NAME", help="experiment name prefix (default: extracteval-demo)")
    p.add_argument("--no-mlflow", action="store_true", help="only print the leaderboards; log nothing")
    p.add_argument("--no-leaderboard", action="store_true", help="log the runs but do not build the cross-run leaderboards")


@dataclass(frozen=True, kw_only=True)
class LoggedExample:
    """One example (or one track of a multi-track example) as the demo logged it."""

    label: str  # the experiment name after the prefix: `contracts`, `slm-vs-llm-structured`
    experiment: str
    run_ids: Mapping[str, str] = field(default_factory=dict)  # run key ("parent", "single", "model-1", …) → run id
    leaderboard_run_id: str | None = None

    @property
    def parent_run_id(self) -> str | None:
        """The comparison run (or the only run, for a single model)."""
        return self.run_ids.get("parent") or self.run_ids.get("single")


@dataclass(frozen=True, kw_only=True)
class DemoOutcome:
    """The demo's exit code (1 when an example failed to log or a leaderboard failed) and what it logged."""

    exit_code: int
    examples: tuple[LoggedExample, ...] = ()


def run(args: argparse.Namespace) -> int:
    return run_demo(args).exit_code


def only_names(values: list[str] | None) -> list[str]:
    """The example names of `--only`, given repeated, comma-separated, or both (`mlflow run -P
    only=a,b` passes them comma-separated), in order and without repeats."""
    names: list[str] = []
    for value in values or ():
        for name in value.split(","):
            if name.strip() and name.strip() not in names:
                names.append(name.strip())
    return names


def run_demo(args: argparse.Namespace) -> DemoOutcome:
    """Everything `extracteval demo` does (see DESCRIPTION), and what it logged."""
    from extracteval.io.config import distinct_file_name, load_mapping
    from extracteval.mlflow.experiment_slices import score_experiment

    root = Path(args.experiments)
    specs = _example_specs(root, args.only)
    ran = 0
    failed = 0
    uri = None
    logged: list[tuple[str, str, dict[str, str]]] = []  # (example, experiment, run key → run id)
    labels: list[str] = []  # each logged experiment's name after the prefix
    clusters: dict[str, str] = {}  # experiment → the metadata column its example clusters records by
    tasks_logged: dict[str, list[str]] = {}  # task → the examples logged with it
    for spec_path in specs:
        spec = load_mapping(spec_path)
        task = spec.get("task")
        name = spec.get("name", spec_path.parent.name)
        # one evaluation per track: `structured+toolcalls` scores (and logs) the structured, then the toolcalls track
        adapters = _adapters(str(task), spec)
        if not adapters:
            print(f"== {name}: task {task!r} is not available in this version; skipped\n")
            continue
        scoreds = [(a, score_experiment(a, spec_path.parent, spec)) for a in adapters]  # sliced when the file asks
        _print_and_keep(args, spec, str(name), str(task), scoreds)
        for a, scored in [] if args.no_mlflow else scoreds:
            # a multi-track example: one experiment per track, so that each holds one task's runs
            label = distinct_file_name(str(name)) + (f"-{a.task}" if len(scoreds) > 1 else "")
            experiment = f"{args.experiment_prefix}-{label}"
            about = " ".join(str(spec.get("description") or "").split()) or None
            uri, run_ids = _log(a, scored, experiment, args.tracking_uri, about)
            failed += run_ids is None
            if run_ids is not None:
                if _cluster_of(spec, a.task):  # the leaderboard's intervals resample the clusters the example's runs did
                    clusters[experiment] = _cluster_of(spec, a.task)
                logged.append((str(name) if len(scoreds) == 1 else f"{name} ({a.task})", experiment, run_ids))
                labels.append(label)
                tasks_logged.setdefault(a.task, []).append(str(name))
            print()
        ran += 1
    leaderboards: dict[str, LeaderboardCall] = {}
    if logged and not args.no_leaderboard:
        leaderboards = _leaderboards([exp for _, exp, _ in logged], uri, clusters)
        failed += sum(call.exit_code != 0 for call in leaderboards.values())
    if uri is not None:
        from extracteval.mlflow.upload import ui_hint

        _list_artifacts(logged, uri)
        print(f"MLflow: every example is logged to {uri}; view: {ui_hint(uri)}")
        print(look_at(args.experiment_prefix, tasks_logged))
    print(f"demo: scored {ran} example(s) from {root}/", file=sys.stderr)
    examples = tuple(LoggedExample(label=label, experiment=exp, run_ids=run_ids,
                                   leaderboard_run_id=leaderboards[exp].leaderboard_run_id if exp in leaderboards else None)
                     for label, (_, exp, run_ids) in zip(labels, logged, strict=True))
    return DemoOutcome(exit_code=1 if failed else 0, examples=examples)


def _example_specs(root: Path, only_option: Any) -> list[Path]:
    """The examples' `experiment.yaml` files under `root`, by folder name, only those `--only`
    names; InputError when the folder, a named example or any example is missing."""
    from extracteval.errors import InputError

    if not root.is_dir():
        raise InputError(f"{root}: no experiments folder here; run from the repository root or pass --experiments DIR.")
    specs = sorted(root.glob("*/experiment.yaml"))
    only = only_names(only_option)
    if only:
        unknown = [n for n in only if n not in {s.parent.name for s in specs}]
        if unknown:
            raise InputError(f"--only {','.join(unknown)}: no such example in {root}; expected one of: "
                             + (", ".join(s.parent.name for s in specs) or "(none: no */experiment.yaml found)") + ".")
        specs = [s for s in specs if s.parent.name in set(only)]
    if not specs:
        raise InputError(f"{root}: no */experiment.yaml found.")
    return specs


def _print_and_keep(args: argparse.Namespace, spec: Mapping[str, Any], name: str, task: str, scoreds: list[tuple[Any, Any]]) -> None:
    """An example's description and terminal summary (one per track), and with --output its
    result.json under DIR/<name>/."""

    from extracteval.io.config import distinct_file_name

    if len(scoreds) == 1:
        doc, text = scoreds[0][1].doc, scoreds[0][0].summary(scoreds[0][1])
    else:
        doc = {"task": task, "tracks": {a.task: s.doc for a, s in scoreds}}
        text = "\n\n".join(f"-- {a.task} track\n{a.summary(s)}" for a, s in scoreds)
    print(f"== {name} ({task})")
    if spec.get("description"):
        print(" ".join(str(spec["description"]).split()))
    print()
    print(text)
    print()
    for _, scored in scoreds:  # where each model fails, when the example slices its records
        if scored.doc.get("slices"):
            from extracteval.report.slices import render_slices

            print(render_slices(scored.doc["slices"]))
            print()
    if args.output:
        from extracteval.io.outputs import check_output_folder, mark_folder, staged_folder

        top = check_output_folder(args.output, overwrite=getattr(args, "overwrite", False))
        with staged_folder(top / distinct_file_name(name)) as staging:
            (staging / "result.json").write_text(strict_json.dumps(doc, indent=2, ensure_ascii=False, default=str), encoding="utf-8")
        mark_folder(top)  # the examples' folder is extracteval's too: a rerun writes into it again


def _adapter(task: str):  # noqa: ANN202 - an extracteval.mlflow.adapters.TaskAdapter or None
    from extracteval.errors import InputError
    from extracteval.mlflow.adapters import get_adapter

    try:
        return get_adapter(task)
    except InputError:  # a task without MLflow support in this version: print only
        return None


def _adapters(task: str, spec: dict) -> list:  # noqa: ANN401 - TaskAdapters; [] when a task has none
    """The adapter of each task of an example: one, or one per track of `structured+toolcalls`."""
    tasks = task.split("+") if "+" in task else [task]
    tracks = spec.get("tracks") if "+" in task else None
    if isinstance(tracks, dict):
        tasks = [t for t in tasks if t in tracks]
    found = [_adapter(t) for t in tasks]
    return [] if not found or any(a is None for a in found) else found


def _log(adapter, scored, experiment: str, tracking_uri: str | None, description: str | None = None) -> tuple[str, dict[str, str] | None]:  # noqa: ANN001
    """Log one example (parent run + a child per model); on failure keep the local copy."""
    import shutil
    import tempfile

    from extracteval.mlflow.bundle import write_bundle
    from extracteval.mlflow.upload import UploadError, store_uri, upload_bundle

    uri = store_uri(tracking_uri)
    out = Path(tempfile.mkdtemp(prefix="extracteval-demo-"))
    bundle = write_bundle(scored, adapter, out, experiment=experiment, tracking_uri=uri)
    try:
        result = upload_bundle(bundle, tracking_uri=uri, experiment=experiment, experiment_description=description)
    except UploadError as e:
        print(f"extracteval: error: {e}", file=sys.stderr)
        return uri, None
    shutil.rmtree(out, ignore_errors=True)
    runs = {p.key: p for p in bundle.runs}
    print(f"logged to MLflow experiment {experiment!r}:")
    for key, rid in result.run_ids.items():
        p = runs[key]
        print(f"  run {rid}  " + ("comparison (parent)" if p.role == "comparison" else f"model {p.model}"))
    return uri, dict(result.run_ids)


LOOK_AT = """\
In the MLflow UI: each experiment {prefix}-<example> holds one parent run (the comparison) with a
child run per model (expand the parent's row with +) and the leaderboard run. Every run opens on its
Description: rank, score with its interval, weakest items, where the report is. In the runs table
choose Columns and add Main/score, Main/score_lower, Main/score_upper, Main/rank,
Main/gap_to_next and Main/significant (the same keys for every task; the parent and leaderboard
runs have Main/best and Main/margin), then sort by Main/score; with the parent collapsed, the chart
view (second icon) opens on the Main section, one bar per model. Select the model runs and Compare
for their own keys:
{keys}
A run's Artifacts hold extracteval/report.html (the full report), figures/ and
extracteval/records.parquet; the parent's extracteval/comparison_metrics.json holds every figure
of the comparison. The cross-run leaderboard wrote each ranked run's rank as leaderboard/rank (its
metric history: one value per leaderboard); running the demo again ranks the new runs and tags
the earlier ones extracteval.superseded_by, leaving their metrics as they were."""


def look_at(prefix: str, tasks: Mapping[str, list[str]]) -> str:
    """The closing hint: where to click, and each logged task's own metric keys (its primary
    metric and its per-item key, from the task's ranking declaration)."""
    from extracteval.tasks import ranking_spec

    lines = []
    for task, examples in tasks.items():
        spec = ranking_spec(task)
        item = f", per {spec.item_label[:-1] if spec.item_label.endswith('s') else spec.item_label} " \
               f"{spec.item_prefix}<name>/{spec.item_keys[0]}" if spec.item_prefix else ""
        lines.append(f"  {', '.join(examples)} ({task}): {spec.primary}{item}")
    return LOOK_AT.format(prefix=prefix, keys="\n".join(lines) or "  (nothing logged)")


def _cluster_of(spec: Mapping[str, Any], task: str) -> str | None:
    """The example's `cluster_by` (a track's own, else the file's)."""
    tracks = spec.get("tracks")
    track = tracks.get(task) if isinstance(tracks, Mapping) else None
    value = (track.get("cluster_by") if isinstance(track, Mapping) else None) or spec.get("cluster_by")
    return str(value) if value else None


def _leaderboards(experiments: list[str], uri: str | None, clusters: Mapping[str, str] | None = None) -> dict[str, LeaderboardCall]:
    """Build each experiment's cross-run leaderboard with `extracteval leaderboard`: experiment →
    its exit code and leaderboard run."""
    import os

    from extracteval.commands.runner import COMMANDS
    from extracteval.commands.leaderboard import call_leaderboard

    if "leaderboard" not in COMMANDS:
        print("(cross-run leaderboards: `extracteval leaderboard` is not in this version)\n")
        return {}
    calls: dict[str, LeaderboardCall] = {}
    saved = os.environ.get("MLFLOW_TRACKING_URI")
    try:
        if uri:
            os.environ["MLFLOW_TRACKING_URI"] = uri  # the documented CLI takes the store from the environment
        for experiment in experiments:
            print(f"== leaderboard of {experiment}")
            cluster = (clusters or {}).get(experiment)
            calls[experiment] = call_leaderboard(["--experiment", experiment, *(["--cluster-by", cluster] if cluster else [])])
            print()
    finally:
        if saved is None:
            os.environ.pop("MLFLOW_TRACKING_URI", None)
        else:
            os.environ["MLFLOW_TRACKING_URI"] = saved
    return calls


def _list_artifacts(logged: list[tuple[str, str, dict[str, str]]], uri: str) -> None:
    """List each example's HTML report and PNG figures: local paths when the store keeps files here."""
    from urllib.parse import unquote, urlparse

    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    print("Reports and figures (in each example's parent run; every model run has its own):")
    for name, _experiment, run_ids in logged:
        rid = run_ids.get("parent") or run_ids.get("single") or next(iter(run_ids.values()))
        try:
            base = client.get_run(rid).info.artifact_uri
            files = [f.path for folder in ("extracteval", "figures") for f in client.list_artifacts(rid, folder)
                     if f.path.endswith((".html", ".png"))]
        except Exception as e:  # listing is a convenience: say why it is missing, keep going
            print(f"  {name}: cannot list the artifacts of run {rid} ({e})")
            continue
        parsed = urlparse(base)
        local = unquote(parsed.path) if parsed.scheme in ("", "file") else None
        for f in sorted(files, key=lambda p: (not p.endswith(".html"), p)):
            print(f"  {name}: {local}/{f}" if local else f"  {name}: runs:/{rid}/{f}")
    print()
