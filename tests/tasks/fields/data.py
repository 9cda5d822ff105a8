"""A deterministic `fields` data set of any size: truth and three models' predictions with the
errors real extractors make (case and spacing, date formats, number formats, missing values,
wrong values, multi-valued cells, pending/error records, records without a prediction)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

FIELDS = ("vendor", "invoice_date", "total", "currency", "paid", "tags")


def make_fields_data(n: int, seed: int = 0) -> tuple[pd.DataFrame, dict[str, pd.DataFrame]]:
    """(truth, {model: predictions}) as string-valued wide frames with an `id` column, sorted by id."""
    rng = np.random.default_rng(seed)
    vendors = np.asarray([f"Vendor {c}{k}" for c in "ABCDEFGHIJ" for k in range(20)], dtype=object)
    ids = np.asarray([f"INV-{i:08d}" for i in range(n)], dtype=object)
    days = rng.integers(0, 3650, n)
    dates = pd.Timestamp("2015-01-01") + pd.to_timedelta(days, unit="D")
    truth = pd.DataFrame(
        {
            "id": ids,
            "vendor": rng.choice(vendors, n),
            "invoice_date": dates.strftime("%Y-%m-%d").to_numpy(dtype=object),
            "total": np.char.mod("%.2f", rng.integers(100, 10_000_000, n) / 100).astype(object),
            "currency": rng.choice(np.asarray(["EUR", "USD", "GBP", "Not Present"], dtype=object), n, p=[0.4, 0.4, 0.1, 0.1]),
            "paid": rng.choice(np.asarray(["yes", "no", ""], dtype=object), n, p=[0.45, 0.45, 0.1]),
            "tags": [json.dumps(sorted(rng.choice(["urgent", "recurring", "disputed", "export"], rng.integers(0, 3), replace=False).tolist())) for _ in range(n)],
        }
    )
    models = {}
    for name, err in (("alpha", 0.05), ("beta", 0.15), ("gamma", 0.35)):
        p = truth.copy()
        for f in FIELDS:
            wrong = rng.random(n) < err
            noise = rng.choice(truth[f].to_numpy(), n)
            p[f] = np.where(wrong, noise, p[f].to_numpy())
            blank = rng.random(n) < err / 3
            p[f] = np.where(blank, "", p[f].to_numpy())
        restyle = rng.random(n) < 0.3
        p.loc[restyle, "vendor"] = p.loc[restyle, "vendor"].str.upper()
        redate = rng.random(n) < 0.3
        p.loc[redate, "invoice_date"] = pd.to_datetime(p.loc[redate, "invoice_date"], errors="coerce").dt.strftime("%B %d, %Y").fillna("")
        p["status"] = rng.choice(np.asarray(["ok", "ok", "ok", "ok", "ok", "ok", "ok", "ok", "pending", "error"], dtype=object), n)
        keep = rng.random(n) > err / 2
        models[name] = p.loc[keep].reset_index(drop=True)
    return truth, models
