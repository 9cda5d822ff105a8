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
import io
import random
from datetime import date, datetime, timedelta
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


def _value(feature: str, v: str) -> object:
    """A value as the config compares it, roughly: "none"/"N/A" are missing, amounts and dates parsed."""
    v = (v or "").strip()
    if v.lower() in ("", "none", "n/a"):
        return None
    if feature == "refund_amount":
        try:
            return float(v.replace("$", ""))
        except ValueError:
            return f"unparsable {v}"
    if feature == "follow_up_date":
        for fmt in ("%Y-%m-%d", "%B %d, %Y"):
            try:
                return datetime.strptime(v, fmt).date()
            except ValueError:
                pass
    return v


def misses(t: dict, p: dict | None) -> set[str]:
    """The features a model's prediction gets wrong on a ticket (all of them when it skipped it)."""
    if p is None:
        return set(FEATURES)
    return {f for f in FEATURES if _value(f, p[f]) != _value(f, t[f])}


def make_metadata(truth: list[dict], preds: dict[str, list[dict]]) -> list[dict]:
    """Each ticket's `channel` (email | chat | phone) and `customer`.

    Added after the predictions, which are left as they were: `channel` is read back from how the
    keyword rules did. The rules were written for the chat widget, whose tickets carry the words
    of its menus verbatim (the category, the product, an "urgent" button): a ticket came by chat
    when the rules made no mistake there that gpt-4o-mini did not make too, or when their only
    mistake is a low/medium/high priority (the urgent button, not the text, sets "urgent").
    Tickets the rules could not parse are long email threads; the rest came by email or phone,
    at random (seeded). Customers write through one channel and their tickets read alike: within
    each channel, tickets are ordered by how many features the rules and gpt-4o-mini missed
    (ties in a seeded random order) and dealt out, in that order, to customers holding 1–4
    tickets each.
    """
    rng = random.Random(15)
    by = {m: {p["id"]: p for p in rows} for m, rows in preds.items()}
    channel, hard = {}, {}
    for t in truth:
        i = t["id"]
        rule, llm = misses(t, by["keyword-rules"].get(i)), misses(t, by["gpt-4o-mini"].get(i))
        hard[i] = len(rule) + len(llm)
        urgent = "urgent" in (t["priority"], by["keyword-rules"][i]["priority"]) if i in by["keyword-rules"] else True
        if rule <= llm or (rule == {"priority"} and not urgent):
            channel[i] = "chat"
        elif i not in by["keyword-rules"]:
            channel[i] = "email"
        else:
            channel[i] = rng.choice(["email", "phone"])
    customer: dict[str, str] = {}
    for c in ("chat", "email", "phone"):
        ids = [t["id"] for t in truth if channel[t["id"]] == c]
        noise = {i: rng.random() for i in ids}
        order = sorted(ids, key=lambda i: (hard[i], noise[i]))
        while order:
            size = rng.choice([1, 2, 3, 3, 4])
            name = f"CU-{len(set(customer.values())) + 1:02d}"
            for i in order[:size]:
                customer[i] = name
            order = order[size:]
    return [{"id": t["id"], "channel": channel[t["id"]], "customer": customer[t["id"]]} for t in truth]


def generate() -> tuple[list[dict], dict[str, list[dict]]]:
    """The truth and each model's predictions (each from its own seeded random stream)."""
    truth = make_truth(random.Random(5))
    preds = {"gpt-4o-mini": gpt(truth, random.Random(1)), "distilbert-clf": classifier(truth, random.Random(2)),
             "keyword-rules": rules(truth, random.Random(3))}
    return truth, preds


def metadata_csv() -> str:
    """metadata.csv as the generator writes it."""
    out = io.StringIO()
    w = csv.DictWriter(out, fieldnames=["id", "channel", "customer"], lineterminator="\n")
    w.writeheader()
    w.writerows(make_metadata(*generate()))
    return out.getvalue()


def main() -> None:
    truth, preds = generate()
    write(HERE / "truth.csv", truth)
    for m, rows in preds.items():
        write(HERE / "predictions" / f"{m}.csv", rows)
    (HERE / "metadata.csv").write_text(metadata_csv(), encoding="utf-8", newline="")


if __name__ == "__main__":
    main()
