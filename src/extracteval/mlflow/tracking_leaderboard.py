"""Cross-run leaderboards from an MLflow tracking store: rank the latest run of each model.

`TrackingStoreLeaderboard` reads every extracteval run of an experiment with ONE paginated
`search_runs` call (model runs only: parent comparison runs and earlier leaderboard runs are
skipped), turns each into a `core.run_ranking.RunSummary` (item names restored from the run's
`extracteval/metric_keys.json` only when a key segment may have been sanitised), ranks them with
`core.run_ranking.build_leaderboard` (fairness by truth/config digest, the task's ranking tie-breaks, item
winners) and, when asked, attaches paired-bootstrap intervals computed from the runs'
per-record Parquet artifacts (downloaded only for the groups that get intervals). By default only
the latest run of each model name per truth/config group is ranked (by start time); the earlier
ones are reported as superseded (`all_runs=True` ranks every run).

`write_outputs` renders CSV / JSON / HTML / PNG into a folder; `log_leaderboard` logs them to a
leaderboard run in the same experiment (tagged with the compared run ids; its metrics: the
winner, its margin and that margin's verdict) and writes each ranked run's rank and item wins
back to it as `leaderboard/rank` and `leaderboard/field_wins` at step n (the experiment's n-th
leaderboard), one `log_batch` per run: one column in the runs table, whose metric history is
the run's rank in every leaderboard. Runs a later run of their model superseded are tagged
`extracteval.superseded_by`; their metrics are never touched.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from extracteval.core import strict_json
from extracteval.core.bootstrap import Interval
from extracteval.core.run_ranking import Leaderboard, RunSummary, build_leaderboard, with_intervals
from extracteval.tasks import RANKING_SPECS
from extracteval.errors import InputError
from extracteval.mlflow.descriptions import LEADERBOARD_RANK, LEADERBOARD_WINS, leaderboard_note, standings, summary_metrics
from extracteval.mlflow.intervals import RECORDS_ARTIFACT, _download
from extracteval.io.outputs import MARKER
from extracteval.report.terminal import count_of

__all__ = [
    "TrackingStoreLeaderboard",
    "TrackedRun",
    "search_model_runs",
    "run_summary",
    "rank_runs",
    "build_tracking_leaderboard",
    "record_intervals",
    "write_outputs",
    "log_leaderboard",
    "RECORDS_ARTIFACT",
    "KEYS_ARTIFACT",
    "LEADERBOARD_ROLE",
    "LEADERBOARD_KEY",
]

KEYS_ARTIFACT = "extracteval/metric_keys.json"
LEADERBOARD_ROLE = "leaderboard"
LEADERBOARD_KEY = "leaderboard"  # the ranked runs' `leaderboard/rank` and `leaderboard/field_wins`
SKIPPED_ROLES = frozenset({"comparison", LEADERBOARD_ROLE})
SEARCH_PAGE = 1000
MAX_TAG_LENGTH = 5000
# a segment that sanitising may have produced (it may also be the name itself)
_MAYBE_SANITISED = re.compile(r"_|-[0-9a-f]{8,64}$")  # a character changed to `_`, or a long or clashing name's digest


@dataclass(frozen=True, kw_only=True)
class TrackedRun:
    """What the leaderboard keeps of one tracking-store run."""

    run_id: str
    run_name: str
    artifact_uri: str
    tags: Mapping[str, str]
    params: Mapping[str, str]


@dataclass(frozen=True, kw_only=True)
class TrackingStoreLeaderboard:
    """A leaderboard of tracked runs plus where it came from and how intervals were obtained."""

    experiment: str
    experiment_id: str
    tracking_uri: str
    leaderboard: Leaderboard
    runs: Mapping[str, TrackedRun]
    summaries: tuple[RunSummary, ...]
    notes: tuple[str, ...] = ()
    timings: Mapping[str, float] = field(default_factory=dict)
    leaderboard_run_id: str | None = None
    leaderboard_key: str | None = None  # `leaderboard`: the ranked runs got their rank and wins as `leaderboard/rank|field_wins`
    leaderboard_step: int | None = None  # the step of those values in the runs' metric history

    def item_scores(self) -> dict[str, dict[str, float]]:
        """Run id → item → winner metric (F1 for fields), for the heatmap."""
        spec = self.leaderboard.spec
        ranked = {e.run_id for g in self.leaderboard.groups for e in g.entries}
        out: dict[str, dict[str, float]] = {}
        if not spec.item_prefix:
            return out
        leaf = "/" + spec.item_keys[0]
        # the items the ranking judged (not a catch-all row, nor a path only one run has)
        judged = {i for g in self.leaderboard.groups for i in g.item_winners}
        for s in self.summaries:
            if s.run_id not in ranked:
                continue
            row = out.setdefault(s.run_id, {})
            for k, v in s.metrics.items():
                if k.startswith(spec.item_prefix) and k.endswith(leaf):
                    item = k[len(spec.item_prefix) : -len(leaf)]
                    if item in judged:
                        row[item] = float(v)
        return out

    def to_dict(self) -> dict[str, Any]:
        doc = self.leaderboard.to_dict()
        doc.update({
            "experiment": self.experiment,
            "experiment_id": self.experiment_id,
            "tracking_uri": self.tracking_uri,
            "n_runs": len(self.summaries),
            "notes": list(self.notes),
            "leaderboard_run_id": self.leaderboard_run_id,
            "leaderboard_key": self.leaderboard_key,
            "leaderboard_step": self.leaderboard_step,
        })
        return doc


def rank_runs(runs: Sequence[RunSummary], **options: Any) -> Leaderboard:
    """`core.run_ranking.build_leaderboard` with each task's registered ranking declaration."""
    return build_leaderboard(runs, rankings=RANKING_SPECS, **options)


