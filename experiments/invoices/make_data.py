"""Generate the invoices example: 60 invoices' line items and three models' extractions.

The data is made up by this project (deterministic, seed 11). Each invoice has 1–9 line items
(description, quantity, unit price, amount = quantity × unit price, delivery date). The models
make the errors real invoice extractors make:

- `gpt-4o`: nearly everything right; numbers and dates in other formats ("$1,200.00",
  "March 5, 2024"), which must still match; a few abbreviated descriptions; rarely a skipped
  line or unit price and amount swapped.
- `layout-ocr-v2`: an OCR + layout pipeline that reads only the first page (the first four line
  items) of long invoices, but reads what it sees almost perfectly — strong on matched pairs,
  poor entity recall.
- `mistral-7b`: finds most lines but adds the "Subtotal", "VAT" and "Shipping" rows as line
  items, swaps unit price and amount, misreads quantities, writes European number formats
  ("1.200,50", which does not parse as a number) and day-first dates.

Run from the repository root:  python experiments/invoices/make_data.py
"""

from __future__ import annotations

import csv
import io
import json
import random
from datetime import date, timedelta
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

HERE = Path(__file__).parent
N_INVOICES = 60
MODELS = ["gpt-4o", "layout-ocr-v2", "mistral-7b"]
LINES_PER_PAGE = 4  # the first page holds four line items
CATALOGUE = [
    ("Steel hex bolt M8 x 40", "0.18"), ("Hex nut M8 zinc plated", "0.06"), ("Flat washer 8 mm", "0.03"),
    ("Cordless drill 18V", "129.00"), ("Drill bit set HSS 19 pcs", "24.50"), ("Safety gloves size L", "4.75"),
    ("Hi-vis vest class 2", "6.90"), ("Copper pipe 15 mm x 3 m", "17.40"), ("PVC elbow 90° 32 mm", "1.15"),
    ("Cable ties 300 mm (100 pack)", "5.20"), ("LED panel 600x600 40W", "38.00"), ("Extension cord 10 m", "14.99"),
    ("Consulting hours – site survey", "95.00"), ("Installation labour (hour)", "62.50"), ("Pallet delivery", "45.00"),
    ("Printer paper A4 80g (box)", "23.80"), ("Toner cartridge TN-2420", "71.30"), ("Office chair ergonomic", "189.00"),
    ("Monitor arm dual", "54.00"), ("USB-C docking station", "149.00"), ("Laptop stand aluminium", "29.90"),
    ("Annual software licence (seat)", "240.00"), ("Cloud storage 1 TB (month)", "9.99"), ("Paint white matt 10 L", "42.00"),
]
ABBREVIATIONS = {"Steel hex bolt M8 x 40": "Hex bolt M8x40", "Installation labour (hour)": "Install labour",
                 "Consulting hours – site survey": "Consulting hrs site survey", "Cable ties 300 mm (100 pack)": "Cable ties 300mm x100"}


def money(x: Decimal) -> Decimal:
    return x.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)


def make_truth(rng: random.Random) -> list[dict]:
    invoices = []
    start = date(2024, 1, 8)
    for i in range(N_INVOICES):
        n_items = rng.choice([1, 2, 3, 3, 4, 4, 5, 6, 7, 8, 9])
        issued = start + timedelta(days=5 * i + rng.randint(0, 4))
        items = []
        for desc, price in rng.sample(CATALOGUE, n_items):
            qty = rng.choice([1, 1, 2, 3, 5, 10, 12, 20, 50, 100, 250])
            unit = Decimal(price)
            items.append({
                "description": desc,
                "quantity": qty,
                "unit_price": f"{unit:.2f}",
                "amount": f"{money(unit * qty):.2f}",
                "date": (issued - timedelta(days=rng.randint(0, 20))).isoformat(),
            })
        invoices.append({"id": f"INV-2024-{i + 1:04d}", "entities": items})
    return invoices


def us_money(s: str) -> str:
    return f"${Decimal(s):,.2f}"


def eu_money(s: str) -> str:
    whole, frac = f"{Decimal(s):,.2f}".split(".")
    return whole.replace(",", ".") + "," + frac


def long_date(iso: str) -> str:
    d = date.fromisoformat(iso)
    return d.strftime("%B %-d, %Y")


def day_first(iso: str) -> str:
    d = date.fromisoformat(iso)
    return d.strftime("%d/%m/%Y")  # read month-first by default: wrong whenever day ≤ 12 and ≠ month


