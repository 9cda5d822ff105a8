"""Generate the contracts example: 60 contracts' metadata and three models' extractions.

The data is made up by this project (deterministic, seed 7). The errors are the ones real
extraction models make: dates in other formats (correct, and must still match), off-by-one
dates, party names truncated or missed, a hallucinated governing law where the contract has
none, "Not Present" written as "N/A" or left empty, values with different casing/spacing, and a
few records still `pending` or failed (`error`).

Run from the repository root:  python experiments/contracts/make_data.py
"""

from __future__ import annotations

import csv
import json
import random
from datetime import date, timedelta
from pathlib import Path

HERE = Path(__file__).parent
FIELDS = ["contract_type", "parties", "effective_date", "governing_law", "term_months", "total_value", "termination_notice_days"]

TYPES = ["Service Agreement", "NDA", "License Agreement", "Employment Agreement", "Master Services Agreement", "Lease Agreement", "Supply Agreement"]
COMPANIES = [
    "Acme Robotics Inc.", "Borealis Energy GmbH", "Cobalt Health LLC", "Delta Freight Ltd.", "Evergreen Foods S.A.",
    "Fjord Analytics AS", "Granite Capital LP", "Helios Solar Corp.", "Ivory Textiles Pvt. Ltd.", "Juniper Networks Services",
    "Kestrel Aerospace plc", "Lumen Legal LLP", "Meridian Logistics Co.", "Nimbus Cloud Inc.", "Orchid Biotech AG",
    "Pinnacle Retail Group", "Quartz Semiconductor KK", "Redwood Insurance Mutual", "Sable Mining Ltd.", "Tidewater Marine LLC",
]
PEOPLE = ["Maria Gonzalez", "Kenji Watanabe", "Aisha Bello", "Lars Eriksen", "Priya Raman", "Tom O'Neill"]
LAWS = ["New York", "Delaware", "California", "England and Wales", "Ontario", "Texas", "Singapore"]
MODELS = ["gpt-4o-mini", "llama-3.1-8b", "regex-baseline"]
VALUED = ("Service Agreement", "Master Services Agreement", "Supply Agreement", "License Agreement")  # the types with a total value


def fmt_date(d: date, style: int) -> str:
    return [
        d.isoformat(),
        d.strftime("%B %-d, %Y"),
        d.strftime("%-d %B %Y"),
        d.strftime("%m/%d/%Y"),
        d.strftime("%b %-d, %Y"),
    ][style]


def make_truth(rng: random.Random, n: int) -> list[dict]:
    rows = []
    for i in range(1, n + 1):
        ctype = rng.choice(TYPES)
        a, b = rng.sample(COMPANIES, 2)
        parties = [a, rng.choice(PEOPLE)] if ctype == "Employment Agreement" else [a, b]
        if rng.random() < 0.15:
            parties.append(rng.choice([c for c in COMPANIES if c not in parties]))
        eff = date(2018, 1, 1) + timedelta(days=rng.randrange(0, 6 * 365))
        rows.append({
            "id": f"C-{i:04d}",
            "contract_type": ctype,
            "parties": parties,
            "effective_date": eff,
            "governing_law": rng.choice(LAWS) if rng.random() < 0.8 else None,
            "term_months": rng.choice([12, 24, 36, 60]) if ctype != "NDA" or rng.random() < 0.5 else None,
            "total_value": round(rng.uniform(5_000, 2_500_000), -2) if ctype in VALUED else None,
            "termination_notice_days": rng.choice([30, 60, 90]) if rng.random() < 0.35 else None,
        })
    return rows