def _client(tracking_uri: str | None) -> Any:
    from mlflow.tracking import MlflowClient

    from extracteval.mlflow.upload import store_uri

    uri = store_uri(tracking_uri)
    return MlflowClient(tracking_uri=uri), uri


def _quote(value: str) -> str:
    return "'" + str(value).replace("\\", "\\\\").replace("'", "\\'") + "'"


def search_model_runs(client: Any, experiment_id: str, *, filter_string: str | None = None, task: str | None = None) -> list[Any]:
    """Every active extracteval model run of the experiment: one paginated `search_runs`.

    The role tag is in the filter, so the store never returns parent comparison runs nor earlier
    leaderboard runs. MLflow filter strings have no parentheses or OR, so the user's filter is
    AND-ed as is.
    """
    from mlflow.entities import ViewType
    from mlflow.exceptions import MlflowException

    parts = [f"tags.`extracteval.role` != {_quote(r)}" for r in sorted(SKIPPED_ROLES)]
    if task:
        parts.append(f"tags.`extracteval.task` = {_quote(task)}")
    if filter_string and filter_string.strip():
        parts.insert(0, filter_string.strip())
    runs: list[Any] = []
    token = None
    while True:
        try:
            page = client.search_runs([experiment_id], filter_string=" and ".join(parts), run_view_type=ViewType.ACTIVE_ONLY,
                                      max_results=SEARCH_PAGE, order_by=["attributes.start_time ASC"], page_token=token)
        except MlflowException as e:
            if filter_string and "filter" in str(e).lower():
                raise InputError(f"--filter {filter_string!r}: MLflow rejects it ({' '.join(str(e).split())[:300]}).") from None
            raise
        runs.extend(page)
        token = page.token
        if not token:
            return runs


def _segment_names(run: Any, *, tracking_uri: str) -> dict[str, str]:
    """Key segment → original name from the run's metric_keys.json ({} when absent)."""
    text = _download_text(run.info.artifact_uri, KEYS_ARTIFACT, tracking_uri)
    if text is None:
        return {}
    try:
        doc = json.loads(text)
        return {str(r["key"]): str(r["name"]) for r in doc.get("names", ())}
    except (ValueError, KeyError, TypeError, AttributeError):
        return {}


def _download_text(artifact_uri: str, path: str, tracking_uri: str) -> str | None:
    import tempfile

    with tempfile.TemporaryDirectory(prefix="extracteval-lb-") as d:
        p = _download(artifact_uri, path, tracking_uri, d)
        if p is None or not p.is_file():
            return None
        return p.read_text(encoding="utf-8")


