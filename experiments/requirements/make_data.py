"""Generate the requirements example: 60 software requirements annotated with ReqFlow's eight
span tags and three models' predicted spans.

The data is made up by this project (deterministic, seed 11). The errors are the ones span
annotators and LLMs make on requirements: boundary slips (a leading "The" on the actor, "If"
dropped from a condition, the object swallowed into the action), type confusions (a
precondition tagged as a condition, a system response as an action, a constraint as a
condition), missed exceptions and constraints, and spurious spans on words that are not
requirements content.

Run from the repository root:  python experiments/requirements/make_data.py
"""

from __future__ import annotations

import json
import random
from pathlib import Path

HERE = Path(__file__).parent
TAGS = ["Main_actor", "Entity", "Action", "System_response", "Condition", "Constraint", "Precondition", "Exception"]
MODELS = ["qwen3-4b-pipeline", "llama-3.1-8b", "keyword-baseline"]

ACTORS = ["administrator", "user", "operator", "customer", "auditor", "system", "billing service", "support agent", "scheduler"]
ACTIONS = [
    ("delete", "inactive accounts"), ("export", "the monthly report"), ("approve", "pending invoices"),
    ("reset", "user passwords"), ("archive", "closed tickets"), ("update", "the shipping address"),
    ("notify", "the account owner"), ("encrypt", "stored credentials"), ("lock", "the account"),
    ("validate", "the uploaded file"), ("schedule", "nightly backups"), ("cancel", "the subscription"),
]
CONDITIONS = [
    "If the session expires", "When a payment fails", "If the disk usage exceeds 90%", "When the order is shipped",
    "If three login attempts fail", "When a new user registers",
]
PRECONDITIONS = ["the user is logged in", "the order has been confirmed", "two-factor authentication is enabled", "the report has been generated"]
CONSTRAINTS = ["within 2 seconds", "at most once per day", "in under 500 ms", "for at least 7 years", "without downtime"]
RESPONSES = ["display an error message", "send a confirmation email", "log the event", "show a warning banner", "return a receipt"]
EXCEPTIONS = ["unless the account is suspended", "except during maintenance windows", "unless an administrator overrides it"]


class Builder:
    """Concatenates text pieces and records character offsets of tagged ones."""

    def __init__(self) -> None:
        self.text = ""
        self.spans: list[dict] = []

    def add(self, piece: str, tag: str | None = None) -> None:
        if tag:
            self.spans.append({"start": len(self.text), "end": len(self.text) + len(piece), "tag": tag})
        self.text += piece


def make_requirement(rng: random.Random) -> Builder:
    b = Builder()
    actor = rng.choice(ACTORS)
    verb, obj = rng.choice(ACTIONS)
    form = rng.randrange(5)
    if form == 0:  # If X, the A shall V O [constraint].
        b.add(rng.choice(CONDITIONS), "Condition")
        b.add(", the ")
        b.add(actor, "Main_actor")
        b.add(" shall ")
        b.add(verb, "Action")
        b.add(" ")
        b.add(obj, "Entity")
        if rng.random() < 0.5:
            b.add(" ")
            b.add(rng.choice(CONSTRAINTS), "Constraint")
        b.add(".")
    elif form == 1:  # Given that P, the A can V O [exception].
        b.add("Given that ")
        b.add(rng.choice(PRECONDITIONS), "Precondition")
        b.add(", the ")
        b.add(actor, "Main_actor")
        b.add(" can ")
        b.add(verb, "Action")
        b.add(" ")
        b.add(obj, "Entity")
        if rng.random() < 0.6:
            b.add(" ")
            b.add(rng.choice(EXCEPTIONS), "Exception")
        b.add(".")
    elif form == 2:  # The A shall be able to V O C.
        b.add("The ")
        b.add(actor, "Main_actor")
        b.add(" shall be able to ")
        b.add(verb, "Action")
        b.add(" ")
        b.add(obj, "Entity")
        b.add(" ")
        b.add(rng.choice(CONSTRAINTS), "Constraint")
        b.add(".")
    elif form == 3:  # When X, the system shall R.
        b.add(rng.choice(CONDITIONS), "Condition")
        b.add(", the ")
        b.add("system", "Main_actor")
        b.add(" shall ")
        b.add(rng.choice(RESPONSES), "System_response")
        b.add(".")
    else:  # The A must V O; otherwise the system shall R [exception].
        b.add("The ")
        b.add(actor, "Main_actor")
        b.add(" must ")
        b.add(verb, "Action")
        b.add(" ")
        b.add(obj, "Entity")
        b.add("; otherwise the system shall ")
        b.add(rng.choice(RESPONSES), "System_response")
        if rng.random() < 0.5:
            b.add(" ")
            b.add(rng.choice(EXCEPTIONS), "Exception")
        b.add(".")
    return b


