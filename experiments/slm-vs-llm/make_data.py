"""Generate the slm-vs-llm example: JSON generation and tool calling, three models.

Deterministic (fixed seed); run `python experiments/slm-vs-llm/make_data.py` to regenerate.
The data imitate what the three models really do wrong:

* `gpt-4o` (hosted LLM): almost always right; now and then a paraphrased value or a reordered list.
* `llama-3.1-8b` (local, mid-size): wraps JSON in ```json fences or adds a sentence before it,
  sometimes numbers as strings, misses optional fields, swaps parallel calls around.
* `qwen2.5-1.5b` (small local SLM): truncated / single-quoted JSON, wrong argument types
  ("3" for 3), missing required arguments, wrong function names, Python-call syntax instead of
  JSON, malformed argument strings.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

HERE = Path(__file__).parent
N_STRUCTURED = 60
N_TOOLCALLS = 60

FIRST = ["Alice", "Bob", "Chen", "Dana", "Emeka", "Fatima", "Giulia", "Hiro", "Ines", "Jonas", "Kavya", "Luis"]
LAST = ["Martin", "Okafor", "Schmidt", "Tanaka", "Rossi", "Nguyen", "Kowalski", "Haddad", "Silva", "Berg"]
CITIES = ["Paris", "Berlin", "Lagos", "Osaka", "Lisbon", "Toronto", "Nairobi", "Oslo", "Lima", "Pune"]
SKUS = ["A-100", "B-220", "C-310", "D-415", "E-520", "F-630"]
CURRENCIES = ["EUR", "USD", "GBP", "JPY", "CHF"]


def structured_records(rng: random.Random) -> list[dict]:
    out = []
    for i in range(N_STRUCTURED):
        n_items = rng.randint(1, 3)
        doc = {
            "customer": {"name": f"{rng.choice(FIRST)} {rng.choice(LAST)}", "city": rng.choice(CITIES), "vip": rng.random() < 0.3},
            "order_id": f"ORD-{1000 + i}",
            "currency": rng.choice(CURRENCIES),
            "items": [{"sku": rng.choice(SKUS), "qty": rng.randint(1, 5), "price": round(rng.uniform(2, 200), 2)} for _ in range(n_items)],
        }
        if rng.random() < 0.4:
            doc["note"] = rng.choice(["deliver after 5pm", "gift wrap", "leave at reception"])
        out.append({"id": f"s{i:03d}", "reference": doc})
    return out


def _dump(doc: dict, rng: random.Random) -> str:
    return json.dumps(doc, ensure_ascii=False, indent=None if rng.random() < 0.5 else 2)


def structured_output(model: str, doc: dict, rng: random.Random) -> str:
    d = json.loads(json.dumps(doc))
    r = rng.random()
    if model == "gpt-4o":
        if r < 0.06:
            d["customer"]["name"] = d["customer"]["name"].split()[0]
        elif r < 0.10 and len(d["items"]) > 1:
            d["items"].reverse()
        return _dump(d, rng)
    if model == "llama-3.1-8b":
        if r < 0.12:
            d["items"][0]["qty"] = str(d["items"][0]["qty"])
        elif r < 0.22:
            d.pop("note", None)
            d["customer"].pop("vip", None)
        elif r < 0.28 and len(d["items"]) > 1:
            d["items"].reverse()
        text = _dump(d, rng)
        w = rng.random()
        if w < 0.25:
            return f"```json\n{text}\n```"
        if w < 0.35:
            return f"Here is the extracted order:\n{text}"
        return text
    # qwen2.5-1.5b
    if r < 0.12:
        return _dump(d, rng)[: rng.randint(10, 40)]  # truncated generation
    if r < 0.18:
        return str(d)  # Python repr: single quotes, True/False
    if r < 0.30:
        d["items"][0]["price"] = str(d["items"][0]["price"])
        d["customer"]["vip"] = "yes" if d["customer"]["vip"] else "no"
    elif r < 0.42:
        d.pop("currency")
        d["items"] = d["items"][:1]
    elif r < 0.50:
        d["customer"] = d["customer"]["name"]  # flattened the nested object
    text = _dump(d, rng)
    return f"```json\n{text}\n```" if rng.random() < 0.3 else text


def toolcall_records(rng: random.Random) -> list[dict]:
    out = []
    for i in range(N_TOOLCALLS):
        kind = i % 5
        if kind == 0:
            calls = [{"name": "get_weather", "arguments": {"city": rng.choice(CITIES), "unit": rng.choice(["celsius", "fahrenheit"])}}]
        elif kind == 1:
            a, b = rng.sample(CITIES, 2)
            calls = [{"name": "search_flights", "arguments": {"origin": a, "destination": b, "date": f"2025-0{rng.randint(1, 9)}-1{rng.randint(0, 9)}", "passengers": rng.randint(1, 4)}}]
        elif kind == 2:
            calls = [{"name": "convert_currency", "arguments": {"amount": rng.choice([10, 25.5, 100, 1250]), "from": rng.choice(CURRENCIES), "to": rng.choice(CURRENCIES)}}]
        elif kind == 3:
            calls = [{"name": "create_event", "arguments": {"title": rng.choice(["Standup", "Design review", "1:1", "Retro"]), "start": f"2025-03-{rng.randint(10, 28)}T{rng.randint(8, 17):02d}:00",
                                                            "attendees": rng.sample(["ana@x.io", "ben@x.io", "chi@x.io", "dev@x.io"], 2)}}]
        else:  # parallel: weather in two cities
            c1, c2 = rng.sample(CITIES, 2)
            calls = [{"name": "get_weather", "arguments": {"city": c1, "unit": "celsius"}}, {"name": "get_weather", "arguments": {"city": c2, "unit": "celsius"}}]
        out.append({"id": f"t{i:03d}", "calls": calls})
    return out


def _py_call(c: dict) -> str:
    return f"{c['name']}(" + ", ".join(f"{k}={v!r}" for k, v in c["arguments"].items()) + ")"


def toolcall_output(model: str, calls: list[dict], rng: random.Random) -> object:
    cs = json.loads(json.dumps(calls))
    r = rng.random()
    if model == "gpt-4o":
        if r < 0.05:
            cs[0]["arguments"]["city" if "city" in cs[0]["arguments"] else next(iter(cs[0]["arguments"]))] = "Paris, France"
        if len(cs) > 1 and rng.random() < 0.5:
            cs.reverse()
        return {"tool_calls": [{"type": "function", "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])}} for c in cs]}
    if model == "llama-3.1-8b":
        if r < 0.10:
            k = next((k for k, v in cs[0]["arguments"].items() if isinstance(v, (int, float))), None)
            if k:
                cs[0]["arguments"][k] = str(cs[0]["arguments"][k])
        elif r < 0.18:
            cs[0]["arguments"].pop(next(reversed(cs[0]["arguments"])))
        elif r < 0.24 and len(cs) > 1:
            cs = cs[:1]
        if len(cs) > 1:
            cs.reverse()
        text = json.dumps(cs if len(cs) > 1 else cs[0])
        return f"```json\n{text}\n```" if rng.random() < 0.3 else text
    # qwen2.5-1.5b
    if r < 0.10:
        broken = "{" + ", ".join(f'"{k}": ' for k in cs[0]["arguments"])  # arguments string cut off mid-object
        return json.dumps({"name": cs[0]["name"], "arguments": broken})  # valid envelope, malformed argument JSON
    if r < 0.20:
        cs[0]["name"] = cs[0]["name"].replace("_", "")  # wrong function name
    elif r < 0.34:
        k = next(iter(cs[0]["arguments"]))
        cs[0]["arguments"].pop(k)  # missing required argument
    elif r < 0.46:
        for c in cs:
            for k, v in list(c["arguments"].items()):
                if isinstance(v, (int, float)) and not isinstance(v, bool):
                    c["arguments"][k] = str(v)  # wrong type
    if rng.random() < 0.35:
        return "[" + ", ".join(_py_call(c) for c in cs) + "]"  # Python-call syntax
    return json.dumps([{"name": c["name"], "arguments": c["arguments"]} for c in cs])


def write_jsonl(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")


def main() -> None:
    rng = random.Random(4004)
    s_truth = structured_records(rng)
    t_truth = toolcall_records(rng)
    write_jsonl(HERE / "structured" / "truth.jsonl", s_truth)
    write_jsonl(HERE / "toolcalls" / "truth.jsonl", t_truth)
    for model in ("gpt-4o", "llama-3.1-8b", "qwen2.5-1.5b"):
        mr = random.Random(f"{model}-4004")
        write_jsonl(HERE / "structured" / f"{model}.jsonl", [{"id": r["id"], "output": structured_output(model, r["reference"], mr)} for r in s_truth])
        write_jsonl(HERE / "toolcalls" / f"{model}.jsonl", [{"id": r["id"], "output": toolcall_output(model, r["calls"], mr)} for r in t_truth])


if __name__ == "__main__":
    main()
