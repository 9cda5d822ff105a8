"""What rescore of `fields` runs relies on: predictions survive the Parquet round trip (and read
back through the adapter as cells, per-cell status included, score the same), the logged config
rebuilds."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from extracteval.tasks.fields.semantics import FieldsConfig, ModelPredictions, score_fields
from extracteval.core.normalize import NormalizationConfig
from extracteval.mlflow.predictions_file import predictions_to_frame, write_predictions_parquet
from extracteval.tasks.fields.inputs import frame_to_predictions
from extracteval.tasks.fields.adapter import ADAPTER


def _preds(status):
    values = pd.DataFrame(
        {"party": [["A Corp", "B Ltd"], "C GmbH", None], "amount": [1000.0, np.nan, "1,000"], "date": ["2024-01-01", "Not Present", "January 1, 2024"]},
        index=pd.Index(["r1", "r2", "r3"], name="id"),
    )
    return ModelPredictions(name="m", values=values, status=status, source="test")


def test_predictions_round_trip_scores_identically(tmp_path):
    truth = pd.DataFrame({"party": [["A Corp", "B Ltd"], "C GmbH", "D"], "amount": ["1000", None, "1000"], "date": ["2024-01-01", None, "2024-01-01"]},
                         index=pd.Index(["r1", "r2", "r3"], name="id"))
    for status in (None, pd.Series(["ok", "error", "ok"], index=["r1", "r2", "r3"]),
                   pd.DataFrame({"party": ["ok", "ok", "pending"], "amount": ["ok", "ok", "ok"], "date": ["error", "ok", "ok"]}, index=["r1", "r2", "r3"])):
        p = _preds(status)
        frame = predictions_to_frame(p)
        frame.to_parquet(tmp_path / "p.parquet", index=False)
        back = frame_to_predictions(pd.read_parquet(tmp_path / "p.parquet"), name="m", source="round trip")
        a = score_fields(truth, [p], config=FieldsConfig(bootstrap=0)).to_dict()["models"]["m"]
        b = score_fields(truth, [back], config=FieldsConfig(bootstrap=0)).to_dict()["models"]["m"]
        assert a.pop("source") == "test" and b.pop("source") == "round trip"
        assert a == b
        # through the adapter: the file read back as one cell per record, scored by `score_frame`
        write_predictions_parquet(p, tmp_path / "direct.parquet")
        logged = ADAPTER.read_predictions(tmp_path / "direct.parquet", source="round trip")
        ids = list(truth.index)
        cells, st, _extra = logged.for_ids(ids)
        targets = [{k: v for k, v in row.items()} for row in truth.to_dict(orient="records")]
        c = ADAPTER.score_frame(ids=ids, targets=targets, predictions={"m": cells}, config={"bootstrap": 0}, truth_source="t",
                                **({} if st is None else {"status": {"m": st}})).doc["models"]["m"]
        c.pop("source")
        assert c == a


def test_logged_config_rebuilds_exactly():
    cfg = FieldsConfig(strategies={"party": "FUZZY"}, fuzzy_threshold=0.9, zero_division=1.0, bootstrap=200, seed=3,
                       normalization=NormalizationConfig(null_tokens=frozenset({"n/a", "missing"}), dayfirst=True))
    logged = json.loads(json.dumps({"config": cfg.to_dict()}))  # as result.json holds it
    assert ADAPTER.build_config(ADAPTER.rescore_options(logged)).to_dict() == cfg.to_dict()
