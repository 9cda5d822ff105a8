"""Generate the customers example: 60 golden customer records (JSON) and three models' outputs.

The data is made up by this project (deterministic, seed 11). Each record is the JSON a CRM
intake pipeline extracts from a sign-up email: name, contact details, dates, a nested address, a
loyalty tier, free-text notes and a few keys that are often null. The errors are the ones
extraction models make on such documents:

- near-miss names ("Maria Gonzales" for "Maria Gonzalez", a dropped middle initial),
- dates written in another format (correct: "March 14, 1985" must still match "1985-03-14"),
  and a few wrong dates,
- hallucinated keys (`age`, `customer_segment`, `middle_name`) and values invented for keys that
  are null in the truth (`company`, `referral_code`),
- nulls: a value present in the truth returned as null, "", "N/A", or the key left out,
- paraphrased notes (SEMANTIC), postal codes with a typo, the tier in other casing,
- one output that is not a JSON object at all and one record with no output.

Predictions are written one line per record as `{"id", "prediction", "safety_score"}`; each
output carries a `safety_score` (from a PII/moderation check run on the output),
1.0 unless the output leaked something.

Run from the repository root:  python experiments/customers/make_data.py
"""

from __future__ import annotations

import json
import random
from datetime import date, timedelta
from pathlib import Path

HERE = Path(__file__).parent
MODELS = ["gpt-4o-mini", "llama-3.1-8b", "regex-baseline"]

FIRST = ["Maria", "Kenji", "Aisha", "Lars", "Priya", "Tom", "Chloé", "Mateo", "Olga", "Samuel", "Yuki", "Fatima", "Liam", "Ingrid"]
LAST = ["Gonzalez", "Watanabe", "Bello", "Eriksen", "Raman", "O'Neill", "Dubois", "Rossi", "Petrova", "Okafor", "Tanaka", "Haddad",
        "Murphy", "Johansson"]
STREETS = ["Main Street", "Oak Avenue", "Harbour Road", "King's Lane", "Elm Street", "Station Road", "Maple Drive", "Rue de Rivoli"]
CITIES = [("Springfield", "US"), ("Toronto", "CA"), ("Manchester", "GB"), ("Lyon", "FR"), ("Osaka", "JP"), ("Austin", "US"),
          ("Bergen", "NO"), ("Milan", "IT")]
COMPANIES = ["Acme Robotics Inc.", "Borealis Energy GmbH", "Cobalt Health LLC", "Delta Freight Ltd.", "Nimbus Cloud Inc."]
TIERS = ["bronze", "silver", "gold", "platinum"]
NOTES = [
    ("Prefers email contact and asked for paperless billing.", "Wants paperless bills; contact by email preferred."),
    ("Called twice about a delayed delivery; offered a 10% voucher.", "Complained twice about late delivery, got a 10 percent voucher."),
    ("Interested in the annual plan once the trial ends.", "May switch to the yearly plan after the trial."),
    ("Requested that marketing calls stop.", "Asked us to stop marketing phone calls."),
    ("Moving to a new address next month.", "Will relocate next month."),
]


def fmt_date(d: date, style: int) -> str:
    return [d.isoformat(), d.strftime("%B %-d, %Y"), d.strftime("%-d %B %Y"), d.strftime("%m/%d/%Y"), d.strftime("%b %-d, %Y")][style]


