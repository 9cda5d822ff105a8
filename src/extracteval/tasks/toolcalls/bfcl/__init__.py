"""A BFCL-compatible AST checker: the verdicts of the Berkeley Function Calling Leaderboard.

This is our own implementation of the rules the BFCL AST checker documents and applies to the
Python AST categories (`simple`, `multiple`, `parallel`, `parallel_multiple`, v1 and v4 layouts).
The goal is verdict-for-verdict agreement with the official checker, quirks included, because
users compare our numbers with the published leaderboard:

* **Decoding.** A result is either a list of `{function: arguments}` items, where `arguments` is a
  JSON string (function-calling models) or an object, or a string of Python calls
  `[f(a=1), g(b="x")]` (prompting models), read with `ast` (never evaluated). A result that cannot
  be decoded fails with `ast_decoder:decoder_failed`; one that decodes to anything other than a
  list of one-key `{name: {args}}` dicts fails with `ast_decoder:decoder_wrong_output_format`.
* **Category.** `parallel` in the category → the model's calls are matched to the expected calls
  in any order (each expected call, in order, takes the first unused model call that passes);
  `multiple` → exactly one call, checked against the one expected call; otherwise (simple)
  exactly one call. A count mismatch fails with `…:wrong_count`.
* **One call.** Function name must match (optionally with `.` mangled to `_`, as BFCL does for
  models whose API forbids dots); every `required` parameter present; no parameter absent from
  the function spec or from the possible answer; each value type-checked against the spec
  (`integer`, `float` — an int is accepted for a float —, `string`, `boolean`, `array`/`tuple`
  with a one-level item-type check, `dict`, `any`); strings compared after BFCL's normalisation
  (drop spaces and `,./-_*^`, lowercase, `'`→`"`); lists element-wise with the same
  normalisation on string items; dicts key by key; everything else by Python equality against
  the list of acceptable values. A parameter left out must have `""` among its acceptable values.
* **Variables.** When the possible answer's values have another type than the spec declares, the
  answer is taken to name a variable: a value of the answer's type passes the type check and is
  compared by plain equality.
* **Which description.** `answer_targets` applies BFCL's lookup: a single-call entry uses the
  described function whatever the answer's key says; v4 list answers look the key up exactly; v1
  object answers take one described object as is (except in `parallel_function`) and otherwise the
  first function whose name occurs inside the key. None found → `…:cannot_find_description`.
* **Irregular answers** never raise: a parameter map that is not an object accepts no argument;
  acceptable values that are a bare string are iterated by character (and may be left out); any
  other non-list value never matches; an empty answer fails a single-call entry. An unknown type
  in a description fails the call that uses it (`type_error:unknown_type`).

Example:
    >>> spec = [{"name": "math.factorial", "parameters": {"type": "dict",
    ...          "properties": {"number": {"type": "integer"}}, "required": ["number"]}}]
    >>> answer = [{"math.factorial": {"number": [5]}}]
    >>> check_entry(spec, decode_result([{"math.factorial": '{"number": 5}'}]), answer, "simple").valid
    True
    >>> check_entry(spec, decode_result("[math.factorial(number=5)]"), answer, "simple").valid
    True
    >>> check_entry(spec, decode_result("[math.factorial(number='5')]"), answer, "simple").error_type
    'type_error:simple'

The stages, each in its module: `vocabulary` (types, verdicts, decoded results) → `decoding` (a
result into calls) → `checking` (a call against its description and possible answers); this
package scores whole files and re-exports what each stage offers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from extracteval.core.ledger import Ledger, add_counts, by_key, keep, merge, ordered
from extracteval.tasks.toolcalls.bfcl.checking import answer_targets, check_call, check_entry
from extracteval.tasks.toolcalls.bfcl.decoding import decode_result, parse_python_calls
from extracteval.tasks.toolcalls.bfcl.vocabulary import Decoded, Verdict, _fail, category_of, entry_sort_key, normalize_text
from extracteval.tasks.toolcalls.contract import RANKING

__all__ = [
    "Verdict",
    "Decoded",
    "decode_result",
    "check_entry",
    "check_call",
    "answer_targets",
    "normalize_text",
    "category_of",
    "entry_sort_key",
    "parse_python_calls",
    "BfclEntry",
    "BfclCategoryScore",
    "BfclModelScore",
    "score_bfcl",
]


# --------------------------------------------------------------------------------------------
# scoring a whole file


@dataclass(frozen=True, kw_only=True)
class BfclCategoryScore(Ledger):
    """Accuracy of one model on one BFCL category, as BFCL's score file states it."""

    category: str = merge(keep)
    correct_count: int
    total_count: int
    failed_ids: tuple[str, ...] = merge(ordered(entry_sort_key))

    @property
    def accuracy(self) -> float:
        return self.correct_count / self.total_count if self.total_count else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "accuracy": self.accuracy,
            "correct_count": self.correct_count,
            "total_count": self.total_count,
            "failed_ids": list(self.failed_ids),
        }


