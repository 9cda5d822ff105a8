"""Fuzz: 100,000 random and mutated model outputs through `structured`, `toolcalls` and `json`.

Model output is data: whatever a model wrote (truncated JSON, swapped brackets, Python calls
with `__import__`, 5,000-deep nesting, NaN, bytes, None) must be *counted*, never raised. The
outputs are generated from a fixed seed (reproducible) and scored in batches through the core
scorers, the path the CLI takes, so the whole run stays well under a minute.
"""

from __future__ import annotations

import json
import random
import string

import pytest

from extracteval.tasks.json.semantics import JsonPredictions, score_json
from extracteval.tasks.structured.semantics import score_structured
from extracteval.tasks.toolcalls.semantics import score_toolcalls

N = 100_000
SEED = 20261122

REF_DOC = {"customer": {"name": "Ada", "vip": True}, "order_id": "A-1", "items": [{"sku": "X", "qty": 2, "price": 9.5}], "note": None}
REF_CALLS = [{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}, {"name": "get_time", "arguments": {"tz": "CET"}}]
SEEDS = [
    json.dumps(REF_DOC),
    json.dumps(REF_CALLS),
    json.dumps({"tool_calls": [{"type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]}),
    '[get_weather(city="Paris", days=3), get_time(tz="CET")]',
    "get_weather(city=__import__('os').system('echo pwned'), days=eval('1+1'))",
    '```json\n{"order_id": "A-1", "items": [{"sku": "X"}]}\n```',
    'Sure! Here is the JSON: {"order_id": "A-1", "order_id": "B-2", "customer": {"name": "<script>alert(1)</script>"}}',
    '{"a": NaN, "b": Infinity, "c": -Infinity}',
]
# deep documents cost ~0.1 s each (linear work on 10k characters): a fixed few hundred of them
DEEP = ["[" * 5000 + "]" * 5000, '{"k": ' * 3000 + "1" + "}" * 3000, "[" * 10_000, '{"k": [' * 2000]
N_DEEP = 20
ALPHABET = string.printable + "{}[]():,\"'\\\u00e9\u4e2d\U0001f600\x00"


def _mutate(rng: random.Random, s: str) -> str:
    op = rng.randrange(7)
    if not s:
        return rng.choice(SEEDS)
    i = rng.randrange(len(s))
    if op == 0:  # truncate
        return s[:i]
    if op == 1:  # insert random characters
        return s[:i] + "".join(rng.choice(ALPHABET) for _ in range(rng.randrange(1, 6))) + s[i:]
    if op == 2:  # delete a slice
        return s[:i] + s[i + rng.randrange(1, 20):]
    if op == 3:  # swap brackets / quotes
        table = str.maketrans({"{": "[", "[": "{", "}": "]", "]": "}", '"': "'"})
        j = min(len(s), i + rng.randrange(1, 40))
        return s[:i] + s[i:j].translate(table) + s[j:]
    if op == 4:  # splice two seeds
        other = rng.choice(SEEDS)
        return s[:i] + other[rng.randrange(len(other)):]
    if op == 5:  # duplicate a slice
        j = min(len(s), i + rng.randrange(1, 30))
        return s[:j] + s[i:j] + s[j:]
    return s[::-1] if rng.random() < 0.1 else s.upper()


def _random_value(rng: random.Random, depth: int = 0):
    kind = rng.randrange(9 if depth < 4 else 6)
    if kind == 0:
        return None
    if kind == 1:
        return rng.random() < 0.5
    if kind == 2:
        return rng.choice([0, -1, 2**70, 1.5, float("nan"), float("inf")])
    if kind == 3:
        return "".join(rng.choice(ALPHABET) for _ in range(rng.randrange(12)))
    if kind == 4:
        return rng.choice(["get_weather", "get_time", "", "../etc/passwd", "__import__"])
    if kind == 5:
        return b"\xff\xfe raw bytes"
    if kind == 6:
        return [_random_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    keys = ["name", "arguments", "order_id", "items", "customer", "function", "tool_calls", "", "a.b", "[0]"]
    return {rng.choice(keys): _random_value(rng, depth + 1) for _ in range(rng.randrange(4))}


def _outputs() -> list:
    rng = random.Random(SEED)
    out: list = []
    for n in range(N):
        if n < N_DEEP:  # deep nesting, mutated (truncated, spliced…)
            out.append(_mutate(rng, rng.choice(DEEP)))
            continue
        r = rng.random()
        if r < 0.6:  # a seed with 1-3 mutations
            s = rng.choice(SEEDS)
            for _ in range(rng.randrange(1, 4)):
                s = _mutate(rng, s)
            out.append(s)
        elif r < 0.75:
            out.append("".join(rng.choice(ALPHABET) for _ in range(rng.randrange(40))))
        else:  # already-parsed values of any shape (a JSON predictions file holds these)
            out.append(_random_value(rng))
    return out


@pytest.fixture(scope="module")
def outputs() -> list:
    return _outputs()


def _by_id(values: list) -> dict[str, object]:
    return {f"r{i:06d}": v for i, v in enumerate(values)}


def test_structured_counts_every_fuzzed_output(outputs) -> None:
    preds = _by_id(outputs)
    result = score_structured({rid: REF_DOC for rid in preds}, {"fuzz": preds})
    counts = result.models["fuzz"].counts
    assert counts.records == N
    assert 0 < counts.valid < N  # some mutated outputs still parse, most do not


def test_toolcalls_counts_every_fuzzed_output(outputs) -> None:
    preds = _by_id(outputs)
    result = score_toolcalls({rid: REF_CALLS for rid in preds}, {"fuzz": preds})
    counts = result.models["fuzz"].counts
    assert counts.records == N
    assert 0 < counts.valid_records < N


def test_json_scores_every_fuzzed_prediction(outputs) -> None:
    # the json task gets parsed values (its readers parse the files): a string output is an
    # invalid prediction, an object of any shape is compared key by key
    rng = random.Random(SEED + 1)
    values = []
    for v in outputs:
        if isinstance(v, str):
            try:
                v = json.loads(v)
            except (ValueError, RecursionError):
                pass
        values.append(v if rng.random() < 0.9 or isinstance(v, dict) else {"customer": v})
    preds = _by_id(values)
    truth = {rid: REF_DOC for rid in preds}
    result = score_json(truth, [JsonPredictions(name="fuzz", records=preds)])
    model = result.models["fuzz"].to_dict()
    assert model["n_records"] == len(preds) == N
    assert 0 < model["invalid_predictions"] < len(preds)
    for metric in ("completeness", "hallucination", "accuracy"):
        assert 0.0 <= model[metric] <= 1.0
