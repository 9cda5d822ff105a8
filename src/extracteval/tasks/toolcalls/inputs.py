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
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from extracteval.io.record_keys import OUTPUT_KEYS
from extracteval.errors import InputError
from extracteval.io.json_text import read_record_file
from extracteval.io.keyed_chunks import load_records  # noqa: F401 - the task's reader of whole files

__all__ = [
    "BfclQuestion",
    "load_bfcl_questions",
    "load_bfcl_answers",
    "load_bfcl_results",
    "BfclWarning",
    "BfclFiles",
    "load_bfcl_entries",
    "load_records",
    "REFERENCE_KEYS",
    "OUTPUT_KEYS",
]

REFERENCE_KEYS = ("reference", "expected", "truth", "ground_truth", "calls", "answer")


def _record_id(p: Path, line: int, rec: Any, what: str) -> str:
    if not isinstance(rec, dict):
        raise InputError(f"{p}: line {line}: expected a JSON object ({what}), but found {type(rec).__name__}.")
    if "id" not in rec:
        raise InputError(f"{p}: line {line}: the record has no \"id\" key; {what} records need one (found keys {sorted(rec)[:8]}).")
    rid = rec["id"]
    if not isinstance(rid, (str, int)) or isinstance(rid, bool):
        raise InputError(f"{p}: line {line}: \"id\" must be a string or an integer, but found {rid!r:.60}.")
    rid = str(rid).strip()  # as every reader: ' 1' is the id '1'
    if not rid:
        raise InputError(f"{p}: line {line}: \"id\" is empty; every record needs an id.")
    return rid


@dataclass(frozen=True, kw_only=True)
class BfclQuestion:
    """One BFCL test entry: its id, category and function descriptions (always a list)."""

    id: str
    category: str
    functions: list[dict[str, Any]]
    source: str


def load_bfcl_questions(path: str | Path) -> dict[str, BfclQuestion]:
    """A BFCL question file (v1 or v4) → id → `BfclQuestion`."""
    from extracteval.tasks.toolcalls.bfcl import category_of

    p = Path(path)
    out: dict[str, BfclQuestion] = {}
    for line, rec in read_record_file(p):
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
        raise InputError(f"{p}: line {line} (id {rid}): \"ground_truth\" must be a list of {{function: {{param: [values]}}}} objects (v4) "
                         f"or an object (v1), but found {type(gt).__name__}.")
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
    for line, rec in read_record_file(p):
        rid = _record_id(p, line, rec, "BFCL possible-answer")
        if rid in out:
            raise InputError(f"{p}: line {line}: id {rid!r} appears twice.")
        if "ground_truth" not in rec:
            raise InputError(f"{p}: line {line} (id {rid}): no \"ground_truth\" key; is this a possible_answer file?")
        out[rid] = _answer_list(p, line, rid, rec["ground_truth"], questions.get(rid) if questions else None)
    return out


@dataclass(frozen=True, kw_only=True)
class BfclWarning:
    """One irregular entry of a BFCL question or possible-answer file, and how it is scored."""

    kind: str
    file: str
    line: int
    id: str
    message: str

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "file": self.file, "line": self.line, "id": self.id, "message": self.message}


@dataclass(frozen=True, kw_only=True)
class BfclFiles:
    """The entries of one question file and its possible-answer file, plus the irregular ones' warnings."""

    entries: list[Any]  # tasks.toolcalls.bfcl.BfclEntry, in file order
    warnings: list[BfclWarning]


def _raw_id(rec: Any) -> str | None:
    """A record's id: its `id`, or `index` (what early BFCL releases named it)."""
    if not isinstance(rec, dict):
        return None
    for key in ("id", "index"):
        v = rec.get(key)
        if isinstance(v, (str, int)) and not isinstance(v, bool):
            return str(v)
    return None


def _bare_ground_truth(rec: Any) -> bool:
    """A possible answer written without id or `ground_truth` key (early BFCL releases): a map of
    function names to parameter maps, or a list of one-function maps."""
    if isinstance(rec, list):
        return bool(rec) and all(isinstance(x, dict) and len(x) == 1 for x in rec)
    return isinstance(rec, dict) and bool(rec) and all(isinstance(v, (dict, list)) for v in rec.values())