@dataclass(frozen=True, kw_only=True)
class BfclModelScore(Ledger):
    """One model's BFCL verdicts: overall `call_accuracy`, per category, and each failure's reason.

    `dotted_name_entries` / `underscored_name_entries`: entries where the model called a described
    `a.b` function by that name, or by `a_b` (the name with `.` replaced by `_`, as APIs that
    forbid dots make it); they tell whether `underscore_to_dot` fits the model.
    """

    model: str = merge(keep)
    correct_count: int
    total_count: int
    failed_ids: tuple[str, ...] = merge(ordered(entry_sort_key))
    categories: dict[str, BfclCategoryScore] = merge(by_key(sort=True))
    failures: dict[str, Verdict] = merge(lambda a, b: {i: v for i, v in sorted({**a, **b}.items(), key=lambda kv: entry_sort_key(kv[0]))})
    missing_ids: tuple[str, ...] = merge(ordered(entry_sort_key))
    error_types: dict[str, int] = merge(by_key(add_counts, sort=True))
    underscore_to_dot: bool = merge(keep, default=False)
    dotted_name_entries: int = 0
    underscored_name_entries: int = 0

    @property
    def call_accuracy(self) -> float:
        return self.correct_count / self.total_count if self.total_count else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "call_accuracy": self.call_accuracy,
            "correct_count": self.correct_count,
            "total_count": self.total_count,
            "failed_ids": list(self.failed_ids),
            "missing_ids": list(self.missing_ids),
            "error_types": dict(self.error_types),
            "underscore_to_dot": self.underscore_to_dot,
            "name_forms": {"dotted_name_entries": self.dotted_name_entries, "underscored_name_entries": self.underscored_name_entries},
            "categories": {c: s.to_dict() for c, s in self.categories.items()},
            "failures": {i: {"error_type": v.error_type, "error": v.error} for i, v in self.failures.items()},
        }


@dataclass(frozen=True, kw_only=True)
class BfclEntry:
    """What the checker needs about one test entry.

    `targets`: per expected call, the index in `functions` of the description it is checked
    against (`answer_targets`; None when BFCL's rules find none); computed from exact names when
    not given. `layout`: `v1` for object possible answers (2024 files), else `v4`.
    """

    id: str
    category: str
    functions: Sequence[Mapping[str, Any]]
    answers: Sequence[Mapping[str, Any]]
    targets: tuple[int | None, ...] | None = None
    layout: str = "v4"


def _name_forms(entry: BfclEntry) -> tuple[frozenset[str], frozenset[str]]:
    """(dotted names the question describes, their `_` forms that are not described names)."""
    names = {str(f.get("name", "")) for f in entry.functions if isinstance(f, Mapping)}
    dotted = frozenset(n for n in names if "." in n)
    return dotted, frozenset(n.replace(".", "_") for n in dotted) - names


def score_bfcl(
    entries: Sequence[BfclEntry],
    results: Mapping[str, Any],
    *,
    model: str = "model",
    underscore_to_dot: bool = False,
) -> BfclModelScore:
    """Check every entry; an entry with no result fails with `missing_result`.

    `total_count` is the number of entries, `failed_ids` sorted in BFCL's natural id order, so the
    numbers line up with BFCL's `*_score.json` files.
    """
    failures: dict[str, Verdict] = {}
    per_cat_total: dict[str, int] = {}
    per_cat_failed: dict[str, list[str]] = {}
    missing = []
    dotted_entries = underscored_entries = 0
    for e in entries:
        per_cat_total[e.category] = per_cat_total.get(e.category, 0) + 1
        per_cat_failed.setdefault(e.category, [])
        if e.id not in results:
            missing.append(e.id)
            v = _fail("missing_result", "The result file has no entry with this id.")
        else:
            decoded = decode_result(results[e.id])
            v = check_entry(e.functions, decoded, e.answers, e.category, underscore_to_dot=underscore_to_dot, entry_id=e.id,
                            targets=e.targets, layout=e.layout)
            if decoded.calls:
                dotted, underscored = _name_forms(e)
                if dotted:
                    called = {next(iter(c)) for c in decoded.calls}
                    dotted_entries += bool(called & dotted)
                    underscored_entries += bool(called & underscored)
        if not v.valid:
            failures[e.id] = v
            per_cat_failed[e.category].append(e.id)
    order = sorted(failures, key=entry_sort_key)
    cats = {
        c: BfclCategoryScore(
            category=c,
            correct_count=per_cat_total[c] - len(per_cat_failed[c]),
            total_count=per_cat_total[c],
            failed_ids=tuple(sorted(per_cat_failed[c], key=entry_sort_key)),
        )
        for c in sorted(per_cat_total)
    }
    types: dict[str, int] = {}
    for v in failures.values():
        types[str(v.error_type)] = types.get(str(v.error_type), 0) + 1
    return BfclModelScore(
        model=model,
        correct_count=len(entries) - len(failures),
        total_count=len(entries),
        failed_ids=tuple(order),
        categories=cats,
        failures={i: failures[i] for i in order},
        missing_ids=tuple(sorted(missing, key=entry_sort_key)),
        error_types=dict(sorted(types.items())),
        underscore_to_dot=underscore_to_dot,
        dotted_name_entries=dotted_entries,
        underscored_name_entries=underscored_entries,
    )


