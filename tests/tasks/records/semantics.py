"""Whole-record exact match: a chunk of records → a ledger; ledgers add up; the result once.

Every engine runs these two steps: in memory over one chunk holding every record, in chunks and
workers (`RecordsTask`), on Spark (the same `RecordsTask` on executors and the driver).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from extracteval.chunked import ChunkScore
from extracteval.core.ledger import Ledger, by_key, keep, merge, smallest
from extracteval.core.ranking import rank_by_metrics

from tests.tasks.records.contract import RANKING
from tests.tasks.records.metrics import count_metrics


@dataclass(frozen=True)
class RecordsConfig:
    zero_division: float = 0.0  # the accuracy of no truth records

    def to_dict(self) -> dict[str, Any]:
        return {"zero_division": self.zero_division}


def cell(value: Any) -> str | None:
    """A cell as compared: its text without surrounding white space; None for an absent or empty
    one; a list or object as its JSON text."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, (list, tuple, dict)):
        return json.dumps(value, sort_keys=True, ensure_ascii=False)
    if hasattr(value, "item") and not isinstance(value, str):
        value = value.item()
    text = str(value).strip()
    return text or None


@dataclass(frozen=True, kw_only=True)
class ModelLedger(Ledger):
    records: int  # truth records
    correct: int  # truth records whose every field is right
    missing: int  # truth records without a prediction
    extra: int  # predicted records the truth lacks
    field_correct: Mapping[str, int] = merge(by_key())
    wrong_ids: tuple[str, ...] = merge(smallest(5))  # the first records it got wrong
    source: str = merge(keep)


@dataclass(frozen=True, kw_only=True)
class RecordsLedger(Ledger):
    models: Mapping[str, ModelLedger] = merge(by_key())


def record_rows(truth: pd.DataFrame, values: pd.DataFrame, fields: Sequence[str]) -> pd.DataFrame:
    """One row per record of either side: record_id, status (`aligned`, `missing`: no prediction,
    `extra`: no truth record), correct, and per field whether it is right (`f:<field>`)."""
    t_ids = [str(i) for i in truth.index]
    p = values.set_axis([str(i) for i in values.index], axis=0)
    p_ids = set(p.index)
    rows = []
    for rid, (_, trow) in zip(t_ids, truth.iterrows()):
        if rid not in p_ids:
            rows.append({"record_id": rid, "status": "missing", "correct": False, **{f"f:{f}": False for f in fields}})
            continue
        prow = p.loc[rid]
        right = {f"f:{f}": cell(trow.get(f)) == cell(prow.get(f) if f in p.columns else None) for f in fields}
        rows.append({"record_id": rid, "status": "aligned", "correct": all(right.values()), **right})
    known = set(t_ids)
    for rid in p.index:
        if rid not in known:
            rows.append({"record_id": rid, "status": "extra", "correct": False, **{f"f:{f}": False for f in fields}})
    return pd.DataFrame(rows, columns=["record_id", "status", "correct", *(f"f:{f}" for f in fields)])


def model_ledger(truth: pd.DataFrame, values: pd.DataFrame, fields: Sequence[str], source: str) -> ModelLedger:
    rows = record_rows(truth, values, fields)
    scored = rows[rows["status"] != "extra"]
    wrong = sorted(scored.loc[~scored["correct"].astype(bool), "record_id"])[:5]
    return ModelLedger(records=len(scored), correct=int(scored["correct"].sum()), missing=int((rows["status"] == "missing").sum()),
                       extra=int((rows["status"] == "extra").sum()), field_correct={f: int(scored[f"f:{f}"].sum()) for f in fields},
                       wrong_ids=tuple(wrong), source=source)


def chunk_ledger(truth: pd.DataFrame, predictions: Sequence[Any], fields: Sequence[str]) -> RecordsLedger:
    return RecordsLedger(models={p.name: model_ledger(truth, p.values, fields, p.source) for p in predictions})


@dataclass(frozen=True)
class ModelResult:
    accuracy: float
    records: int
    correct: int
    missing: int
    extra: int
    fields: dict[str, float]
    wrong_ids: list[str]
    source: str
    rank: int = 0
    tier: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"accuracy": self.accuracy, "records": self.records, "correct": self.correct, "missing": self.missing, "extra": self.extra,
                "fields": dict(self.fields), "wrong_ids": list(self.wrong_ids), "source": self.source, "rank": self.rank, "tier": self.tier}


@dataclass(frozen=True)
class RecordsResult:
    config: dict[str, Any]
    fields: list[str]
    n_records: int
    models: dict[str, ModelResult]
    ranking: list[str]
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"task": "records", "config": dict(self.config), "fields": list(self.fields), "n_records": self.n_records,
                "ranking_rule": RANKING.rule(), "ranking": list(self.ranking), "models": {m: r.to_dict() for m, r in self.models.items()},
                "warnings": list(self.warnings)}


def _model_result(ml: ModelLedger, fields: Sequence[str], zero_division: float) -> ModelResult:
    counts = {"correct": ml.correct, "records": ml.records, **{f"field/{f}": ml.field_correct.get(f, 0) for f in fields}}
    got = count_metrics(counts, zero_division=zero_division)
    return ModelResult(accuracy=float(got[RANKING.primary]), records=ml.records, correct=ml.correct, missing=ml.missing, extra=ml.extra,
                       fields={f: float(got[f"field/{f}/accuracy"]) for f in fields}, wrong_ids=list(ml.wrong_ids), source=ml.source)


def records_result(ledger: RecordsLedger, config: RecordsConfig, fields: Sequence[str]) -> RecordsResult:
    models = {m: _model_result(ml, fields, config.zero_division) for m, ml in ledger.models.items()}
    ranked = rank_by_metrics(RANKING, {m: {RANKING.primary: r.accuracy} for m, r in models.items()})
    models = {r.model: ModelResult(**{**models[r.model].__dict__, "rank": r.rank, "tier": r.tier}) for r in ranked}
    warnings = [f"model {m!r}: {r.missing} truth record(s) have no prediction and count as wrong" for m, r in models.items() if r.missing]
    n = next(iter(ledger.models.values())).records if ledger.models else 0
    return RecordsResult(config=config.to_dict(), fields=list(fields), n_records=n, models=models, ranking=[r.model for r in ranked], warnings=warnings)


def score_records(truth: pd.DataFrame, predictions: Sequence[Any], config: RecordsConfig) -> RecordsResult:
    """The in-memory engine: every record as one chunk."""
    fields = [str(c) for c in truth.columns]
    return records_result(chunk_ledger(truth, predictions, fields), config, fields)


@dataclass(frozen=True)
class RecordsTask:
    """The chunk engine's task (it travels to worker processes and Spark executors)."""

    config: RecordsConfig
    fields: tuple[str, ...]
    truth_source: str
    sources: Mapping[str, str]

    def score_chunk(self, chunk: Any) -> ChunkScore:
        chunk = chunk.materialised()
        return ChunkScore(ledger=chunk_ledger(chunk.truth, chunk.predictions, self.fields))

    def finalise(self, ledger: RecordsLedger, *, record_rows: Callable[[], np.ndarray] | None) -> RecordsResult:
        return records_result(ledger, self.config, self.fields)


def document(result: RecordsResult, inputs: Mapping[str, Any]) -> dict[str, Any]:
    """The `--json` document and result.json: the result and where its inputs came from."""
    return {**result.to_dict(), "inputs": dict(inputs)}