# (boundary slip, type error, miss) probabilities per model and tag family; plus spurious rate
PROFILES = {
    "qwen3-4b-pipeline": {"slip": 0.14, "type": 0.04, "miss": 0.04, "spurious": 0.10},
    "llama-3.1-8b": {"slip": 0.22, "type": 0.12, "miss": 0.08, "spurious": 0.25},
    "keyword-baseline": {"slip": 0.05, "type": 0.03, "miss": 0.30, "spurious": 0.45},
}
CONFUSED = {
    "Precondition": "Condition", "Condition": "Precondition", "System_response": "Action", "Action": "System_response",
    "Constraint": "Condition", "Exception": "Condition", "Entity": "Main_actor", "Main_actor": "Entity",
}
HARD = {"Exception": 2.0, "Constraint": 1.5, "Precondition": 1.5}  # rarer tags are missed more often


def slip(text: str, span: dict, rng: random.Random) -> dict:
    s, e = span["start"], span["end"]
    words = text[s:e].split(" ")
    choice = rng.randrange(4)
    if choice == 0 and s >= 4 and text[s - 4 : s].lower() == "the ":  # include the article
        s -= 4
    elif choice == 1 and len(words) > 1:  # drop the first word ("If", "inactive")
        s += len(words[0]) + 1
    elif choice == 2 and len(words) > 1:  # drop the last word
        e -= len(words[-1]) + 1
    else:  # run on to the end of the next word
        nxt = text.find(" ", e + 1)
        stop = text.find(".", e)
        e = min(x for x in (nxt, stop, len(text)) if x > e) if e < len(text) - 1 else e
    return {"start": s, "end": max(e, s + 1), "tag": span["tag"]}


def predict(text: str, gold: list[dict], profile: dict, model: str, rng: random.Random) -> list[dict]:
    out = []
    for span in gold:
        tag = span["tag"]
        r = rng.random()
        miss = profile["miss"] * HARD.get(tag, 1.0)
        if model == "keyword-baseline" and tag in ("Condition", "Precondition", "Exception", "Constraint"):
            miss *= 1.8
        if r < miss:
            continue
        new = dict(span)
        if rng.random() < profile["slip"]:
            new = slip(text, span, rng)
        if rng.random() < profile["type"] * (1.5 if tag in CONFUSED else 1.0):
            new["tag"] = CONFUSED.get(tag, rng.choice(TAGS))
        out.append(new)
    if rng.random() < profile["spurious"]:
        words = [(i, i + len(w)) for i, w in _words(text) if w.lower() in ("shall", "must", "can", "system", "able")]
        if words:
            s, e = rng.choice(words)
            out.append({"start": s, "end": e, "tag": rng.choice(["Action", "Entity", "Main_actor"])})
    rng.shuffle(out)  # models emit spans in any order
    return out


def _words(text: str):
    i = 0
    for w in text.replace(",", " ").replace(".", " ").replace(";", " ").split(" "):
        if w:
            yield text.index(w, i), w
            i = text.index(w, i) + len(w)


def main() -> None:
    rng = random.Random(11)
    docs = []
    for i in range(1, 61):
        b = make_requirement(rng)
        docs.append({"id": f"REQ-{i:03d}", "text": b.text, "gold": b.spans})
    (HERE / "predictions").mkdir(exist_ok=True)
    with open(HERE / "truth.jsonl", "w", encoding="utf-8") as fh:
        for d in docs:
            fh.write(json.dumps(d, ensure_ascii=False) + "\n")
    for model in MODELS:
        mrng = random.Random(f"{model}-11")
        with open(HERE / "predictions" / f"{model}.jsonl", "w", encoding="utf-8") as fh:
            for d in docs:
                pred = predict(d["text"], d["gold"], PROFILES[model], model, mrng)
                fh.write(json.dumps({"id": d["id"], "pred": pred}, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
