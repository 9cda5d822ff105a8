"""Readers for the `structured` and `toolcalls` tasks.

* BFCL files (question, possible answer, model result) in the v1 (2024) and v4 layouts. They are
  JSON Lines even when named `.json`; a JSON array of the same objects is accepted too.
  v1 differences handled here: `question` is a plain string, `function` an object or a list, and
  `ground_truth` an object whose keys may carry a suffix (`"spotify.play_1"`, `"calculate_bmi 1"`)
  that is not part of the function name; v4's `ground_truth` is a list of one-key objects.
* JSONL (or JSON array / CSV / Parquet through `read_table`) records for `structured` and generic
  `toolcalls` scoring: `id` plus a reference column (`reference`, `expected`, `truth`,
  `ground_truth`, `calls`) or an output column (`output`, `prediction`, `response`, `result`).

Every error is an `InputError` naming the file, the line or record id, the key, what was expected
and what was found.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from extracteval.errors import InputError
from extracteval.io.json_inputs import _loads
from extracteval.io.tables import read_text

__all__ = [
    "read_json_records",
    "BfclQuestion",
    "load_bfcl_questions",
    "load_bfcl_answers",
    "load_bfcl_results",
    "load_records",
    "REFERENCE_KEYS",
    "OUTPUT_KEYS",
]

REFERENCE_KEYS = ("reference", "expected", "truth", "ground_truth", "calls", "answer")
OUTPUT_KEYS = ("output", "prediction", "response", "result", "completion")


def read_json_records(path: str | Path) -> list[tuple[int, Any]]:
    """(line number, object) for each record of a JSON Lines file or a top-level JSON array.

    Blank lines are skipped. A JSON array file gives record positions (1-based) instead of lines.
    """
    p = Path(path)
    text = read_text(p)
    stripped = text.lstrip()
    if not stripped:
        raise InputError(f"{p}: the file is empty; expected JSON Lines records.")
    if stripped.startswith("["):
        try:
            obj = _loads(text)
        except ValueError:
            obj = None  # a JSONL file whose first record is an array: fall through to lines
        if isinstance(obj, list):
            if not obj:
                raise InputError(f"{p}: the file has no records (an empty JSON array).")
            return list(enumerate(obj, start=1))
    out = []
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            out.append((n, _loads(line)))  # iterative fallback: 10,000-deep JSON is valid JSON
        except ValueError as e:
            raise InputError(f"{p}: line {n}: not valid JSON ({e}); expected one JSON object per line.") from None
    if not out:
        raise InputError(f"{p}: the file has no records.")
    return out


def _record_id(p: Path, line: int, rec: Any, what: str) -> str:
    if not isinstance(rec, dict):
        raise InputError(f"{p}: line {line}: expected a JSON object ({what}), but found {type(rec).__name__}.")
    if "id" not in rec:
        raise InputError(f"{p}: line {line}: the record has no \"id\" key; {what} records need one (found keys {sorted(rec)[:8]}).")
    rid = rec["id"]
    if not isinstance(rid, (str, int)) or isinstance(rid, bool):
        raise InputError(f"{p}: line {line}: \"id\" must be a string or an integer, but found {rid!r:.60}.")
    return str(rid)


@dataclass(frozen=True, kw_only=True)
class BfclQuestion:
    """One BFCL test entry: its id, category and function descriptions (always a list)."""

    id: str
    category: str
    functions: list[dict[str, Any]]
    source: str


def load_bfcl_questions(path: str | Path) -> dict[str, BfclQuestion]:
    """A BFCL question file (v1 or v4) → id → `BfclQuestion`."""
    from extracteval.core.bfcl import category_of

    p = Path(path)
    out: dict[str, BfclQuestion] = {}
    for line, rec in read_json_records(p):
        rid = _record_id(p, line, rec, "BFCL question")
        if rid in out:
            raise InputError(f"{p}: line {line}: id {rid!r} appears twice.")
        fn = rec.get("function")
        functions = [fn] if isinstance(fn, dict) else fn
        if not isinstance(functions, list) or not functions or not all(isinstance(f, dict) and "name" in f for f in functions):
            raise InputError(
                f"{p}: line {line} (id {rid}): \"function\" must be a function description object or a non-empty list of them "
                f"(each with \"name\" and \"parameters\"), but found {json.dumps(fn)[:80] if fn is not None else 'nothing'}."
            )
        for f in functions:
            params = f.get("parameters")
            if not isinstance(params, dict) or not isinstance(params.get("properties", {}), dict):
                raise InputError(f"{p}: line {line} (id {rid}): function {f['name']!r} has no \"parameters\" object with \"properties\".")
        out[rid] = BfclQuestion(id=rid, category=category_of(rid), functions=functions, source=str(p))
    return out


_SUFFIX = re.compile(r"[ _]\d+$")


def _answer_list(p: Path, line: int, rid: str, gt: Any, question: BfclQuestion | None) -> list[dict[str, dict[str, list[Any]]]]:
    names = {f["name"] for f in question.functions} if question else set()
    if isinstance(gt, dict):  # v1: {name[ suffix]: {param: [values]}}
        items = []
        for key, params in gt.items():
            name = key
            if names and key not in names:
                stripped = _SUFFIX.sub("", key)
                if stripped in names:
                    name = stripped
            items.append({name: params})
    elif isinstance(gt, list):
        items = gt
    else:
        raise InputError(f"{p}: line {line} (id {rid}): \"ground_truth\" must be a list of {{function: {{param: [values]}}}} objects (v4) or an object (v1), but found {type(gt).__name__}.")
    for k, item in enumerate(items):
        if not isinstance(item, dict) or len(item) != 1:
            raise InputError(f"{p}: line {line} (id {rid}): ground_truth[{k}] must be an object with exactly one function name, but found {json.dumps(item)[:80]}.")
        name, params = next(iter(item.items()))
        if not isinstance(params, dict):
            raise InputError(f"{p}: line {line} (id {rid}): ground_truth[{k}].{name} must map parameters to lists of acceptable values, but found {type(params).__name__}.")
        for param, values in params.items():
            if not isinstance(values, list):
                raise InputError(
                    f"{p}: line {line} (id {rid}): ground_truth[{k}].{name}.{param} must be a list of acceptable values "
                    f"(\"\" marks an optional parameter), but found {json.dumps(values)[:60]}."
                )
        if names and name not in names:
            raise InputError(f"{p}: line {line} (id {rid}): ground_truth[{k}] names function {name!r}, which the question file does not describe (it has {sorted(names)}).")
    return items


def load_bfcl_answers(path: str | Path, questions: dict[str, BfclQuestion] | None = None) -> dict[str, list[dict[str, dict[str, list[Any]]]]]:
    """A BFCL possible-answer file (v1 or v4) → id → list of `{function: {param: [acceptable values]}}`.

    With `questions`, v1 answer keys with an index suffix are mapped back to function names and
    every answer must name a described function.
    """
    p = Path(path)
    out: dict[str, list[dict[str, dict[str, list[Any]]]]] = {}
    for line, rec in read_json_records(p):
        rid = _record_id(p, line, rec, "BFCL possible-answer")
        if rid in out:
            raise InputError(f"{p}: line {line}: id {rid!r} appears twice.")
        if "ground_truth" not in rec:
            raise InputError(f"{p}: line {line} (id {rid}): no \"ground_truth\" key; is this a possible_answer file?")
        out[rid] = _answer_list(p, line, rid, rec["ground_truth"], questions.get(rid) if questions else None)
    return out


def load_bfcl_results(path: str | Path) -> dict[str, Any]:
    """A BFCL model result file → id → the raw `result` value (decoded later, failures counted)."""
    p = Path(path)
    out: dict[str, Any] = {}
    for line, rec in read_json_records(p):
        rid = _record_id(p, line, rec, "BFCL result")
        if rid in out:
            raise InputError(f"{p}: line {line}: id {rid!r} appears twice.")
        if "result" not in rec:
            raise InputError(f"{p}: line {line} (id {rid}): no \"result\" key; expected BFCL result records {{\"id\", \"result\"}}.")
        out[rid] = rec["result"]
    return out


def load_records(path: str | Path, keys: Iterable[str], what: str, *, id_key: str = "id") -> dict[str, Any]:
    """id → value of the first present key among `keys`, from JSONL / JSON / CSV / Parquet.

    Values are kept as read: strings stay strings (a structured model's raw output), objects stay
    objects. Missing keys and duplicate ids are errors naming the file and line.
    """
    p = Path(path)
    keys = tuple(keys)
    if p.suffix.lower() in (".jsonl", ".ndjson", ".json"):
        recs = read_json_records(p)
    else:
        from extracteval.io.tables import read_table

        frame = read_table(p)
        recs = [(i + 2, {k: (None if v is None else v) for k, v in row.items()}) for i, row in enumerate(frame.to_dict(orient="records"))]
    out: dict[str, Any] = {}
    for line, rec in recs:
        if not isinstance(rec, dict):
            raise InputError(f"{p}: line {line}: expected a JSON object with \"{id_key}\" and one of {', '.join(keys)}, but found {type(rec).__name__}.")
        if id_key not in rec:
            raise InputError(f"{p}: line {line}: the record has no \"{id_key}\" key (found keys {sorted(rec)[:8]}).")
        rid = str(rec[id_key])
        key = next((k for k in keys if k in rec), None)
        if key is None:
            raise InputError(f"{p}: line {line} (id {rid}): no {what} key; expected one of {', '.join(keys)} (found keys {sorted(rec)[:8]}).")
        if rid in out:
            raise InputError(f"{p}: line {line}: id {rid!r} appears twice.")
        out[rid] = rec[key]
    return out
