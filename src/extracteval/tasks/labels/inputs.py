"""Files → inputs of the `labels` task: the same tables as the `fields` task (CSV/TSV, JSONL, JSON,
Parquet; wide or long, `id` column, optional `model` column holding several models), read through
`io.tables`."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from extracteval.errors import InputError
from extracteval.io.config import models_in_file, parse_model_spec
from extracteval.io.tables import load_fields_table

__all__ = ["load_labels_inputs", "not_predictions"]


def load_labels_inputs(
    truth: str | Path,
    predictions: Sequence[str],
    *,
    id_column: str = "id",
    delimiter: str | None = None,
) -> tuple[Any, list[Any], str, list[str]]:
    """Truth frame, one `ModelLabels` per model, the truth's name and notes for the report.

    A prediction row whose `status` is `pending` or `error` is not a prediction: it is left out,
    so the strict view counts it as a missing row (and a note says how many).
    """
    from extracteval.core.feature_views import ModelLabels

    t = load_fields_table(truth, id_column=id_column, delimiter=delimiter)
    if len(t.values) != 1 or "" not in t.values:
        raise InputError(f"{truth}: the ground truth must not have a `model` column (found models {sorted(t.values)}).")
    if t.status[""] is not None:
        raise InputError(f"{truth}: the ground truth must not have a `status` column; status belongs to predictions.")
    notes: list[str] = []
    models: list[ModelLabels] = []
    names: dict[str, str] = {}
    for spec in predictions:
        name, path = parse_model_spec(spec)
        loaded = load_fields_table(path, id_column=id_column, delimiter=delimiter)
        items = models_in_file(name, path, loaded.values, names)
        for model_name, key in items:
            values = loaded.values[key]
            status = loaded.status[key]
            if status is not None:
                bad_rows = not_predictions(status, path)
                n_bad = int(bad_rows.sum())
                if n_bad:
                    values = values.loc[~bad_rows.reindex(values.index, fill_value=False)]
                    notes.append(f"model {model_name!r}: {n_bad} row(s) with status pending/error are not predictions (counted as missing in the strict view)")
            models.append(ModelLabels(name=model_name, values=values, source=str(path)))
    return t.values[""], models, str(truth), notes


def not_predictions(status: Any, path: str | Path) -> Any:
    """Rows whose `status` is pending or error (a boolean Series): they are not predictions.
    Long format (per-cell status): a row counts if any of its cells is ok."""
    if hasattr(status, "columns"):
        return status.apply(lambda row: all(str(x).strip().lower() in ("pending", "error") for x in row), axis=1)
    # a JSONL line without the key reads as NaN: no status, like an empty cell
    norm = status.map(lambda x: "" if x is None or (isinstance(x, float) and x != x) else str(x).strip().lower())
    unknown = sorted(set(norm) - {"", "ok", "pending", "error"})
    if unknown:
        raise InputError(f"{path}: column 'status' must be one of ok, pending, error (or empty), but found {unknown[0]!r}.")
    return norm.isin(["pending", "error"])
