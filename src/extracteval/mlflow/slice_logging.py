"""What the runs of a sliced evaluation log of its slices, for every task alike.

`mlflow.slicing.attach_slices` keeps the evaluation's `SliceReport` and the scored records'
metadata in `Scored.cache`; the bundle writer asks this module for what each run gets:

- the comparison (parent) run of several models, and the run of one model: the slices table
  `extracteval/slices.parquet` (`SliceReport.frame()`: one row per slicing, value and model),
  the whole document `extracteval/slices.json` (`SliceReport.to_dict()`) and the heat map
  `extracteval/slices.png` (slices × models, the primary metric; `report.slice_figures`);
- every model's run (and the run of one model): the metric `slice/<slicing>/<value>/<primary
  metric key>` of at most `MAX_SLICE_METRICS` of its slices — the ranked ones first (slices with
  at least the minimum size), each group weakest first — and `extracteval/record_metadata.parquet`
  (`record_id` and each metadata column, as text, one row per scored record), from which a
  later selection of records can read the same columns;
- every run's report: a "Slices" section (its models' columns).

Key segments are made as every other name in a key is (`keys.KeyMap`: unsafe characters `_`,
one-to-one, a digest where names would collide) and cut (with a digest) so that a key holding a
slicing, a value and the metric key stays within MLflow's 250 characters.
"""

from __future__ import annotations

from extracteval.core import strict_json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from extracteval.mlflow.adapters import Section
from extracteval.mlflow.keys import MAX_KEY_LENGTH, KeyMap, bounded_segment, is_valid_key
from extracteval.mlflow.slicing import SLICE_RECORDS, SLICE_REPORT

__all__ = ["MAX_SLICE_METRICS", "SLICE_ARTIFACTS", "RECORD_METADATA", "slice_metrics", "write_slice_files", "slice_sections"]

MAX_SLICE_METRICS = 50  # slice metrics per model run: the ranked slices first, weakest first
SLICE_ARTIFACTS = ("slices.parquet", "slices.json", "slices.png")  # under extracteval/ on the comparison run or the one model's run
RECORD_METADATA = "record_metadata.parquet"  # under extracteval/ on each model's run
_ALL = "(all records)"


def _report(scored: Any) -> Any:
    return scored.cache.get(SLICE_REPORT)


def _finite(x: Any) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(float(x))


def slice_metrics(scored: Any, model: str, keys: KeyMap) -> dict[str, float]:
    """`slice/<slicing>/<value>/<primary>` of `model` (module docstring); empty without slices.
    Each key's unsanitised name goes into `keys.originals` (the run's `metric_keys.json`)."""
    from extracteval.tasks import ranking_spec

    report = _report(scored)
    if report is None:
        return {}
    primary = report.metric
    lower = primary in ranking_spec(scored.task).lower_is_better
    mine = [r for r in report.rows if r["model"] == model and r["slice"] != _ALL and _finite(r["estimate"])]
    mine.sort(key=lambda r: (not r["ranked"], -r["estimate"] if lower else r["estimate"], r["slice"], r["value"]))
    limit = (MAX_KEY_LENGTH - len("slice//") - len(primary) - 1) // 2
    slicings = KeyMap.build(r["slice"] for r in report.rows)
    values: dict[str, KeyMap] = {}
    out: dict[str, float] = {}
    for r in mine[:MAX_SLICE_METRICS]:
        s, v = r["slice"], r["value"]
        if s not in values:
            values[s] = KeyMap.build(x["value"] for x in report.rows if x["slice"] == s)
        key = f"slice/{bounded_segment(slicings.segment(s), s, limit)}/{bounded_segment(values[s].segment(v), v, limit)}/{primary}"
        if is_valid_key(key):
            keys.originals[key] = f"slice/{s}/{v}/{primary}"
            out[key] = float(r["estimate"])
    return out


def _metadata_frame(rows: Any) -> Any:
    """`record_id` and each metadata column as text (None where a record has no value)."""
    import pandas as pd

    out = pd.DataFrame({"record_id": [str(i) for i in rows.index]})
    for c in rows.columns:
        name = str(c) if str(c) != "record_id" else "record_id (metadata)"
        out[name] = pd.Series([None if v is None or (isinstance(v, float) and v != v) else str(v) for v in rows[c].to_numpy(dtype=object)],
                              dtype=object)
    return out


def write_slice_files(scored: Any, role: str, adir: Path, *, figures: bool) -> bytes | None:
    """Write a run's slice artifacts into its `extracteval/` folder `adir` (`role`: `single`,
    `comparison` or `model`); the heat map's PNG bytes when drawn (for the report)."""
    report = _report(scored)
    if report is None:
        return None
    rows = scored.cache.get(SLICE_RECORDS)
    if role in ("single", "model") and rows is not None:
        _metadata_frame(rows).to_parquet(adir / RECORD_METADATA, index=False)
    if role not in ("single", "comparison"):
        return None
    from extracteval.report.console import json_default

    doc = report.to_dict()
    report.frame().to_parquet(adir / "slices.parquet", index=False)
    (adir / "slices.json").write_text(strict_json.dumps(doc, ensure_ascii=False, default=json_default), encoding="utf-8")
    if not figures:
        return None
    from extracteval.report.figures import png_bytes
    from extracteval.report.slice_figures import slices_heatmap

    png = png_bytes(slices_heatmap(doc, list(scored.models)))
    (adir / "slices.png").write_bytes(png)
    return png


def slice_sections(scored: Any, models: Sequence[str]) -> list[Section]:
    """The report's "Slices" section of these models; none without slices."""
    from extracteval.report.slices import slices_table, weakest_lines

    report = _report(scored)
    if report is None:
        return []
    doc = report.to_dict()
    o = report.options
    legend = (f"{report.label} ({report.metric}) per slice with its {100 * o.confidence:g}% bootstrap interval ({o.resamples} resamples"
              + (f", whole clusters of {o.cluster_by!r}" if o.cluster_by else "") + f"); slices under {o.min_size} records are shown "
              "but not ranked; within each slicing the weakest value comes first. Every row: extracteval/slices.parquet.")
    weak = [f"weakest slices of {line}" for line in weakest_lines(doc, list(models))]
    return [Section(title="Slices", table=slices_table(doc, list(models)), items=[legend, *weak, *report.notes_of(list(models))])]
