"""Parts every task adapter builds the same way: the ranking and winner metrics, the winners
table, the adjacent-rank comparisons, and the report's closing sections.

Every task ranks its models and names a winner per item (field, feature, tag or function) with
`core.ranking.field_winners`; how that reads in MLflow is the same for all of them, so it is
written here once and each adapter says only which words its task uses (`items="tags"`).
Importing this module is cheap (pandas is imported when a table is built).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from extracteval.core import strict_json
from extracteval.io.config import given_options, task_config  # noqa: F401  (the adapters import them from here too)
from extracteval.mlflow.adapters import Section

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from extracteval.mlflow.keys import KeyMap

__all__ = ["FIGURE_ITEMS", "worst_items", "given_options", "task_config", "build_config", "rescore_options", "logged_record_table", "frame_ids", "WINNER_KINDS", "is_winner",
           "rank_metrics", "winner_kind_metrics", "parent_head", "comparison_metrics", "winners_table",
           "adjacent_ranks_section", "closing_sections"]

WINNER_KINDS = ("sole", "shared", "universal", "none")


def frame_ids(ids: Sequence[Any], targets: Sequence[Any], predictions: Mapping[str, Sequence[Any]], truth_source: str, *,
              status: Mapping[str, Sequence[Any]] | None = None, nonempty: bool = False) -> list[str]:
    """The record ids of a `score_frame` call as text, once it is checked that they are unique
    and that every column (targets, each model's predictions and statuses) has one cell per
    record; `nonempty`: a dataset without rows is refused too."""
    from extracteval.errors import InputError

    ids = [str(i) for i in ids]
    if len(targets) != len(ids):
        raise InputError(f"{truth_source}: {len(targets)} targets for {len(ids)} records.")
    if nonempty and not ids:
        raise InputError(f"{truth_source}: the dataset has no rows.")
    if len(set(ids)) != len(ids):
        seen: dict[str, int] = {}
        for row, rid in enumerate(ids):
            if rid in seen:
                raise InputError(f"{truth_source}: record id {rid!r} appears twice (rows {seen[rid]} and {row}); ids must be unique "
                                 "(set evaluator_config `id_column`).")
            seen[rid] = row
    for what, columns in (("predictions", predictions), ("status", status or {})):
        for name, cells in columns.items():
            if cells is not None and len(cells) != len(ids):
                raise InputError(f"{what} of model {name!r}: {len(cells)} values for {len(ids)} records.")
    return ids


def is_winner(winner: Any, model: str) -> bool:
    """Whether `model` won (alone or shared) the item whose `FieldWinner` is `winner` (None: no
    winner was named for the item)."""
    return bool(winner is not None and winner.win_share > 0 and model in winner.winners)


def rank_metrics(*, rank: int, wins: float, items_scored: int, items: str) -> dict[str, float]:
    """A model run's `ranking/rank`, `wins/field_wins` and `wins/<items>_scored`."""
    return {"wins/field_wins": float(wins), f"wins/{items}_scored": float(items_scored), "ranking/rank": float(rank)}


def winner_kind_metrics(kinds: Iterable[str], prefix: str) -> dict[str, float]:
    """`<prefix>/sole|shared|universal|none`: how many items had each kind of winner."""
    kinds = list(kinds)
    return {f"{prefix}/{k}": float(kinds.count(k)) for k in WINNER_KINDS}


def parent_head(keys: "KeyMap", *, ranking: Sequence[str], ranks: Mapping[str, int], wins: Mapping[str, float], items: str,
                n_items: int) -> dict[str, float]:
    """The parent run's `models/count`, `<items>/count`, and per model `ranking/<m>/rank` and
    `wins/<m>/field_wins`."""
    out = {"models/count": float(len(ranking)), f"{items}/count": float(n_items)}
    for m in ranking:
        out[keys.key("ranking", m, "rank")] = float(ranks[m])
        out[keys.key("wins", m, "field_wins")] = float(wins.get(m, 0.0))
    return out


def comparison_metrics(comparisons: Iterable[Any], keys: "KeyMap") -> dict[str, float]:
    """`comparison/<higher> vs <lower>/f1_diff|ci_low|ci_high` of each pair of adjacent ranks (a
    paired bootstrap of the primary F1's difference); the pair's unsanitised name is kept in
    `keys.originals`."""
    out: dict[str, float] = {}
    for c in comparisons:
        pair = f"{keys.segment(c.higher)} vs {keys.segment(c.lower)}"
        keys.originals[f"comparison/{pair}"] = f"comparison/{c.higher} vs {c.lower}"
        out[f"comparison/{pair}/f1_diff"] = float(c.difference.estimate)
        out[f"comparison/{pair}/ci_low"] = float(c.difference.low)
        out[f"comparison/{pair}/ci_high"] = float(c.difference.high)
    return out


def winners_table(winners: Mapping[str, Any], item: str, *, best: str | None = "best_f1", separator: str = ";") -> "pd.DataFrame":
    """One row per item: its winner kind, the winners (joined by `separator`), each winner's share
    and, under the column `best`, the best model's F1 (or the metric it stands for)."""
    import pandas as pd

    columns = [item, "kind", "winners", "win_share", *([best] if best else [])]
    rows = []
    for name, w in winners.items():
        row = {item: name, "kind": w.kind, "winners": separator.join(w.winners), "win_share": w.win_share}
        if best:
            row[best] = None if w.best is None else w.best.f1
        rows.append(row)
    return pd.DataFrame(rows, columns=columns)


def adjacent_ranks_section(comparisons: Sequence[Mapping[str, Any]], metric: str) -> Section:
    """The report's list of adjacent-rank differences (`comparisons` as the result document has
    them), each with its interval and verdict; `metric` names the F1 compared."""
    from extracteval.report.terminal import comparison_line

    return Section(title=f"Adjacent ranks (paired bootstrap of the {metric} difference)",
                   items=[comparison_line(c, confidence=False) for c in comparisons])


def closing_sections(warnings: Sequence[str], config: Any, *, then: Sequence[Section] = ()) -> list[Section]:
    """The report's last sections: the warnings (when any), the sections `then`, and the
    configuration as JSON."""
    out = [Section(title="Warnings", items=list(warnings))] if warnings else []
    out += then
    out.append(Section(title="Configuration", text=strict_json.dumps(config, indent=2, ensure_ascii=False, default=str)))
    return out


def rescore_options(adapter: Any, doc: Mapping[str, Any]) -> dict[str, Any]:
    """The evaluator_config options that rebuild a logged run's configuration (its result.json's
    `config`), for `adapter.build_config`: every key of the task's `config_keys` the logged
    config holds, the normaliser's keys from its `normalization`, the similarity backend from
    its description, the truth columns it left unscored as record metadata (`metadata`), and the
    adapter's `logged_keys` ({where in the document: option}, where is `a.b` inside `config`, or
    `/name` at the document's top, e.g. the fields a run scored)."""
    from extracteval.io.config import logged_similarity

    cfg = doc.get("config") or {}
    keys = adapter.config_keys
    opts = {k: cfg[k] for k in keys if k not in ("similarity", "similarity_options") and cfg.get(k) is not None}
    norm = cfg.get("normalization") or {}
    opts.update({k: norm[k] for k in ("null_tokens", "dayfirst") if k in keys and norm.get(k) is not None})
    metadata = cfg.get("metadata")
    if isinstance(metadata, list) and metadata:  # truth columns the run read as record metadata: left unscored again
        opts["slice_by"] = [str(c) for c in metadata]
    similarity = cfg.get("similarity")
    if "similarity" in keys and isinstance(similarity, Mapping):
        opts.update(logged_similarity(similarity.get("semantic")))
    for where, key in getattr(adapter, "logged_keys", {}).items():
        if where.startswith("/"):
            value = doc.get(where[1:])
            if value:
                opts[key] = list(value)
            continue
        value: Any = cfg
        for part in where.split("."):
            value = value.get(part) if isinstance(value, Mapping) else None
        if value is not None:
            opts[key] = value
    return opts


def logged_record_table(adapter: Any, scored: Any, model: str, *, sizes: bool = False) -> tuple[Any, Any]:
    """`TaskAdapter.record_table` through the rows a run logs (an adapter's `record_table =
    logged_record_table`): the model's `records_frame` written to Parquet in a temporary folder
    and read back by the task's `record_counts` (and `record_sizes`), as `leaderboard` reads a
    run. (None, None) without per-record rows."""
    import tempfile
    from pathlib import Path

    frame = adapter.records_frame(scored, model)
    if frame is None:
        return None, None
    params = adapter.params(scored)
    with tempfile.TemporaryDirectory(prefix="extracteval-records-") as d:
        path = Path(d) / "records.parquet"
        frame.to_parquet(path, index=False)
        return adapter.record_counts(path, params), (adapter.record_sizes(path, params) if sizes else None)


def build_config(adapter: Any, config: Mapping[str, Any]) -> Any:
    """The task's configuration from evaluator_config options: its `options.build_config`, the one
    translation the command line uses too (an adapter's `build_config = build_config`)."""
    from extracteval.tasks import task_module

    return task_module(adapter.task, "options").build_config(config)


FIGURE_ITEMS = 40


def worst_items(table: pd.DataFrame, item: str, limit: int = FIGURE_ITEMS) -> tuple[pd.DataFrame, str]:
    """At most `limit` items for a per-item figure: those with errors (FP + FN summed over the
    models), the most first (and on top); and a title note when items were left out. (Every
    item stays in the CSV, the MLflow table and the metrics; a figure of 400 one-call functions
    says nothing and takes seconds to draw.)"""
    names = list(dict.fromkeys(table[item])) if len(table) else []
    if len(names) <= limit:
        return table, ""
    errors = table.groupby(item, sort=False)[["fp", "fn"]].sum().sum(axis=1)
    wrong = [n for n in names if float(errors.get(n, 0)) > 0]
    if not wrong:
        keep = set(names[:limit])
        return table[table[item].isin(keep)], f" (first {limit} of {len(names)}; none has errors)"
    order = {n: i for i, n in enumerate(sorted(wrong, key=lambda n: (-float(errors.get(n, 0)), str(n)))[:limit])}
    kept = table[table[item].isin(order)]
    kept = kept.iloc[kept[item].map(order).to_numpy().argsort(kind="stable")]  # the most errors on top
    return kept, f" ({len(order)} of {len(names)}: most errors)"