def underscore_to_dot_models(option: Any, models: list[str]) -> set[str]:
    """The models whose expected `a.b` function names are looked for as `a_b`.

    `option` is what `--underscore-to-dot` collected: `*` (the flag without a name: every model),
    model names, True/False (an experiment file's boolean), or nothing.
    """
    from extracteval.errors import InputError

    if option is None or option is False:
        return set()
    if option is True:
        return set(models)
    names = [option] if isinstance(option, str) else list(option)
    if "*" in names:
        return set(models)
    unknown = sorted(set(names) - set(models))
    if unknown:
        raise InputError(f"--underscore-to-dot {unknown[0]}: no model of that name; the models are {', '.join(models)} "
                         "(give the flag without a name to apply it to every model).")
    return set(names)


def mangling_warning(score: Any) -> str | None:
    """A note when a model's calls fit the described `a.b` names only with the other mangling setting."""
    dotted, underscored = score.dotted_name_entries, score.underscored_name_entries
    if not score.underscore_to_dot and underscored > dotted:
        return (f"{score.model}: in {underscored} entries its calls name functions with '.' replaced by '_' (a_b for a.b), which match "
                f"the question's functions only with name mangling; if its API forbids dots, score it with --underscore-to-dot {score.model}")
    if score.underscore_to_dot and dotted > underscored:
        return (f"{score.model}: scored with --underscore-to-dot, but in {dotted} entries its calls use the dotted names as described "
                f"(a.b), which fail under name mangling; score it without --underscore-to-dot {score.model}")
    return None


def generic_answers(entry: Any) -> list[dict[str, Any]]:
    """The possible answer of an entry as the generic checker reads it: irregular shapes made regular
    (a parameter map that is not an object → no parameters; acceptable values that are not a list → a list of one)."""
    out = []
    for item in entry.answers:
        name, params = next(iter(item.items()))
        params = params if isinstance(params, dict) else {}
        out.append({name or "(no function)": {k: v if isinstance(v, list) else [v] for k, v in params.items()}})
    return out


def generic_view(metrics: Mapping[str, float]) -> dict[str, Any]:
    """The generic checker's metrics shown next to BFCL's verdicts."""
    keys = ("valid_call_rate", "name_match_rate", "args_exact_rate", "args_precision", "args_recall", "args_f1", "call_accuracy")
    return {k: metrics[k] for k in keys} | {"note": "generic checker on the same files (optimal pairing, exact values); BFCL's verdicts are above"}


def bfcl_document(
    entries: Sequence[BfclEntry], scores: Mapping[str, BfclModelScore], generic_metrics: Mapping[str, Mapping[str, float]], *,
    data_warnings: Sequence[Any], mangled: set[str], inputs: Mapping[str, Any],
) -> dict[str, Any]:
    """The `--json` document of the BFCL checker: models ranked by the task's ranking declaration
    (the generic metrics, call accuracy being BFCL's), the files' warnings then the models' name
    mangling notes, and their counts per kind."""
    from extracteval.core.ranking import rank_by_metrics

    ranked = rank_by_metrics(RANKING, {m: {**{f"toolcalls/{k}": float(v) for k, v in generic_metrics[m].items()},
                                               "toolcalls/call_accuracy": float(scores[m].call_accuracy)} for m in scores})
    ranking = [r.model for r in ranked]
    warnings = [w.to_dict() for w in data_warnings] + [{"kind": "name_mangling", "model": m, "message": msg}
                                                        for m in sorted(scores) if (msg := mangling_warning(scores[m]))]
    kinds: dict[str, int] = {}
    for w in warnings:
        kinds[w["kind"]] = kinds.get(w["kind"], 0) + 1
    return {
        "task": "toolcalls",
        "checker": "bfcl",
        "config": {"underscore_to_dot": sorted(mangled)},
        "n_records": len(entries),
        "categories": sorted({e.category for e in entries}),
        "ranking": ranking,
        "models": {m: {"rank": k, **scores[m].to_dict(), "generic": generic_view(generic_metrics[m])} for k, m in enumerate(ranking, start=1)},
        "inputs": dict(inputs),
        "count_columns": ["records", "correct_records"],
        "warnings": warnings,
        "warning_counts": dict(sorted(kinds.items())),
    }