def run_summary(run: Any, *, names: Mapping[str, str] | None = None) -> RunSummary:
    """A tracked run → RunSummary (model from the `extracteval.model` tag, else the run name);
    item key segments are replaced by their original names when `names` maps them."""
    tags = run.data.tags
    task = tags.get("extracteval.task", "")
    metrics = dict(run.data.metrics)
    spec = RANKING_SPECS.get(task)
    if spec is not None and spec.item_exclude:
        from extracteval.mlflow.keys import sanitize_segment

        # an excluded name (toolcalls' "(other functions)") is recognised by its key segment
        # even when the run's metric_keys.json could not be read
        names = {**{sanitize_segment(x): x for x in spec.item_exclude}, **(names or {})}
    if names and spec is not None and spec.item_prefix:
        p = spec.item_prefix
        fixed = {}
        for k, v in metrics.items():
            if k.startswith(p):
                seg, sep, leaf = k[len(p) :].rpartition("/")
                if sep and seg in names:
                    k = f"{p}{names[seg]}/{leaf}"
            fixed[k] = v
        metrics = fixed
    return RunSummary(
        run_id=run.info.run_id,
        model=tags.get("extracteval.model") or run.info.run_name or run.info.run_id,
        task=task,
        truth_digest=tags.get("extracteval.truth_digest", ""),
        config_digest=tags.get("extracteval.config_digest", ""),
        metrics=metrics,
        run_name=run.info.run_name or "",
        start_time=int(run.info.start_time or 0),
        end_time=int(run.info.end_time or 0),
    )


def _ambiguous_segments(run: Any) -> set[str]:
    spec = RANKING_SPECS.get(run.data.tags.get("extracteval.task", ""))
    if spec is None or not spec.item_prefix:
        return set()
    p = spec.item_prefix
    out = set()
    for k in run.data.metrics:
        if k.startswith(p):
            seg = k[len(p) :].rpartition("/")[0]
            if seg and _MAYBE_SANITISED.search(seg):
                out.add(seg)
    return out


def _summaries(runs: Sequence[Any], tracking_uri: str) -> list[RunSummary]:
    """RunSummary per run; metric_keys.json is read only for runs with a segment that sanitising
    may have produced, and a map read once serves every later run with the same segments."""
    known: dict[str, str] = {}
    resolved: set[str] = set()
    out = []
    for r in runs:
        amb = _ambiguous_segments(r)
        if amb - resolved:
            names = _segment_names(r, tracking_uri=tracking_uri)
            known.update(names)
            resolved |= amb  # absent map: the segments are taken as the names
        out.append(run_summary(r, names=known))
    return out


_RECORD_COLUMNS = ["record_id", "field", "tp", "fp", "fn", "tn"]


def _read_record_counts(path: Path) -> Any:
    """A per-record Parquet artifact → `RecordCounts` (None when unreadable or lacking a column).

    The id and field columns are read as Arrow dictionaries (Parquet stores them so), so each
    file yields its few distinct names plus integer codes, without a pandas frame of 3,200
    Python strings per run. Anything unusual (nulls, non-string ids, non-integer counts) takes
    the DataFrame path, whose conversions (`astype(str)`, …) define the result."""
    import numpy as np
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    from extracteval.core.run_ranking import RecordCounts

    try:
        pf = pq.ParquetFile(path, read_dictionary=_RECORD_COLUMNS[:2], pre_buffer=False)  # a small file: one pass, no prefetch
        if not set(_RECORD_COLUMNS) <= set(pf.schema_arrow.names):
            return None
        table = pf.read(columns=_RECORD_COLUMNS, use_threads=False, use_pandas_metadata=False)
        coded = []
        for name in _RECORD_COLUMNS[:2]:
            col = table.column(name)
            t = col.type
            if col.null_count or not (pa.types.is_dictionary(t) and (pa.types.is_string(t.value_type) or pa.types.is_large_string(t.value_type))):
                coded = None
                break
            # chunks (row groups) have their own dictionaries: concatenate, then merge repeats
            names = [c.dictionary.to_numpy(zero_copy_only=False) for c in col.chunks]
            offsets = np.cumsum([0] + [len(x) for x in names[:-1]])
            codes = np.concatenate([c.indices.to_numpy(zero_copy_only=False).astype(np.int64) + o for c, o in zip(col.chunks, offsets)]) \
                if col.chunks else np.zeros(0, dtype=np.int64)
            remap, distinct = pd.factorize(np.concatenate(names) if names else np.zeros(0, dtype=object))
            coded.append((np.asarray(distinct, dtype=object), remap[codes] if len(codes) else codes))
        if coded is not None and all(pa.types.is_integer(table.column(c).type) and not table.column(c).null_count for c in _RECORD_COLUMNS[2:]):
            counts = np.column_stack([table.column(c).to_numpy().astype(np.int64) for c in _RECORD_COLUMNS[2:]]) if table.num_rows \
                else np.zeros((0, 4), dtype=np.int64)
            return RecordCounts(ids=coded[0][0], id_codes=coded[0][1], items=coded[1][0], item_codes=coded[1][1], counts=counts)
        return RecordCounts.from_frame(pq.read_table(path, columns=_RECORD_COLUMNS).to_pandas())
    except Exception:  # noqa: BLE001 - an unreadable artifact is skipped like an absent one
        return None