def _function_list(fn: Any) -> tuple[list[dict[str, Any]], bool, list[str]]:
    """The question's `function` as a list of descriptions, whether it was one object, and what is irregular."""
    from extracteval.tasks.toolcalls.bfcl.vocabulary import _PY_TYPES

    problems: list[str] = []
    if isinstance(fn, dict):
        raw, was_object = [fn], True
    elif isinstance(fn, list):
        raw, was_object = fn, False
    else:
        return [], False, [f"\"function\" is {json.dumps(fn)[:60] if fn is not None else 'missing'}, not a description object or a list of them"]
    functions = []
    for k, f in enumerate(raw):
        if not isinstance(f, dict):
            problems.append(f"function[{k}] is not an object")
            f = {}
        name = f.get("name")
        if not isinstance(name, str):
            problems.append(f"function[{k}] has no \"name\"")
        params = f.get("parameters")
        props = params.get("properties") if isinstance(params, dict) else None
        if not isinstance(props, dict):
            problems.append(f"function {name!r} has no \"parameters\" object with \"properties\"")
        else:
            for pn, pd in props.items():
                t = pd.get("type") if isinstance(pd, dict) else None
                item = pd.get("items") if isinstance(pd, dict) else None
                if not isinstance(t, str) or t not in _PY_TYPES:
                    problems.append(f"function {name!r}, parameter {pn!r}: type {t!r} is not one of {', '.join(_PY_TYPES)}")
                elif isinstance(item, dict) and item.get("type") not in _PY_TYPES:
                    problems.append(f"function {name!r}, parameter {pn!r}: item type {item.get('type')!r} is not one of {', '.join(_PY_TYPES)}")
        if isinstance(params, dict) and not isinstance(params.get("required", []), list):
            problems.append(f"function {name!r}: \"required\" is not a list")
        functions.append(f)
    if not functions:
        problems.append("\"function\" is an empty list")
    return functions, was_object, problems


def load_bfcl_entries(questions_path: str | Path, answers_path: str | Path) -> BfclFiles:
    """One BFCL category: a question file and its possible-answer file (v1 or v4) → entries.

    Irregular entries are scored the way BFCL's checker scores them and reported as warnings
    (kind, file, line, id): an answer naming a function the question does not describe, a
    parameter map or a list of acceptable values of another shape, a malformed description, an
    empty possible answer, a question without an answer (not scored), an answer without a
    question (ignored), a repeated id (the first one counts). Only files that are not BFCL data at
    all (no record with an id and `function` / `ground_truth`) raise `InputError`.
    """
    from extracteval.tasks.toolcalls.bfcl import BfclEntry, answer_targets, category_of

    qp, ap = Path(questions_path), Path(answers_path)
    warnings: list[BfclWarning] = []

    def warn(kind: str, path: Path, line: int, rid: str, message: str) -> None:
        warnings.append(BfclWarning(kind=kind, file=str(path), line=line, id=rid, message=message))

    def by_id(path: Path, records: list[tuple[int, Any]], key: str, what: str) -> dict[str, tuple[int, Any]]:
        """id → (line, record), the first record of each id; refuses a file with no BFCL record."""
        out: dict[str, tuple[int, Any]] = {}
        for line, rec in records:
            rid = _raw_id(rec)
            if rid is None:
                warn("record_without_id", path, line, "", "the record is not an object with an \"id\" (or \"index\"); skipped")
            elif rid in out:
                warn("repeated_id", path, line, rid, f"id {rid!r} appeared before (line {out[rid][0]}); this record is skipped")
            else:
                out[rid] = (line, rec)
        if not any(isinstance(r, dict) and key in r for _, r in out.values()):
            raise InputError(f"{path}: not a BFCL {what} file: no record has an \"id\" and a \"{key}\" key{' (the function descriptions)' if key == 'function' else ''}.")
        return out

    questions = by_id(qp, read_record_file(qp), "function", "question")
    answer_records = read_record_file(ap)
    if any(_raw_id(r) is not None for _, r in answer_records) or any(isinstance(r, dict) and "ground_truth" in r for _, r in answer_records):
        answers = by_id(ap, answer_records, "ground_truth", "possible-answer")
    elif answer_records and all(_bare_ground_truth(r) for _, r in answer_records):
        # early BFCL releases: one ground truth per line, no ids, in the order of the questions
        answers = {}
        order = list(questions)
        for k, (line, rec) in enumerate(answer_records):
            if k >= len(order):
                warn("answer_without_question", ap, line, "", f"line {line} has no question at the same position in {qp}; ignored")
                continue
            answers[order[k]] = (line, {"ground_truth": rec})
        warn("answers_by_position", ap, answer_records[0][0], "",
             f"the possible answers carry no ids: each line is paired with the question at the same position in {qp}")
    else:
        answers = by_id(ap, answer_records, "ground_truth", "possible-answer")  # refuses: not BFCL possible answers
    entries = []
    for rid, (qline, qrec) in questions.items():
        if rid not in answers:
            warn("question_without_answer", qp, qline, rid, f"no possible answer in {ap}; the entry is not scored")
            continue
        aline, arec = answers[rid]
        category = category_of(rid)
        functions, was_object, problems = _function_list(qrec.get("function"))
        for msg in problems:
            warn("function_description", qp, qline, rid, msg + "; calls that need it fail")
        def said(kind: str, message: str, aline: int = aline, rid: str = rid) -> None:  # a warning about this entry's answer
            warn(kind, ap, aline, rid, message)

        layout, keys, items = _answer_items(arec.get("ground_truth"), said)
        if not items:
            said("empty_answer", "the possible answer lists no call: only an empty result can pass "
                 + ("(never, for a single-call entry)" if "parallel" not in category and "multiple" not in category else ""))
        targets = answer_targets(functions, keys, category, layout=layout, function_was_object=was_object)
        shown = _checked_answers(items, keys, targets, [str(f.get("name", "")) for f in functions], category, said)
        entries.append(BfclEntry(id=rid, category=category, functions=functions, answers=shown, targets=targets, layout=layout))
    for rid, (aline, _) in answers.items():
        if rid not in questions:
            warn("answer_without_question", ap, aline, rid, f"no question in {qp}; ignored")
    return BfclFiles(entries=entries, warnings=warnings)