# error profile per model: probability of each mistake
PROFILES = {
    "gpt-4o-mini": dict(wrong_type=0.04, miss_party=0.05, trunc_party=0.04, extra_party=0.02, date_off=0.03, date_style=0.6,
                        law_halluc=0.15, law_miss=0.03, term_wrong=0.04, value_wrong=0.05, notice_halluc=0.05, notice_miss=0.10,
                        na_style=0.5, pending=0.0, error=0.017),
    "llama-3.1-8b": dict(wrong_type=0.10, miss_party=0.12, trunc_party=0.10, extra_party=0.05, date_off=0.08, date_style=0.8,
                         law_halluc=0.35, law_miss=0.08, term_wrong=0.10, value_wrong=0.12, notice_halluc=0.15, notice_miss=0.25,
                         na_style=0.7, pending=0.034, error=0.034),
    "regex-baseline": dict(wrong_type=0.25, miss_party=0.30, trunc_party=0.05, extra_party=0.0, date_off=0.02, date_style=0.0,
                           law_halluc=0.0, law_miss=0.30, term_wrong=0.05, value_wrong=0.08, notice_halluc=0.0, notice_miss=0.5,
                           na_style=0.0, pending=0.0, error=0.0),
}


def absent(rng: random.Random, style_p: float) -> str:
    return rng.choice(["N/A", "", "none", "Not Present"]) if rng.random() < style_p else "Not Present"


def predict(rng: random.Random, t: dict, prof: dict) -> dict:
    p: dict = {"id": t["id"], "status": "ok"}
    r = rng.random()
    if r < prof["pending"]:
        p["status"] = "pending"
    elif r < prof["pending"] + prof["error"]:
        p["status"] = "error"
    ctype = t["contract_type"]
    if rng.random() < prof["wrong_type"]:
        ctype = rng.choice([x for x in TYPES if x != ctype])
    elif rng.random() < 0.2:
        ctype = ctype.upper() if rng.random() < 0.5 else f"  {ctype.lower()} "
    p["contract_type"] = ctype
    parties = list(t["parties"])
    if rng.random() < prof["miss_party"]:
        parties.pop(rng.randrange(len(parties)))
    if rng.random() < prof["trunc_party"]:
        k = rng.randrange(len(parties))
        parties[k] = parties[k].split()[0]
    if rng.random() < prof["extra_party"]:
        parties.append(rng.choice(COMPANIES))
    rng.shuffle(parties)
    p["parties"] = parties
    eff = t["effective_date"]
    if rng.random() < prof["date_off"]:
        eff = eff + timedelta(days=rng.choice([-1, 1, 30, 365]))
    p["effective_date"] = fmt_date(eff, rng.randrange(1, 5) if rng.random() < prof["date_style"] else 0)
    law = t["governing_law"]
    if law is None:
        p["governing_law"] = rng.choice(LAWS) if rng.random() < prof["law_halluc"] else absent(rng, prof["na_style"])
    else:
        us_states = ("New York", "Delaware", "California", "Texas")
        p["governing_law"] = absent(rng, prof["na_style"]) if rng.random() < prof["law_miss"] else (law if rng.random() < 0.85 else f"State of {law}" if law in us_states else law)
    term = t["term_months"]
    if term is None:
        p["term_months"] = absent(rng, prof["na_style"])
    else:
        p["term_months"] = str(rng.choice([12, 24, 36, 60])) if rng.random() < prof["term_wrong"] else rng.choice([str(term), f"{term}.0"])
    val = t["total_value"]
    if val is None:
        p["total_value"] = absent(rng, prof["na_style"])
    elif rng.random() < prof["value_wrong"]:
        p["total_value"] = f"{val * rng.choice([0.1, 10, 1.01]):,.2f}"
    else:
        p["total_value"] = rng.choice([f"{val:,.2f}", f"${val:,.0f}", f"{val:.0f}", f"USD {val:,.2f}"])
    notice = t["termination_notice_days"]
    if notice is None:
        p["termination_notice_days"] = str(rng.choice([30, 60])) if rng.random() < prof["notice_halluc"] else absent(rng, prof["na_style"])
    else:
        p["termination_notice_days"] = absent(rng, prof["na_style"]) if rng.random() < prof["notice_miss"] else str(notice)
    return p


def write_csv(path: Path, rows: list[dict], columns: list[str]) -> None:
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=columns)
        w.writeheader()
        for r in rows:
            out = {}
            for c in columns:
                v = r.get(c)
                if isinstance(v, list):
                    v = json.dumps(v, ensure_ascii=False)
                elif isinstance(v, date):
                    v = v.isoformat()
                elif v is None:
                    v = "Not Present"
                elif isinstance(v, float) and v.is_integer():
                    v = f"{v:.2f}"
                out[c] = v
            w.writerow(out)