def _record_tables(task: str, runs: Mapping[str, TrackedRun], tracking_uri: str, workers: int = 8, *, sizes: dict[str, Any] | None = None
                   ) -> dict[str, Any]:
    """run id → per-record counts (`RecordCountTable`, the task adapter's reading of the run's
    per-record artifact); runs without them are left out. With `sizes` (a dict), each run's record
    sizes (`record_sizes`) go into it from the same read of the artifact."""
    from concurrent.futures import ThreadPoolExecutor

    from extracteval.mlflow.adapters import get_adapter
    from extracteval.mlflow.intervals import RECORDS_ARTIFACT, read_run_artifact, read_run_counts

    adapter = get_adapter(task)

    def one(item: tuple[str, TrackedRun]) -> tuple[str, Any]:
        rid, run = item
        if sizes is None:
            return rid, read_run_counts(task, run.artifact_uri, run.params, tracking_uri)
        both = read_run_artifact(run.artifact_uri, RECORDS_ARTIFACT, tracking_uri,
                                 lambda p: (adapter.record_counts(p, run.params), adapter.record_sizes(p, run.params)))
        table, sizes[rid] = both if both is not None else (None, None)
        return rid, table

    if not tracking_uri.startswith(("http://", "https://", "databricks")):
        # local files: a read is well under a millisecond, mostly under the GIL; threads only add overhead
        return {rid: f for rid, f in map(one, runs.items()) if f is not None}
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return {rid: f for rid, f in pool.map(one, runs.items()) if f is not None}


def _names(models: Sequence[str]) -> str:
    return ", ".join(models[:10]) + (f" and {len(models) - 10} more" if len(models) > 10 else "")