def _answer_items(gt: Any, said: Callable[[str, str], None]) -> tuple[str, list[str], list[dict[str, Any]]]:
    """A possible answer's `ground_truth` as (layout, function names, one `{name: parameters}` per
    expected call): an object is v1, a list v4; an item or a whole answer of another shape is an
    expected call no call can match (`{"": None}`), said as a warning."""
    if isinstance(gt, dict):
        return "v1", [str(k) for k in gt], [{str(k): v} for k, v in gt.items()]
    if isinstance(gt, list):
        items = []
        for k, item in enumerate(gt):
            if isinstance(item, dict) and len(item) == 1:
                items.append({str(next(iter(item))): next(iter(item.values()))})
            else:
                said("answer_shape", f"ground_truth[{k}] is not an object with exactly one function name "
                     f"({json.dumps(item)[:60]}); it is an expected call that no call can match")
                items.append({"": None})
        return "v4", [next(iter(i)) for i in items], items
    said("answer_shape", f"\"ground_truth\" is {json.dumps(gt)[:60] if gt is not None else 'missing'}, "
         "neither an object (v1) nor a list (v4); the entry fails for every model")
    return "v4", [""], [{"": None}]


def _checked_answers(items: list[dict[str, Any]], keys: list[str], targets: list[Any], names: list[str], category: str,
                     said: Callable[[str, str], None]) -> list[dict[str, Any]]:
    """Each expected call under the name of the function it is checked against (as BFCL's checker
    pairs them), with a warning for a function the question does not describe, another
    function's name, and parameters or acceptable values of another shape."""
    shown: list[dict[str, Any]] = []
    single = "parallel" not in category and "multiple" not in category
    for k, (item, key, t) in enumerate(zip(items, keys, targets)):
        params = item[key]
        if t is None:
            if key or params is not None:
                said("unknown_function", f"ground_truth names {key!r}, which the question does not describe "
                     f"(it has {names}); this expected call cannot be matched, so the entry fails")
            shown.append({key: params})
            continue
        name = names[t]
        stripped = _SUFFIX.sub("", key)
        if (not single or k == 0) and key != name and stripped != name:
            said("answer_names_other_function", f"ground_truth names {key!r}, the question describes {name!r}; "
                 f"the call is checked against {name!r}, as BFCL's checker does")
        if not isinstance(params, dict):
            said("answer_shape", f"the parameters of {key!r} are {type(params).__name__}, not an object; "
                 "no call with arguments can match this expected call")
        else:
            for pn, vals in params.items():
                if not isinstance(vals, list):
                    how = ("BFCL compares its characters one by one; the parameter may be left out" if isinstance(vals, str)
                           else "no value can match it; leaving the parameter out fails too")
                    said("answer_shape", f"{key}.{pn}: acceptable values {json.dumps(vals)[:40]} are not a list; {how}")
        shown.append({name: params})
    return shown


def load_bfcl_results(path: str | Path) -> dict[str, Any]:
    """A BFCL model result file → id → the raw `result` value (decoded later, failures counted)."""
    p = Path(path)
    out: dict[str, Any] = {}
    for line, rec in read_record_file(p):
        rid = _record_id(p, line, rec, "BFCL result")
        if rid in out:
            raise InputError(f"{p}: line {line}: id {rid!r} appears twice.")
        if "result" not in rec:
            raise InputError(f"{p}: line {line} (id {rid}): no \"result\" key; expected BFCL result records {{\"id\", \"result\"}}.")
        out[rid] = rec["result"]
    return out