ABSENT = {"N/A", "", "none", "Not Present"}
CLAUSES = ("contract_type", "governing_law", "termination_notice_days")


def ocr_misses(t: dict, p: dict) -> list[str]:
    """The clauses the regex baseline's output lost on a contract: a wrong contract type, or a
    governing law or notice period the contract has but the output does not. The baseline keys on
    clause headings, which OCR text garbles; a party name it drops (an "and" list it cuts short)
    happens on every kind of document, so it says nothing about the source."""
    lost = []
    if p["contract_type"].strip().lower() != t["contract_type"].lower():
        lost.append("contract_type")
    lost += [c for c in CLAUSES[1:] if t[c] is not None and str(p[c]).strip() in ABSENT]
    return lost


def invented(t: dict, p: dict) -> list[str]:
    """The clauses a model's output gives a value that the contract does not have."""
    return [c for c in FIELDS if t[c] is None and str(p[c]).strip() not in ABSENT]


def make_metadata(truth: list[dict], preds: dict[str, list[dict]]) -> list[dict]:
    """Each contract's `source` (scanned | digital) and `customer`.

    Added after the predictions, which are left as they were: `source` is read back from the
    regex baseline's output — a contract where it lost a clause heading (`ocr_misses`) came from
    the scanner, every other one is digital. Customers send one kind of document (their own
    archive is scanned or it is not) and their contracts err together (one scanner, one template
    that leaves out the clauses a model then invents): within each source, contracts are ordered by
    how many clauses the baseline lost plus how many absent clauses gpt-4o-mini invented (ties in a
    seeded random order) and dealt out, in that order, to customers holding 1–4 contracts each.
    """
    rng = random.Random(17)
    regex = {p["id"]: p for p in preds["regex-baseline"]}
    gpt = {p["id"]: p for p in preds["gpt-4o-mini"]}
    lost = {t["id"]: len(ocr_misses(t, regex[t["id"]])) for t in truth}
    source = {i: "scanned" if n else "digital" for i, n in lost.items()}
    hard = {t["id"]: lost[t["id"]] + len(invented(t, gpt[t["id"]])) for t in truth}
    customer: dict[str, str] = {}
    for s in ("digital", "scanned"):
        ids = [t["id"] for t in truth if source[t["id"]] == s]
        noise = {i: rng.random() for i in ids}
        order = sorted(ids, key=lambda i: (hard[i], noise[i]))
        while order:
            size = rng.choice([1, 2, 3, 3, 4])
            name = f"CU-{len(set(customer.values())) + 1:02d}"
            for i in order[:size]:
                customer[i] = name
            order = order[size:]
    return [{"id": t["id"], "source": source[t["id"]], "customer": customer[t["id"]]} for t in truth]


def generate() -> tuple[list[dict], dict[str, list[dict]]]:
    """The truth and each model's predictions (one random stream, in this order)."""
    rng = random.Random(7)
    truth = make_truth(rng, 60)
    preds = {m: [predict(rng, t, PROFILES[m]) for t in truth] for m in MODELS}
    return truth, preds


def metadata_csv() -> str:
    """metadata.csv as the generator writes it."""
    import io

    out = io.StringIO()
    w = csv.DictWriter(out, fieldnames=["id", "source", "customer"], lineterminator="\n")
    w.writeheader()
    w.writerows(make_metadata(*generate()))
    return out.getvalue()


def main() -> None:
    truth, preds = generate()
    write_csv(HERE / "truth.csv", truth, ["id", *FIELDS])
    (HERE / "predictions").mkdir(parents=True, exist_ok=True)
    for m in MODELS:
        write_csv(HERE / "predictions" / f"{m}.csv", preds[m], ["id", *FIELDS, "status"])
    (HERE / "metadata.csv").write_text(metadata_csv(), encoding="utf-8", newline="")


if __name__ == "__main__":
    main()