def gpt(truth: list[dict], rng: random.Random) -> list[dict]:
    out = []
    for inv in truth:
        items = []
        for e in inv["entities"]:
            if rng.random() < 0.03:
                continue  # skipped line
            p = dict(e)
            if rng.random() < 0.3:
                p["amount"] = us_money(p["amount"])
            if rng.random() < 0.2:
                p["unit_price"] = float(p["unit_price"])
            if rng.random() < 0.25:
                p["date"] = long_date(p["date"])
            if rng.random() < 0.15:
                p["quantity"] = str(p["quantity"])
            if p["description"] in ABBREVIATIONS and rng.random() < 0.5:
                p["description"] = ABBREVIATIONS[p["description"]]
            if rng.random() < 0.03:
                p["unit_price"], p["amount"] = p["amount"], p["unit_price"]
            items.append(p)
        rng.shuffle(items)  # models do not keep the invoice's line order
        out.append({"id": inv["id"], "entities": items})
    return out


def layout_ocr(truth: list[dict], rng: random.Random) -> list[dict]:
    out = []
    for inv in truth:
        items = []
        for e in inv["entities"][:LINES_PER_PAGE]:  # first page only
            p = dict(e)
            if rng.random() < 0.04:
                p["quantity"] = int(str(p["quantity"]).replace("1", "7", 1)) if "1" in str(p["quantity"]) else p["quantity"]
            items.append(p)
        out.append({"id": inv["id"], "entities": items})
    return out


def mistral(truth: list[dict], rng: random.Random) -> list[dict]:
    out = []
    for k, inv in enumerate(truth):
        if k % 29 == 28:
            continue  # the request timed out: no prediction for this invoice
        items = []
        for e in inv["entities"]:
            if rng.random() < 0.1:
                continue
            p = dict(e)
            r = rng.random()
            if r < 0.12:
                p["unit_price"], p["amount"] = p["amount"], p["unit_price"]
            elif r < 0.22:
                p["amount"] = eu_money(p["amount"])
            elif r < 0.28:
                p["quantity"] = p["quantity"] * 10
            if rng.random() < 0.3:
                p["date"] = day_first(p["date"])
            if rng.random() < 0.1:
                p["description"] = p["description"].upper()
            if rng.random() < 0.05:
                del p["date"]
            items.append(p)
        subtotal = sum(Decimal(e["amount"]) for e in inv["entities"])
        if rng.random() < 0.5:
            items.append({"description": "Subtotal", "quantity": 1, "unit_price": f"{subtotal:.2f}", "amount": f"{subtotal:.2f}"})
        if rng.random() < 0.35:
            vat = money(subtotal * Decimal("0.2"))
            items.append({"description": "VAT 20%", "quantity": 1, "unit_price": f"{vat:.2f}", "amount": f"{vat:.2f}"})
        if rng.random() < 0.1:
            items.append("Shipping: see page 2")  # malformed output: not an object
        rng.shuffle(items)
        out.append({"id": inv["id"], "entities": items})
    return out


def write_jsonl(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


def make_metadata(truth: list[dict]) -> list[dict]:
    """Each invoice's `layout` (one-page | multi-page) and `customer`.

    `layout` follows from the invoice itself: one page holds four line items, so an invoice with
    more of them runs onto a second page (which layout-ocr-v2 never reads). Added after the
    predictions, which are left as they were. Each customer buys from suppliers whose invoices look
    alike: within each layout, invoices are ordered by their number of line items (ties in a seeded
    random order) and dealt out, in that order, to customers holding 1–4 invoices each.
    """
    rng = random.Random(13)
    lines = {inv["id"]: len(inv["entities"]) for inv in truth}
    layout = {i: "one-page" if n <= LINES_PER_PAGE else "multi-page" for i, n in lines.items()}
    customer: dict[str, str] = {}
    for kind in ("one-page", "multi-page"):
        ids = [inv["id"] for inv in truth if layout[inv["id"]] == kind]
        noise = {i: rng.random() for i in ids}
        order = sorted(ids, key=lambda i: (lines[i], noise[i]))
        while order:
            size = rng.choice([1, 2, 3, 3, 4])
            name = f"CU-{len(set(customer.values())) + 1:02d}"
            for i in order[:size]:
                customer[i] = name
            order = order[size:]
    return [{"id": inv["id"], "layout": layout[inv["id"]], "customer": customer[inv["id"]]} for inv in truth]


def metadata_csv() -> str:
    """metadata.csv as the generator writes it."""
    out = io.StringIO()
    w = csv.DictWriter(out, fieldnames=["id", "layout", "customer"], lineterminator="\n")
    w.writeheader()
    w.writerows(make_metadata(make_truth(random.Random(11))))
    return out.getvalue()


def main() -> None:
    rng = random.Random(11)
    truth = make_truth(rng)
    write_jsonl(HERE / "truth.jsonl", truth)
    write_jsonl(HERE / "predictions" / "gpt-4o.jsonl", gpt(truth, random.Random(1)))
    write_jsonl(HERE / "predictions" / "layout-ocr-v2.jsonl", layout_ocr(truth, random.Random(2)))
    write_jsonl(HERE / "predictions" / "mistral-7b.jsonl", mistral(truth, random.Random(3)))
    (HERE / "metadata.csv").write_text(metadata_csv(), encoding="utf-8", newline="")


if __name__ == "__main__":
    main()