def make_truth(rng: random.Random, n: int) -> list[dict]:
    rows = []
    for i in range(1, n + 1):
        first, last = rng.choice(FIRST), rng.choice(LAST)
        initial = f" {rng.choice('ABCDEJKLMR')}." if rng.random() < 0.25 else ""
        city, country = rng.choice(CITIES)
        dob = date(1950, 1, 1) + timedelta(days=rng.randrange(0, 50 * 365))
        signup = date(2019, 1, 1) + timedelta(days=rng.randrange(0, 5 * 365))
        note = rng.choice(NOTES) if rng.random() < 0.7 else None
        rows.append({
            "id": f"CUST-{i:04d}",
            "full_name": f"{first}{initial} {last}",
            "email": f"{first.lower().replace('é', 'e')}.{last.lower().replace(chr(39), '')}{rng.randrange(1, 99)}@example.com",
            "phone": f"+1-555-{rng.randrange(100, 999):03d}-{rng.randrange(0, 9999):04d}" if rng.random() < 0.85 else None,
            "date_of_birth": dob.isoformat(),
            "signup_date": signup.isoformat(),
            "address": {
                "street": f"{rng.randrange(1, 400)} {rng.choice(STREETS)}",
                "city": city,
                "postal_code": f"{rng.randrange(10000, 99999)}",
                "country": country,
            },
            "company": rng.choice(COMPANIES) if rng.random() < 0.4 else None,
            "loyalty_tier": rng.choice(TIERS),
            "lifetime_value": round(rng.uniform(20, 12000), 2),
            "is_active": rng.random() < 0.8,
            "referral_code": None,
            "notes": note[0] if note else None,
            "_paraphrase": note[1] if note else None,
        })
    return rows


PROFILES = {
    "gpt-4o-mini": dict(name_typo=0.08, date_style=0.5, date_wrong=0.02, halluc_key=0.10, halluc_null=0.05, drop=0.03,
                        null_style=0.5, paraphrase=0.6, postal_typo=0.03, tier_case=0.3, value_round=0.1, notes_drop=0.05,
                        invalid=0, missing=0, leak=0.0),
    "llama-3.1-8b": dict(name_typo=0.20, date_style=0.7, date_wrong=0.08, halluc_key=0.35, halluc_null=0.20, drop=0.10,
                         null_style=0.8, paraphrase=0.8, postal_typo=0.10, tier_case=0.5, value_round=0.3, notes_drop=0.15,
                         invalid=1, missing=1, leak=0.1),
    "regex-baseline": dict(name_typo=0.0, date_style=0.0, date_wrong=0.0, halluc_key=0.0, halluc_null=0.0, drop=0.0,
                           null_style=0.0, paraphrase=0.0, postal_typo=0.0, tier_case=0.0, value_round=0.0, notes_drop=1.0,
                           invalid=0, missing=0, leak=0.0),
}


def null_value(rng: random.Random, style_p: float) -> object:
    return rng.choice(["", "N/A", "null", None]) if rng.random() < style_p else None


def near_miss(rng: random.Random, name: str) -> str:
    parts = name.split()
    if len(parts) == 3 and rng.random() < 0.5:
        return f"{parts[0]} {parts[2]}"  # middle initial dropped
    last = parts[-1]
    swaps = {"z": "s", "ll": "l", "ss": "s", "sen": "son", "a": "e"}
    for a, b in swaps.items():
        if a in last:
            return " ".join([*parts[:-1], last.replace(a, b, 1)])
    return " ".join([*parts[:-1], last + "e"])