def record_intervals(
    lb: Leaderboard,
    tables: Mapping[str, Any],
    *,
    params: Mapping[str, Mapping[str, str]] | None = None,
    resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> tuple[dict[str, Interval], dict[tuple[str, str], Interval], list[str]]:
    """Intervals of each run's ranking metric and of each adjacent pair's difference, from the
    runs' per-record counts (`tables`: run id → `RecordCountTable`): per group, a paired
    bootstrap over the record ids of the group's runs."""
    from extracteval.mlflow.intervals import paired_intervals
    from extracteval.mlflow.adapters import get_adapter

    metric = lb.spec.primary
    notes: list[str] = []
    if metric not in get_adapter(lb.task).interval_metrics:
        notes.append(f"confidence intervals: not available for {lb.task} runs ranked by {metric} (the per-record counts determine "
                     f"{', '.join(get_adapter(lb.task).interval_metrics)}).")
        return {}, {}, notes
    intervals: dict[str, Interval] = {}
    pairs: dict[tuple[str, str], Interval] = {}
    for gi, g in enumerate(lb.groups, start=1):
        have = {e.run_id: tables[e.run_id] for e in g.entries if e.run_id in tables}
        missing = [e.model for e in g.entries if e.run_id not in tables]
        if missing:
            notes.append(f"confidence intervals: unavailable for {_names(missing)}: their per-record artifact ({RECORDS_ARTIFACT}) is absent "
                         "or lacks the per-record counts (a run logged by an earlier version); their intervals are skipped.")
        if not have:
            continue
        adjacent = [(a.run_id, b.run_id) for a, b in zip(g.entries[:-1], g.entries[1:]) if a.run_id in have and b.run_id in have]
        first = next(iter(have))
        res = paired_intervals(lb.task, metric, have, adjacent, (params or {}).get(first, {}), resamples=resamples, confidence=confidence, seed=seed)
        if res is None:
            notes.append(f"confidence intervals (group {gi}): {metric} cannot be recomputed from these runs' per-record counts; skipped.")
            continue
        if any(s != res.n_records for s in res.sizes.values()):
            notes.append(f"confidence intervals (group {gi}): resampled over the {res.n_records} record ids of any run (runs hold "
                         f"{min(res.sizes.values())}–{max(res.sizes.values())}; a record a run lacks counts nothing for that run).")
        intervals.update(res.per_run)
        pairs.update(res.pairs)
    return intervals, pairs, notes


def _sliced_ranking(lb: Leaderboard, runs: Mapping[str, TrackedRun], summaries: Sequence[RunSummary], uri: str, selector: Any,
                    cluster_by: str | None, rank_options: Mapping[str, Any]) -> tuple[Leaderboard, list[RunSummary], dict[str, Any], list[str]]:
    """The ranked runs on one slice's records (`selector`), their metrics recomputed from each
    run's per-record counts and record metadata; the tables the intervals resample (the slice's
    records, summed per cluster with `cluster_by`), and notes. Runs without record metadata (logged
    without slicing) are left out of a sliced ranking, and without clustered intervals."""
    from extracteval.mlflow.adapters import get_adapter
    from extracteval.mlflow.run_slices import check_column, clustered_table, slice_metadata, sliced_table, table_metrics

    from extracteval.io.config import SIZE

    wanted = {e.run_id: runs[e.run_id] for g in lb.groups for e in g.entries}
    need = [c for c in (selector.column if selector is not None else None, cluster_by) if c]
    sizes: dict[str, Any] | None = {} if SIZE in need else None
    tables = _record_tables(lb.task, wanted, uri, sizes=sizes)  # with `@size`, each run's sizes from the same read
    meta = {rid: slice_metadata(lb.task, runs[rid], uri, need, sizes=(sizes or {}).get(rid)) for rid in tables}
    usable = {rid: t for rid, t in tables.items() if meta[rid] is not None}
    for rid in usable:
        for c in need:
            check_column(meta[rid], c, f"run {rid} ({runs[rid].tags.get('extracteval.model') or runs[rid].run_name})")
    left = sorted(runs[rid].tags.get("extracteval.model") or runs[rid].run_name for rid in wanted if rid not in usable)
    notes = [f"left out of the {'slice' if selector is not None else 'clustered intervals'}: {_names(left)} (no record metadata or "
             "per-record counts: logged without slicing)."] if left else []
    if selector is not None:
        usable = {rid: sliced_table(t, meta[rid], selector) for rid, t in usable.items()}
        spec = lb.spec
        keys = [spec.primary, *spec.tie_breaks, *get_adapter(lb.task).interval_metrics]
        by_id = {s.run_id: s for s in summaries}
        kept = [replace(by_id[rid], metrics=table_metrics(lb.task, t, keys, runs[rid].params)) for rid, t in usable.items() if len(t.record_ids)]
        if not kept or spec.primary not in kept[0].metrics:
            raise InputError(f"--slice {selector}: no ranked run has records in this slice" if not kept else
                             f"--slice {selector}: {spec.primary} cannot be recomputed from the runs' per-record counts.")
        lb = rank_runs(kept, task=lb.task, **rank_options)
        summaries = kept
        n = {rid: len(t.record_ids) for rid, t in usable.items()}
        notes.append(f"ranked on the slice {selector}: {min(n.values())}–{max(n.values())} records per run; metrics recomputed from the "
                     "runs' per-record counts (item winners are not recomputed).")
    if cluster_by:
        usable = {rid: clustered_table(t, meta[rid], cluster_by) for rid, t in usable.items()}
        notes.append(f"intervals resample whole clusters of {cluster_by!r} ({max((len(t.record_ids) for t in usable.values()), default=0)} clusters).")
    return lb, list(summaries), usable, notes


def build_tracking_leaderboard(
    *,
    experiment: str,
    tracking_uri: str | None = None,
    filter_string: str | None = None,
    task: str | None = None,
    metric: str | None = None,
    group_by_truth: bool = False,
    ci: bool = True,
    resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
    all_runs: bool = False,
    slice_on: Any = None,
    cluster_by: str | None = None,
) -> TrackingStoreLeaderboard:
    """Rank the model runs of `experiment` (see the module docstring): the latest run of each
    model per truth/config group, or every run with `all_runs`. `slice_on` (a
    `run_slices.SliceSelector`): rank by the metrics of that slice's records, recomputed from each
    run's per-record counts and record metadata; `cluster_by`: intervals resample whole clusters.

    Raises:
        InputError: unknown experiment, no runs, mixed tasks without `task`, mixed digests
            without `group_by_truth`, an unknown `metric`.
    """
    t0 = time.perf_counter()
    client, uri = _client(tracking_uri)
    exp = client.get_experiment_by_name(experiment)
    if exp is None:
        names = sorted(e.name for e in client.search_experiments(max_results=50))
        raise InputError(f"experiment {experiment!r} not found at {uri}; experiments there: {', '.join(names) or 'none'}.")
    raw = search_model_runs(client, exp.experiment_id, filter_string=filter_string, task=task)
    raw = [r for r in raw if r.data.tags.get("extracteval.task")]
    t_search = time.perf_counter()
    if not raw:
        raise InputError(f"experiment {experiment!r} has no extracteval model runs" + (f" matching --filter {filter_string!r}" if filter_string else "")
                         + (f" of task {task!r}" if task else "") + ".")
    summaries = _summaries(raw, uri)
    runs = {r.info.run_id: TrackedRun(run_id=r.info.run_id, run_name=r.info.run_name or "", artifact_uri=r.info.artifact_uri,
                                      tags=dict(r.data.tags), params=dict(r.data.params)) for r in raw}
    lb = rank_runs(summaries, task=task, group_by_truth=group_by_truth, metric=metric, all_runs=all_runs)
    notes: list[str] = []
    sliced: dict[str, Any] | None = None
    if slice_on is not None or cluster_by:
        lb, summaries, sliced, notes = _sliced_ranking(lb, runs, summaries, uri, slice_on, cluster_by,
                                                       dict(group_by_truth=group_by_truth, metric=metric, all_runs=all_runs))
    t_rank, c_rank = time.perf_counter(), time.process_time()
    if ci:
        from extracteval.mlflow.adapters import get_adapter

        wanted = {e.run_id: runs[e.run_id] for g in lb.groups for e in g.entries}
        # artifacts are read only when the ranking metric has intervals at all
        tables = sliced if sliced is not None else (_record_tables(lb.task, wanted, uri) if lb.spec.primary in get_adapter(lb.task).interval_metrics else {})
        intervals, pairs, more = record_intervals(lb, tables, params={r: t.params for r, t in wanted.items()},
                                                  resamples=resamples, seed=seed, confidence=confidence)
        notes += more
        if intervals or pairs:
            lb = with_intervals(lb, intervals, pairs)
    else:
        notes.append("confidence intervals: off (--no-ci).")
    mangled = sorted(e.model for g in lb.groups for e in g.entries if runs[e.run_id].params.get("underscore_to_dot") == "true")
    if mangled:  # BFCL toolcalls runs: a per-model choice, outside the config digest (see task_toolcalls)
        notes.append(f"'.' → '_' function-name mangling (param underscore_to_dot) was applied to: {', '.join(mangled)}; "
                     "the other runs were scored with the function names as described.")
    t_ci, c_ci = time.perf_counter(), time.process_time()
    return TrackingStoreLeaderboard(
        experiment=experiment, experiment_id=str(exp.experiment_id), tracking_uri=uri, leaderboard=lb, runs=runs,
        summaries=tuple(s for s in summaries if s.task == lb.task), notes=tuple(notes),
        # ci_cpu_s: CPU of the process (all threads) during the intervals; on a loaded machine
        # wall time mostly measures the other tenants
        timings={"search_s": t_search - t0, "rank_s": t_rank - t_search, "ci_s": t_ci - t_rank, "ci_cpu_s": c_ci - c_rank},
    )


def write_outputs(result: TrackingStoreLeaderboard, out: Path, *, figures: bool = True, safe_csv: bool = True) -> list[Path]:
    """leaderboard.csv, field_winners.csv, leaderboard.json, leaderboard.html and (unless
    `figures=False`) figures/overall.png and figures/item_heatmap.png (one per group), written to
    a staging folder and moved into `out` only when complete. `safe_csv`: neutralise formula cells."""
    import pandas as pd

    from extracteval.io.outputs import staged_folder, write_csv
    from extracteval.report.figures import png_bytes
    from extracteval.report.leaderboard_views import item_heatmap, overall_chart, ranking_rows, render_html, winner_rows

    out = Path(out)
    doc = result.to_dict()
    names = ["leaderboard.csv", "field_winners.csv", "leaderboard.json"]
    with staged_folder(out) as staging:
        write_csv(pd.DataFrame(ranking_rows(doc)), staging / "leaderboard.csv", safe=safe_csv)
        write_csv(pd.DataFrame(winner_rows(doc), columns=["group", "item", "kind", "winners", "win_share", "badge", "best"]),
                  staging / "field_winners.csv", safe=safe_csv)
        (staging / "leaderboard.json").write_text(strict_json.dumps(doc, indent=2, ensure_ascii=False, default=str), encoding="utf-8")
        pngs: dict[str, bytes] = {}
        if figures:
            fdir = staging / "figures"
            fdir.mkdir(exist_ok=True)
            scores = result.item_scores()
            for gi in range(len(doc["groups"])):
                suffix = "" if len(doc["groups"]) == 1 else f"-group{gi + 1}"
                pngs[f"overall{suffix}.png"] = png_bytes(overall_chart(doc, gi))
                if doc["groups"][gi]["field_winners"] or scores:
                    pngs[f"item_heatmap{suffix}.png"] = png_bytes(item_heatmap(doc, scores, gi))
            for name, data in pngs.items():
                (fdir / name).write_bytes(data)
                names.append(f"figures/{name}")
        (staging / "leaderboard.html").write_text(render_html(doc, pngs), encoding="utf-8")
        names.append("leaderboard.html")
    return [out / n for n in names]


def _compared_tags(run_ids: Sequence[str]) -> dict[str, str]:
    """The compared run ids as tags: `extracteval.compared_runs` when it fits one tag, else
    `extracteval.compared_runs.1`, `.2`, … (MLflow bounds a tag value)."""
    joined = ",".join(run_ids)
    if len(joined) <= MAX_TAG_LENGTH:
        return {"extracteval.compared_runs": joined}
    per = MAX_TAG_LENGTH // 33
    return {f"extracteval.compared_runs.{i // per + 1}": ",".join(run_ids[i : i + per]) for i in range(0, len(run_ids), per)}


def _bounded_note(text: str) -> str:
    """A description within MLflow's tag bound; a cut one says so."""
    limit = 8000
    return text if len(text) <= limit else text[: limit - 60].rsplit("\n", 1)[0] + "\n\n(cut: the full leaderboard is in the artifacts)"


def _leaderboard_step(client: Any, experiment_id: str) -> int:
    """The step of a new leaderboard's values in the ranked runs' metric history: one more than
    the largest step an earlier leaderboard run of the experiment took (its tag
    `extracteval.leaderboard_step`), or than their number where that is larger (leaderboards of
    older versions have no tag); 1 for the first. A leaderboard run deleted for good does not
    make a later step repeat one before it."""
    from mlflow.entities import ViewType

    n, top, token = 0, 0, None
    while True:
        page = client.search_runs([experiment_id], filter_string=f"tags.\"extracteval.role\" = '{LEADERBOARD_ROLE}'",
                                  run_view_type=ViewType.ALL, max_results=1000, page_token=token)
        n += len(page)
        for r in page:
            tag = r.data.tags.get("extracteval.leaderboard_step", "")
            top = max(top, int(tag)) if tag.isdigit() else top
        token = getattr(page, "token", None)
        if not token:
            return max(n, top) + 1


def _summary_metrics(lb: Leaderboard) -> dict[str, float]:
    """The leaderboard run's few metrics (one group): the winner's score and interval, its margin
    over the runner-up and that margin's verdict (`descriptions.summary_metrics`)."""
    import posixpath

    if len(lb.groups) != 1 or not lb.groups[0].entries:
        return {}
    spec, g = lb.spec, lb.groups[0]
    base = posixpath.dirname(spec.primary)
    own = {e.model: {spec.primary: e.score, **({f"{base}/ci_low": e.ci.low, f"{base}/ci_high": e.ci.high} if e.ci is not None else {})}
           for e in g.entries}
    names = [e.model for e in g.entries]
    return summary_metrics(spec, names, own.__getitem__, standings(names, {m: own[m][spec.primary] for m in names}, g.comparisons))


def _leaderboard_tags(lb: Leaderboard) -> dict[str, str]:
    """The leaderboard run's tags before it exists: what it ranked and, with one group, the digests and winner."""
    from extracteval import __version__

    entries = [e for g in lb.groups for e in g.entries]
    ids = [e.run_id for e in entries]
    tags = {
        "extracteval.role": LEADERBOARD_ROLE,
        "extracteval.task": lb.task,
        "extracteval.version": __version__,
        "extracteval.primary_metric": lb.spec.primary,
        "extracteval.compared_count": str(len(ids)),
        "extracteval.run_selection": "all runs" if lb.all_runs else "latest run per model",
        **_compared_tags(ids),
    }
    if len(lb.groups) == 1:
        g = lb.groups[0]
        tags.update({"extracteval.truth_digest": g.truth_digest, "extracteval.config_digest": g.config_digest,
                     "extracteval.winner": entries[0].model[:MAX_TAG_LENGTH]})
    return tags


def _write_back(client: Any, uri: str, lb: Leaderboard, runs: Mapping[str, TrackedRun], rid: str, ts: int, sequence: int) -> None:
    """Each ranked run's `leaderboard/rank` and `leaderboard/field_wins` at step `sequence` (a
    value per leaderboard under one key; a ranked run loses the superseded tags an earlier
    leaderboard gave it), and each superseded run's tags naming the run ranked in its place; one
    `log_batch` per run, in threads against a server."""
    from concurrent.futures import ThreadPoolExecutor

    from mlflow.entities import Metric, RunTag

    def write_back(e: Any) -> None:
        client.log_batch(e.run_id, metrics=[Metric(LEADERBOARD_RANK, float(e.rank), ts, sequence),
                                            Metric(LEADERBOARD_WINS, float(e.item_wins), ts, sequence)],
                         tags=[RunTag("extracteval.leaderboard_run", rid), RunTag("extracteval.leaderboard_step", str(sequence))])
        if e.run_id in was_superseded:  # ranked again (`--all-runs`, or the run that replaced it is gone): no longer superseded
            for tag in ("extracteval.superseded_by", "extracteval.superseded_in"):
                client.delete_tag(e.run_id, tag)

    def mark_superseded(s: Any) -> None:  # its metrics are left as they were
        client.log_batch(s.run_id, tags=[RunTag("extracteval.superseded_by", s.superseded_by), RunTag("extracteval.superseded_in", rid)])

    entries = [e for g in lb.groups for e in g.entries]
    superseded = [s for g in lb.groups for s in g.superseded]
    was_superseded = {e.run_id for e in entries if "extracteval.superseded_by" in (runs.get(e.run_id).tags if e.run_id in runs else {})}
    if uri.startswith(("http://", "https://", "databricks")):
        with ThreadPoolExecutor(max_workers=8) as pool:
            list(pool.map(write_back, entries))
            list(pool.map(mark_superseded, superseded))
    else:  # one writer: SQLite serialises writes anyway, and threads would only contend for its lock
        for e in entries:
            write_back(e)
        for sup in superseded:
            mark_superseded(sup)


def log_leaderboard(
    result: TrackingStoreLeaderboard, out: Path, *, run_name: str | None = None, on_step: Callable[[str], None] | None = None,
) -> TrackingStoreLeaderboard:
    """Log `out` (from `write_outputs`) as the artifacts of a new leaderboard run and write each
    ranked run's `leaderboard/rank` and `leaderboard/field_wins` back to it (one `log_batch`
    each) at step n, the leaderboard's number in its experiment: one key per run whose metric
    history is the run's rank in every leaderboard that ranked it. A run left out because a
    later run of the same model superseded it gets the tags `extracteval.superseded_by` (that
    run's id) and `extracteval.superseded_in` (this leaderboard's); its metrics stay as they were.
    Returns `result` with `leaderboard_run_id`, `leaderboard_key` and `leaderboard_step` set.
    """
    import contextlib
    import sys

    from mlflow.entities import Metric, RunTag

    step = on_step or (lambda _s: None)
    client, uri = _client(result.tracking_uri)
    lb = result.leaderboard
    n_ranked = sum(len(g.entries) for g in lb.groups)
    ts = int(time.time() * 1000)
    tags = _leaderboard_tags(lb)
    with contextlib.redirect_stdout(sys.stderr):  # MLflow's "View run" lines; stdout is the command's
        step("create leaderboard run")
        sequence = _leaderboard_step(client, result.experiment_id)
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(ts / 1000))
        run = client.create_run(result.experiment_id, start_time=ts,
                                run_name=run_name or f"leaderboard: {lb.task} ({count_of(n_ranked, 'run')}) · {stamp}")
        rid = run.info.run_id
        tags["extracteval.leaderboard_key"] = LEADERBOARD_KEY
        tags["extracteval.leaderboard_step"] = str(sequence)
        tags["mlflow.note.content"] = _bounded_note(leaderboard_note(result, LEADERBOARD_RANK))
        try:
            tag_items = [RunTag(k, v) for k, v in sorted(tags.items())]
            metrics = [Metric(k, v, ts, 0) for k, v in sorted(_summary_metrics(lb).items())]
            for i in range(0, len(tag_items), 100):
                client.log_batch(rid, tags=tag_items[i : i + 100], metrics=metrics if i == 0 else [])
            step("artifacts")
            for item in sorted(Path(out).iterdir()):  # the folder's files, not the marker that says whose folder it is
                if item.name == MARKER:
                    continue
                if item.is_dir():
                    client.log_artifacts(rid, str(item), artifact_path=f"leaderboard/{item.name}")
                else:
                    client.log_artifact(rid, str(item), artifact_path="leaderboard")
            step("write back")
            _write_back(client, uri, lb, result.runs, rid, ts, sequence)
            client.set_terminated(rid, "FINISHED")
        except BaseException:
            with contextlib.suppress(Exception):
                client.set_terminated(rid, "FAILED")
            raise
    return replace(result, leaderboard_run_id=rid, leaderboard_key=LEADERBOARD_KEY, leaderboard_step=sequence)
