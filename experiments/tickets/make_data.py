"""Generate the tickets example: 80 support tickets' triage labels and three models' predictions.

The data is made up by this project (deterministic, seed 5). Six features per ticket: category,
priority, product, sentiment, refund_amount (a number, missing for most tickets) and
follow_up_date (a date, often missing). The models make the errors real triage models make:

- `gpt-4o-mini`: mostly right; writes amounts as "$45.00" and dates as "March 3, 2024" (still
  correct); confuses neighbouring priorities (high/urgent) and mixed sentiment.
- `distilbert-clf`: a fine-tuned classifier: good at category and sentiment, cannot extract
  amounts or dates (always empty), biased towards "medium" priority.
- `keyword-rules`: keyword rules; answers "none"/"N/A" for missing values (which must count as
  missing, not as a label "none"), writes "about 40" for amounts (unparsable, never equal to
  another unparsable value), skipped 6 tickets it could not parse and emitted 2 ticket ids that
  are not in the ground truth (both counted in the strict view).

Run from the repository root:  python experiments/tickets/make_data.py
"""

from __future__ import annotations

import csv
import random
from datetime import date, timedelta
from pathlib import Path

HERE = Path(__file__).parent
FEATURES = ["category", "priority", "product", "sentiment", "refund_amount", "follow_up_date"]
CATEGORIES = ["billing", "technical", "account", "shipping", "feature request"]
PRIORITIES = ["low", "medium", "high", "urgent"]
PRODUCTS = ["Mobile app", "Web dashboard", "API", "Router X200", "Smart plug"]
SENTIMENTS = ["negative", "neutral", "positive"]


def make_truth(rng: random.Random) -> list[dict]:
    rows = []
    for i in range(80):
        cat = rng.choice(CATEGORIES)
        refund = f"{rng.choice([15, 20, 29.99, 45, 60, 120])}" if cat in ("billing", "shipping") and rng.random() < 0.6 else ""
        follow = (date(2024, 3, 1) + timedelta(days=rng.randint(0, 40))).isoformat() if rng.random() < 0.4 else ""
        rows.append({
            "id": f"T-{1000 + i}", "category": cat, "priority": rng.choice(PRIORITIES), "product": rng.choice(PRODUCTS),
            "sentiment": rng.choice(SENTIMENTS), "refund_amount": refund, "follow_up_date": follow,
        })
    return rows


def neighbour(values: list[str], v: str, rng: random.Random) -> str:
    i = values.index(v)
    return values[max(0, min(len(values) - 1, i + rng.choice([-1, 1])))]


def gpt(truth: list[dict], rng: random.Random) -> list[dict]:
    out = []
    for t in truth:
        p = dict(t)
        if rng.random() < 0.12:
            p["priority"] = neighbour(PRIORITIES, t["priority"], rng)
        if rng.random() < 0.08:
            p["sentiment"] = "neutral" if t["sentiment"] != "neutral" else "negative"
        if rng.random() < 0.05:
            p["category"] = rng.choice(CATEGORIES)
        if t["refund_amount"] and rng.random() < 0.5:
            p["refund_amount"] = f"${float(t['refund_amount']):.2f}"
        if t["follow_up_date"] and rng.random() < 0.5:
            p["follow_up_date"] = date.fromisoformat(t["follow_up_date"]).strftime("%B %-d, %Y")
        out.append(p)
    return out


def classifier(truth: list[dict], rng: random.Random) -> list[dict]:
    out = []
    for t in truth:
        p = dict(t, refund_amount="", follow_up_date="")
        if rng.random() < 0.4:
            p["priority"] = "medium"
        if rng.random() < 0.1:
            p["category"] = rng.choice(CATEGORIES)
        if rng.random() < 0.15:
            p["product"] = rng.choice(PRODUCTS)
        out.append(p)
    return out


def rules(truth: list[dict], rng: random.Random) -> list[dict]:
    out = []
    for k, t in enumerate(truth):
        if k % 13 == 5:
            continue  # could not parse the ticket
        p = dict(t)
        if rng.random() < 0.3:
            p["category"] = rng.choice(CATEGORIES)
        if rng.random() < 0.5:
            p["priority"] = rng.choice(PRIORITIES)
        p["sentiment"] = "negative" if rng.random() < 0.6 else t["sentiment"]
        if t["refund_amount"]:
            p["refund_amount"] = f"about {int(float(t['refund_amount']))}" if rng.random() < 0.4 else t["refund_amount"]
        else:
            p["refund_amount"] = rng.choice(["none", "N/A", ""])
        p["follow_up_date"] = t["follow_up_date"] or rng.choice(["none", ""])
        out.append(p)
    out.append({"id": "T-9001", "category": "billing", "priority": "low", "product": "API", "sentiment": "neutral",
                "refund_amount": "none", "follow_up_date": "none"})
    out.append({"id": "T-9002", "category": "technical", "priority": "high", "product": "API", "sentiment": "negative",
                "refund_amount": "", "follow_up_date": ""})
    return out


def write(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=["id", *FEATURES])
        w.writeheader()
        w.writerows(rows)


def main() -> None:
    truth = make_truth(random.Random(5))
    write(HERE / "truth.csv", truth)
    write(HERE / "predictions" / "gpt-4o-mini.csv", gpt(truth, random.Random(1)))
    write(HERE / "predictions" / "distilbert-clf.csv", classifier(truth, random.Random(2)))
    write(HERE / "predictions" / "keyword-rules.csv", rules(truth, random.Random(3)))


if __name__ == "__main__":
    main()