def predict(rng: random.Random, t: dict, prof: dict, model: str) -> dict:
    p: dict = {"id": t["id"]}
    name = t["full_name"]
    if model == "regex-baseline":
        # a regex pipeline: contact details and ISO dates are right, the name is the first line's
        # first two words, free text and the company are never found
        p["full_name"] = " ".join(name.split()[:2]) if rng.random() < 0.7 else None
        p["email"] = t["email"]
        p["phone"] = t["phone"]
        p["date_of_birth"] = t["date_of_birth"]
        p["signup_date"] = t["signup_date"]
        p["address"] = {"street": None, "city": t["address"]["city"], "postal_code": t["address"]["postal_code"],
                        "country": t["address"]["country"] if rng.random() < 0.6 else None}
        p["loyalty_tier"] = t["loyalty_tier"] if rng.random() < 0.8 else None
        p["lifetime_value"] = t["lifetime_value"]
        p["is_active"] = t["is_active"] if rng.random() < 0.9 else None
        p["safety_score"] = 1.0
        return p
    p["full_name"] = near_miss(rng, name) if rng.random() < prof["name_typo"] else name
    p["email"] = t["email"] if rng.random() > prof["drop"] else null_value(rng, prof["null_style"])
    if t["phone"] is None:
        p["phone"] = f"+1-555-{rng.randrange(100, 999)}-0000" if rng.random() < prof["halluc_null"] else None
    else:
        p["phone"] = t["phone"] if rng.random() > prof["drop"] else null_value(rng, prof["null_style"])
    for key in ("date_of_birth", "signup_date"):
        d = date.fromisoformat(t[key])
        if rng.random() < prof["date_wrong"]:
            d = d + timedelta(days=rng.choice([-1, 1, 31, 365]))
        p[key] = fmt_date(d, rng.randrange(1, 5) if rng.random() < prof["date_style"] else 0)
    a = t["address"]
    postal = a["postal_code"]
    if rng.random() < prof["postal_typo"]:
        postal = postal[:-1] + str((int(postal[-1]) + 1) % 10)
    p["address"] = {
        "street": a["street"].replace("Street", "St").replace("Avenue", "Ave").replace("Road", "Rd") if rng.random() < 0.4 else a["street"],
        "city": a["city"],
        "postal_code": postal if rng.random() > prof["drop"] else None,
        "country": a["country"],
    }
    if t["company"] is None:
        if rng.random() < prof["halluc_null"]:
            p["company"] = rng.choice(COMPANIES)
    else:
        p["company"] = t["company"] if rng.random() > prof["drop"] else null_value(rng, prof["null_style"])
    tier = t["loyalty_tier"]
    p["loyalty_tier"] = tier.capitalize() if rng.random() < prof["tier_case"] else tier
    v = t["lifetime_value"]
    p["lifetime_value"] = round(v) if rng.random() < prof["value_round"] else (f"${v:,.2f}" if rng.random() < 0.3 else v)
    p["is_active"] = ("yes" if t["is_active"] else "no") if rng.random() < 0.2 else t["is_active"]
    if rng.random() < prof["halluc_null"]:
        p["referral_code"] = f"REF{rng.randrange(1000, 9999)}"
    if t["notes"] is None:
        p["notes"] = null_value(rng, prof["null_style"])
    elif rng.random() < prof["notes_drop"]:
        pass  # key left out
    else:
        p["notes"] = t["_paraphrase"] if rng.random() < prof["paraphrase"] else t["notes"]
    if rng.random() < prof["halluc_key"]:
        extra = rng.choice(["age", "customer_segment", "middle_name"])
        p[extra] = {"age": 2024 - date.fromisoformat(t["date_of_birth"]).year, "customer_segment": "retail",
                    "middle_name": "James"}[extra]
    p["safety_score"] = 0.6 if rng.random() < prof["leak"] else 1.0
    return p


def main() -> None:
    rng = random.Random(11)
    truth = make_truth(rng, 60)
    (HERE / "predictions").mkdir(exist_ok=True)
    with (HERE / "truth.jsonl").open("w", encoding="utf-8") as f:
        for t in truth:
            f.write(json.dumps({k: v for k, v in t.items() if not k.startswith("_")}, ensure_ascii=False) + "\n")
    for m in MODELS:
        prof = PROFILES[m]
        lines = []
        for i, t in enumerate(truth):
            if prof["missing"] and i == 17:
                continue  # no output for this record
            if prof["invalid"] and i == 42:
                lines.append({"id": t["id"], "__raw__": "I'm sorry, I cannot extract personal data from this email."})
                continue
            lines.append(predict(rng, t, prof, m))
        # one line per record: {"id", "prediction": <the model's output>, "safety_score"}; the
        # refusal is stored as the raw string the model returned (valid JSON, not an object)
        with (HERE / "predictions" / f"{m}.jsonl").open("w", encoding="utf-8") as f:
            for row in lines:
                if "__raw__" in row:
                    out = {"id": row["id"], "prediction": row["__raw__"], "safety_score": 1.0}
                else:
                    safety = row.pop("safety_score")
                    rid = row.pop("id")
                    out = {"id": rid, "prediction": row, "safety_score": safety}
                f.write(json.dumps(out, ensure_ascii=False) + "\n")

if __name__ == "__main__":
    main()
