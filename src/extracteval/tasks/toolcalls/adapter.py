"""MLflow adapter of the `toolcalls` task (tool-call track), generic or BFCL checker.

Per model run: `toolcalls/valid_call_rate`, `toolcalls/name_match_rate`,
`toolcalls/args_exact_rate`, `toolcalls/args_precision`, `toolcalls/args_recall`,
`toolcalls/args_f1`, `toolcalls/call_accuracy`, the ledger `toolcalls/<count>` (records,
valid_records, correct_records, ref_calls, pred_calls, invalid_calls, name_matches, args_exact,
tp, fp, fn), per reference function `function/<name>/…`, `wins/field_wins` (the items are
function names, won on argument F1), `ranking/rank`, and the opt-in extended scores
`toolcalls/<semantic_similarity|judge_score>/mean|pass_rate`.

With `--checker bfcl`: params `underscore_to_dot` (per model run: true/false) and
`underscore_to_dot_models`, metrics `bfcl/accuracy`, `bfcl/correct_count`, `bfcl/total_count`,
`bfcl/<category>/accuracy|correct_count|total_count`, `bfcl/error_type/<type>`; then
`toolcalls/call_accuracy` is BFCL's accuracy (as in the `--json` document), the other
`toolcalls/…` metrics come from the generic checker on the same files and its own call accuracy
is `toolcalls/generic_call_accuracy`. The per-record Parquet lists every entry with its BFCL
verdict (the failed ids are the rows with `correct` false).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from extracteval.errors import InputError
from extracteval.mlflow.adapter_parts import (closing_sections, frame_ids, worst_items, is_winner, parent_head, rank_metrics, winner_kind_metrics,
                                              winners_table, rescore_options, build_config)
from extracteval.mlflow.keys import KeyMap, sanitize_segment
from extracteval.mlflow.decision_track import (
    DecisionTrackAdapter,
    decision_metrics,
    decision_namespace,
    decision_params,
    decision_sections,
    decision_table,
    percent_table,
    plain,
    track_spec,
    write_raw_outputs,
)
from extracteval.mlflow.adapters import Scored, Section, shared_config_keys

__all__ = ["ADAPTER", "ToolcallsAdapter", "ToolcallRun"]

RATES = ("valid_call_rate", "name_match_rate", "args_exact_rate", "args_precision", "args_recall", "args_f1", "call_accuracy")
COUNTS = ("records", "valid_records", "correct_records", "ref_calls", "pred_calls", "invalid_calls", "name_matches", "args_exact", "tp", "fp", "fn")
_FUNCTION_KEYS = ("ref_calls", "pred_calls", "invalid_calls", "name_matches", "args_exact", "tp", "fp", "fn", "precision", "recall", "f1",
                  "name_match_rate", "args_exact_rate")
# per-function metrics (the CSV / MLflow table has every column): a BFCL run has hundreds of functions
_FUNCTION_METRIC_KEYS = ("ref_calls", "name_matches", "args_exact", "tp", "fp", "fn", "precision", "recall", "f1")
_RATE_LABELS = {
    "valid_call_rate": "valid calls", "name_match_rate": "name match", "args_exact_rate": "arguments exact", "args_precision": "argument precision",
    "args_recall": "argument recall", "args_f1": "argument F1", "call_accuracy": "call accuracy", "bfcl_accuracy": "BFCL accuracy",
}


@dataclass(frozen=True, kw_only=True)
class ToolcallRun:
    """One scored tool-call evaluation: the generic result (always) and BFCL's verdicts (bfcl checker).

    truth / predictions / possible_answer are the inputs as scored (record id → value), kept for
    the per-function tables.
    """

    checker: str
    generic: Any  # tasks.toolcalls.semantics.ToolCallResult
    truth: Mapping[str, Any]
    predictions: Mapping[str, Mapping[str, Any]]
    possible_answer: bool
    key_config: Any  # tasks.toolcalls.semantics.ToolCallConfig used for argument comparison
    ranking: tuple[str, ...]
    bfcl: Mapping[str, Any] = field(default_factory=dict)  # model → tasks.toolcalls.bfcl.BfclModelScore
    categories: Mapping[str, str] = field(default_factory=dict)  # record id → BFCL category

    @property
    def n_records(self) -> int:
        return int(self.generic.n_records)


class ToolcallsAdapter(DecisionTrackAdapter):
    task = "toolcalls"
    model_type = "tool-calling"
    about = "function calls: name and argument match, call accuracy, BFCL's checker"  # what the task scores (`extracteval tasks`)
    record_is_value = True
    item_table_name = "function_metrics"  # per reference function name
    interval_metrics = tuple(f"toolcalls/{m}" for m in ("call_accuracy", "args_f1", "args_precision", "args_recall", "valid_call_rate",
                                                       "name_match_rate", "args_exact_rate"))

    # per record: reference calls, name and argument matches, argument tp / fp / fn, and valid /
    # correct (the checker's verdict) as 0/1
    count_sums = ("ref_calls", "name_matches", "args_exact", "tp", "fp", "fn")
    count_flags = ("valid", "correct")
    size_counts = (("ref_calls",), "reference calls")

    counts_class = ("extracteval.tasks.toolcalls.semantics", "ToolCallCounts")

    config_keys: Mapping[str, str] = {
        "possible_answer": "read the targets as BFCL possible answers {func: {param: [acceptable values]}} (false)",
        "value_match": "exact (canonical JSON argument leaves, default) or normalized (shared normaliser)",
        **shared_config_keys("zero_division"),
    }

    # ---- scoring -------------------------------------------------------------------------------

    def score_args(self, args: argparse.Namespace) -> Scored:
        from extracteval.tasks.toolcalls.pipeline import run_bfcl, run_generic

        if getattr(args, "checker", "generic") == "bfcl":
            doc, scores, rec = run_bfcl(args)
            return self._bfcl_scored(doc, scores, rec)
        doc, result, rec = run_generic(args)
        extended = sorted({k for m in doc["models"].values() for k in m.get("extended", {})})
        return self._generic_scored(doc, result, rec, args.truth[0], extended)

    def score_inputs(self, truth: Any, predictions: Sequence[Any], config: Mapping[str, Any], *, id_column: str = "id") -> Scored:
        """The references and each model's outputs (`NAME=FILE` specs, or (name, table held in
        memory) pairs) read by the command line's reader and scored by the generic checker with
        `config` (evaluator_config keys): the Python API's door."""
        from extracteval.io.decision_track import load_predictions
        from extracteval.tasks.toolcalls.pipeline import load_truth, score_generic

        cfg = self.build_config(config)
        ref, possible = load_truth(truth, bool(config.get("possible_answer", False)), id_key=id_column)
        preds, sources = load_predictions(list(predictions), id_key=id_column)
        doc, result, rec = score_generic(ref, possible, preds, sources, str(truth), cfg)
        return self._generic_scored(doc, result, rec, str(truth), [])

    def score_experiment(self, folder: Any, spec: Mapping[str, Any]) -> Scored:
        """One experiment.yaml: a `toolcalls` experiment (generic, or `checker: bfcl` with
        `questions`/`truth` lists), or the `toolcalls` track of a `structured+toolcalls` one."""
        from extracteval.tasks.toolcalls.pipeline import run_bfcl, run_generic

        folder = Path(folder)
        sub = track_spec(folder, spec, self.task)
        dec = decision_namespace(sub.get("decision") or {})
        checker = str(sub.get("checker", "generic"))
        as_list = lambda v: [v] if isinstance(v, str) else list(v or [])  # noqa: E731
        preds = []
        for name, paths in sub["predictions"].items():
            preds += [f"{name}={folder / p}" for p in as_list(paths)]
        ns = argparse.Namespace(
            checker=checker, truth=[str(folder / t) for t in as_list(sub["truth"])],
            questions=[str(folder / q) for q in as_list(sub.get("questions"))] or None, predictions=preds,
            underscore_to_dot=sub.get("underscore_to_dot"), possible_answer=bool(sub.get("possible_answer", False)),
            value_match=sub.get("value_match", "exact"), zero_division=float(sub.get("zero_division", 0.0)),
            semantic_similarity=False, llm_judge=False, similarity_option=[], pass_threshold=0.85, progress="never", **vars(dec),
        )
        if checker == "bfcl":
            doc, scores, rec = run_bfcl(ns)
            return self._bfcl_scored(doc, scores, rec)
        doc, result, rec = run_generic(ns)
        return self._generic_scored(doc, result, rec, ns.truth[0], [])

    # the task's configuration from evaluator_config options: its options.build_config, as the command line
    build_config = build_config

    def score_frame(
        self, *, ids: Sequence[str], targets: Sequence[Any], predictions: Mapping[str, Sequence[Any]], config: Mapping[str, Any], truth_source: str
    ) -> Scored:
        """Per record: the reference calls ({"name","arguments"} objects or a list of them, JSON
        text, or BFCL possible answers with `possible_answer`; must be readable) and each model's
        raw output in any supported format (malformed output is counted invalid, never raised)."""
        from extracteval.tasks.toolcalls.semantics import reference_calls, score_toolcalls

        cfg = self.build_config(config)
        possible = bool(config.get("possible_answer", False))
        ids = frame_ids(ids, targets, predictions, truth_source)
        truth: dict[str, Any] = {}
        key_fn = cfg.key_fn()
        for rid, v in zip(ids, targets):
            v = plain(v)
            if v is None or (isinstance(v, float) and np.isnan(v)):
                raise InputError(f"{truth_source}: record {rid!r}: the reference is empty; expected reference calls "
                                 "([{\"name\": …, \"arguments\": {…}}], or [] for \"no call\").")
            if possible and isinstance(v, str):
                try:
                    v = json.loads(v)
                except ValueError as e:
                    raise InputError(f"{truth_source}: record {rid!r}: the possible answer is text that is not valid JSON ({e}).") from None
            reference_calls(v, possible_answer=possible, key_fn=key_fn, where=f"{truth_source}: record {rid!r}")  # validates, names the record
            truth[rid] = v
        preds: dict[str, dict[str, Any]] = {}
        for name, cells in predictions.items():
            preds[name] = {rid: plain(v) for rid, v in zip(ids, cells)}
        result = score_toolcalls(truth, preds, possible_answer=possible, config=cfg)
        doc = result.to_dict()
        doc["inputs"] = {"truth": truth_source, "predictions": {m: f"predictions of model {m!r}" for m in preds}}
        rec = {"truth": truth, "predictions": preds, "possible_answer": possible, "config": cfg}
        return self._generic_scored(doc, result, rec, truth_source, [])

    def write_predictions(self, scored: Scored, model: str, path: Any) -> bool:
        """Per record, the model's raw output as scored. Runs of BFCL's checker read question and
        possible-answer files together: not written (False), `score_frame` does not read them."""
        run = scored.result
        if run.checker != "generic":
            return False
        return write_raw_outputs(run.predictions.get(model), path)

    # ---- streaming engines (mlflow/stream.py) ----------------------------------------------

    def _streaming_config(self, args: argparse.Namespace) -> Any:
        from extracteval.tasks.toolcalls.pipeline import streaming_config

        if getattr(args, "checker", "generic") == "bfcl":
            raise InputError("evaluate toolcalls --checker bfcl scores in memory: drop --chunk-size/--workers/--engine spark "
                             "(`extracteval score toolcalls --checker bfcl --chunk-size N` checks the entries in chunks).")
        return streaming_config(args)

    def chunk_job(self, args: argparse.Namespace, *, chunk_size: int) -> Any:
        from dataclasses import replace

        from extracteval.tasks.toolcalls.chunked import ToolCallsEvaluateTask, toolcalls_chunk_job

        config = self._streaming_config(args)
        job = toolcalls_chunk_job(args.truth[0], args.predictions, config=config, possible_answer=args.possible_answer, chunk_size=chunk_size)
        return replace(job, task=ToolCallsEvaluateTask(config=config, possible_answer=job.task.possible_answer))

    def spark_job(self, args: argparse.Namespace, spark: Any) -> Any:
        from dataclasses import replace

        from extracteval.tasks.toolcalls.chunked import ToolCallsEvaluateTask
        from extracteval.tasks.toolcalls.spark import toolcalls_spark_job

        config = self._streaming_config(args)
        job = toolcalls_spark_job(spark, args.truth[0], args.predictions, config=config, possible_answer=args.possible_answer,
                                  partitions=args.spark_partitions)
        return replace(job, task=ToolCallsEvaluateTask(config=config, possible_answer=job.task.possible_answer))

    def chunk_outputs(self, task: Any, chunk: Any, score: Any) -> tuple[pd.DataFrame, dict[str, pd.DataFrame | None]]:
        """The chunk's truth rows and the per-record rows its task made (`record_table`), split by model."""
        from extracteval.io.id_order import natural_key
        from extracteval.mlflow.predictions_file import prediction_cells_frame

        rec = score.records
        models = sorted(chunk.predictions)
        records = {m: rec.loc[rec["model"] == m].reset_index(drop=True) if rec is not None else None for m in models}
        preds = {m: prediction_cells_frame({str(r): v for r, v in chunk.predictions[m].items()}) for m in models}
        return _truth_frame(chunk.truth, sorted(chunk.truth, key=natural_key), task.possible_answer), {"records": records, "predictions": preds}

    def scored_from_chunks(self, result: Any, streamed: Any) -> Scored:
        """`result`: the `ToolCallsEvaluation` of the merged ledger."""
        from extracteval.tasks.toolcalls.pipeline import chunked_document
        from extracteval.mlflow.stream import scored_of_stream

        run = result.result
        doc = chunked_document(run, streamed.inputs, possible_answer=result.possible_answer)
        rec = {"truth": {}, "predictions": {}, "possible_answer": result.possible_answer, "config": run.config}
        scored = self._generic_scored(doc, run, rec, streamed.inputs["truth"], [], truth=streamed.truth_head)
        scored.cache["functions"] = {m: _function_rows(result.functions[m], float(run.config.zero_division)) for m in run.ranking}
        return scored_of_stream(scored, streamed)

    # evaluator_config options from a logged run's result.json (`extracteval rescore`): written once
    rescore_options = rescore_options

    def _generic_scored(self, doc: dict[str, Any], result: Any, rec: Mapping[str, Any], truth_source: str, extended: Sequence[str],
                        truth: pd.DataFrame | None = None) -> Scored:
        """`truth`: the truth frame when it was streamed (else made from `rec["truth"]`)."""
        run = ToolcallRun(checker="generic", generic=result, truth=rec["truth"], predictions=rec["predictions"], possible_answer=bool(rec["possible_answer"]),
                          key_config=rec["config"], ranking=tuple(result.ranking))
        # in result.json too: how the references were read is part of the configuration a rescore rebuilds
        doc["config"]["possible_answer"] = run.possible_answer
        def frame() -> pd.DataFrame:
            ids = [r.id for r in result.records[result.ranking[0]]] if result.ranking else sorted(run.truth)
            return _truth_frame(run.truth, ids, run.possible_answer)

        config = {**doc["config"], "checker": "generic", "possible_answer": run.possible_answer, "extended": list(extended)}
        scored = Scored(task=self.task, result=run, doc=doc, models=run.ranking, truth=frame if truth is None else truth, truth_source=str(truth_source),
                        config=config)
        scored.cache["score_records"] = rec  # the per-record counts `score --output` writes
        return scored

    def _bfcl_scored(self, doc: dict[str, Any], scores: Mapping[str, Any], rec: Mapping[str, Any]) -> Scored:
        from extracteval.tasks.toolcalls.semantics import ToolCallConfig

        entries = rec["entries"]
        truth = {e.id: list(e.answers) for e in entries}
        run = ToolcallRun(checker="bfcl", generic=rec["generic"], truth=truth, predictions=rec["predictions"], possible_answer=True,
                          key_config=ToolCallConfig(), ranking=tuple(doc["ranking"]), bfcl=dict(scores), categories={e.id: e.category for e in entries})

        def frame() -> pd.DataFrame:
            return pd.DataFrame(
                {"category": [e.category for e in entries], "ground_truth": [_canonical(list(e.answers)) for e in entries],
                 "functions": [_canonical(list(e.functions)) for e in entries]},
                index=pd.Index([e.id for e in entries], name="id"),
            )

        inputs = doc["inputs"]
        source = ", ".join(inputs["truth"])
        # which models had '.' → '_' name mangling is a property of each model's API, not of the
        # scoring: it stays out of the config digest so runs of function-calling and prompt models
        # rank together (it is a param of each model run instead)
        config = {**{k: v for k, v in doc["config"].items() if k != "underscore_to_dot"}, "checker": "bfcl", "categories": list(doc["categories"])}
        scored = Scored(task=self.task, result=run, doc=doc, models=run.ranking, truth=frame, truth_source=source, config=config)
        scored.cache["score_records"] = rec  # the per-record counts `score --output` writes
        return scored

    # ---- per-function counts -------------------------------------------------------------------

    def _functions(self, scored: Scored) -> dict[str, dict[str, dict[str, float]]]:
        """model → function → counts and ratios (cached per evaluation)."""
        if "functions" in scored.cache:
            return scored.cache["functions"]
        from extracteval.tasks.toolcalls.functions import function_counts
        from extracteval.tasks.toolcalls.semantics import reference_calls

        run: ToolcallRun = scored.result
        key_fn = run.key_config.key_fn()
        zd = float(run.key_config.zero_division)
        refs = {i: reference_calls(v, possible_answer=run.possible_answer, key_fn=key_fn, where=f"reference {i}") for i, v in run.truth.items()}
        out = {m: _function_rows(function_counts(refs, run.predictions.get(m, {}), run.generic.records[m], key_fn=key_fn), zd) for m in run.ranking}
        scored.cache["functions"] = out
        return out

    def _winners(self, scored: Scored) -> tuple[dict[str, Any], dict[str, float]]:
        """Function winners on argument F1 (reference functions only) and each model's wins."""
        if "winners" in scored.cache:
            return scored.cache["winners"]
        from extracteval.core.ranking import Score, field_winners, field_wins
        from extracteval.tasks.toolcalls.functions import OTHER_FUNCTIONS

        per = self._functions(scored)
        models = list(scored.models)
        names = sorted({f for m in models for f in per[m] if f != OTHER_FUNCTIONS})
        scores = {f: {m: Score(f1=per[m][f]["f1"], precision=per[m][f]["precision"], recall=per[m][f]["recall"]) for m in models if f in per[m]} for f in names}
        winners = field_winners(scores)
        wins = field_wins(winners, models)
        scored.cache["winners"] = (winners, {m: float(wins.get(m, 0.0)) for m in models})
        return scored.cache["winners"]

    # ---- metrics -------------------------------------------------------------------------------

    def item_names(self, scored: Scored) -> Sequence[str]:
        run: ToolcallRun = scored.result
        names = {f for rows in self._functions(scored).values() for f in rows}
        return sorted(names | set(run.categories.values()))

    def _model_rates(self, scored: Scored, model: str) -> dict[str, float]:
        """The `toolcalls/…` rates of a model, as the `--json` document has them."""
        d = scored.doc["models"][model]
        if scored.result.checker == "bfcl":
            g = d["generic"]
            return {**{k: float(g[k]) for k in RATES}, "call_accuracy": float(d["call_accuracy"]), "generic_call_accuracy": float(g["call_accuracy"])}
        return {k: float(d[k]) for k in RATES}

    def metrics(self, scored: Scored, model: str, keys: KeyMap) -> dict[str, float]:
        run: ToolcallRun = scored.result
        gm = run.generic.models[model]
        out: dict[str, float] = {f"toolcalls/{k}": v for k, v in self._model_rates(scored, model).items()}
        c = gm.counts
        for k in COUNTS:
            out[f"toolcalls/{k}"] = float(getattr(c, k))
        out["invalid_outputs/count"] = float(c.records - c.valid_records)  # outputs with no readable call
        for ext, s in gm.extended.items():
            out[f"toolcalls/{ext}/mean"] = float(s.mean)
            out[f"toolcalls/{ext}/pass_rate"] = float(s.pass_rate)
        winners, wins = self._winners(scored)
        out.update(rank_metrics(rank=scored.doc["models"][model]["rank"], wins=wins[model], items_scored=len(winners), items="fields"))
        for fname, row in self._functions(scored)[model].items():
            for k in _FUNCTION_METRIC_KEYS:
                out[keys.key("function", fname, k)] = float(row[k])
        if run.checker == "bfcl":
            b = run.bfcl[model]
            out["bfcl/accuracy"] = float(b.call_accuracy)
            out["bfcl/correct_count"] = float(b.correct_count)
            out["bfcl/total_count"] = float(b.total_count)
            out["bfcl/missing_count"] = float(len(b.missing_ids))
            for cat, cs in b.categories.items():
                out[keys.key("bfcl", cat, "accuracy")] = float(cs.accuracy)
                out[keys.key("bfcl", cat, "correct_count")] = float(cs.correct_count)
                out[keys.key("bfcl", cat, "total_count")] = float(cs.total_count)
            for etype, n in b.error_types.items():
                k = f"bfcl/error_type/{sanitize_segment(etype)}"
                keys.originals[k] = f"bfcl/error_type/{etype}"
                out[k] = float(n)
        return out

    def comparison_metrics(self, scored: Scored, keys: KeyMap) -> dict[str, float]:
        run: ToolcallRun = scored.result
        winners, wins = self._winners(scored)
        out = parent_head(keys, ranking=run.ranking, ranks={m: scored.doc["models"][m]["rank"] for m in run.ranking}, wins=wins,
                          items="functions", n_items=len(winners))
        out["records/count"] = float(run.n_records)
        for m in run.ranking:
            rates = self._model_rates(scored, m)
            for k in ("call_accuracy", "args_f1", "name_match_rate"):
                out[keys.key("models", m, "toolcalls", k)] = rates[k]
            if run.checker == "bfcl":
                out[keys.key("models", m, "bfcl", "accuracy")] = float(run.bfcl[m].call_accuracy)
        out.update(winner_kind_metrics((w.kind for w in winners.values()), "field_winners"))
        out.update(decision_metrics(scored.doc))
        return out

    # ---- tables --------------------------------------------------------------------------------

    def ranking_table(self, scored: Scored, models: Sequence[str]) -> pd.DataFrame:
        run: ToolcallRun = scored.result
        _, wins = self._winners(scored)
        rows = []
        for m in models:
            gm = run.generic.models[m]
            row: dict[str, Any] = {"rank": scored.doc["models"][m]["rank"], "model": m}
            if run.checker == "bfcl":
                b = run.bfcl[m]
                row |= {"bfcl_accuracy": b.call_accuracy, "correct": b.correct_count, "total": b.total_count,
                        **{f"bfcl_{c}": s.accuracy for c, s in b.categories.items()}}
            row |= {k: v for k, v in self._model_rates(scored, m).items()}
            row |= {f"{e}_mean": s.mean for e, s in gm.extended.items()} | {f"{e}_pass_rate": s.pass_rate for e, s in gm.extended.items()}
            row |= {"function_wins": wins[m], "records": gm.counts.records, "invalid_records": gm.counts.records - gm.counts.valid_records}
            rows.append(row)
        return pd.DataFrame(rows)

    def item_table(self, scored: Scored, model: str | None) -> pd.DataFrame:
        winners, _ = self._winners(scored)
        per = self._functions(scored)
        rows = []
        for m in (scored.models if model is None else (model,)):
            for fname, row in per[m].items():
                w = winners.get(fname)
                rows.append({"model": m, "function": fname, **{k: (int(row[k]) if k in COUNTS else row[k]) for k in _FUNCTION_KEYS},
                             "winner": is_winner(w, m)})
        return pd.DataFrame(rows, columns=["model", "function", *_FUNCTION_KEYS, "winner"])

    def records_frame(self, scored: Scored, model: str | None) -> pd.DataFrame | None:
        """One row per model and record: validity, correctness, the call format found, the
        counts, the error; with the BFCL checker also the category, BFCL's verdict (`correct`,
        `error_type`, `error`) and the generic checker's (`generic_correct`)."""
        from extracteval.tasks.toolcalls.chunked import record_table

        run: ToolcallRun = scored.result
        frames = []
        for m in (scored.models if model is None else (model,)):
            recs = run.generic.records[m]
            verdicts = None
            if run.checker == "bfcl":
                fails = run.bfcl[m].failures
                verdicts = {
                    "category": [run.categories.get(r.id, "") for r in recs],
                    "correct": [r.id not in fails for r in recs],
                    "error_type": [fails[r.id].error_type if r.id in fails else None for r in recs],
                    "error": [fails[r.id].error if r.id in fails else None for r in recs],
                    "generic_correct": [r.correct for r in recs],
                    "generic_error": [r.error for r in recs],
                }
            frames.append(record_table(m, recs, verdicts))
        return pd.concat(frames, ignore_index=True) if frames else None

    def comparison_tables(self, scored: Scored) -> dict[str, pd.DataFrame]:
        winners, _ = self._winners(scored)
        out = {"leaderboard": self.ranking_table(scored, scored.models), "function_winners": winners_table(winners, "function", best=None)}
        dec = decision_table(scored.doc)
        if dec is not None:
            out["decision"] = dec
        return out

    # ---- figures and report --------------------------------------------------------------------

    def figures(self, scored: Scored, models: Sequence[str]) -> dict[str, Any]:
        from extracteval.report.figures import confusion_heatmap, item_f1_bars
        from extracteval.report.rate_figures import rate_bars

        run: ToolcallRun = scored.result
        suffix = f" — {models[0]}" if len(models) == 1 else ""
        table = pd.concat([self.item_table(scored, m) for m in models], ignore_index=True) if models else self.item_table(scored, None)
        table, note = worst_items(table, "function")
        rates = self.ranking_table(scored, models)
        label = " (generic checker; call accuracy: BFCL)" if run.checker == "bfcl" else ""
        out = {
            "toolcalls_rates.png": rate_bars(rates, rates=list(RATES), labels=_RATE_LABELS, title=f"toolcalls: rates per model{label}{suffix}"),
            "function_f1.png": item_f1_bars(table, item="function", title=f"toolcalls: argument F1 per function{note}{suffix}"),
            "confusion_counts.png": confusion_heatmap(table, item="function", title=f"toolcalls: argument TP / FP / FN per function{note}", counts=("tp", "fp", "fn")),
        }
        if run.checker == "bfcl":
            cats = sorted({c for m in models for c in run.bfcl[m].categories})
            out["bfcl_accuracy.png"] = rate_bars(rates, rates=["bfcl_accuracy", *[f"bfcl_{c}" for c in cats]],
                                                 labels={"bfcl_accuracy": "all categories", **{f"bfcl_{c}": c for c in cats}},
                                                 title=f"BFCL accuracy per category{suffix}", xlabel="accuracy")
        return out

    def params(self, scored: Scored) -> dict[str, str]:
        run: ToolcallRun = scored.result
        cfg = scored.config
        winners, _ = self._winners(scored)
        out = {
            "task": scored.task,
            "checker": run.checker,
            "truth": str(scored.truth_source),
            "n_records": str(run.n_records),
            "n_functions": str(len(winners)),
            "models": ",".join(scored.models),
        }
        if run.checker == "bfcl":
            out |= {"questions": ", ".join(scored.doc["inputs"]["questions"]), "categories": ",".join(cfg.get("categories", [])),
                    "underscore_to_dot_models": ",".join(scored.doc["config"].get("underscore_to_dot") or []) or "none",
                    "bfcl_warnings": str(len(scored.doc.get("warnings", [])))}
        else:
            out |= {"value_match": str(cfg.get("value_match")), "zero_division": str(cfg.get("zero_division")),
                    "pass_threshold": str(cfg.get("pass_threshold")), "possible_answer": str(cfg.get("possible_answer")),
                    "extended": ",".join(cfg.get("extended", [])) or "none"}
        out.update(decision_params(scored.doc))
        return out

    def model_params(self, scored: Scored, model: str) -> dict[str, str]:
        """Per model run: `underscore_to_dot` (true/false), whether its expected `a.b` names were looked for as `a_b`."""
        run: ToolcallRun = scored.result
        if run.checker != "bfcl":
            return {}
        return {"underscore_to_dot": str(bool(run.bfcl[model].underscore_to_dot)).lower()}

    def summary(self, scored: Scored) -> str:
        from extracteval.tasks.toolcalls.pipeline import render

        return render(scored.doc)

    def sections(self, scored: Scored, models: Sequence[str]) -> list[Section]:
        run: ToolcallRun = scored.result
        doc = scored.doc
        ranking = self.ranking_table(scored, models)
        pct = [c for c in ranking.columns if c in RATES or c.startswith("bfcl_") or c in ("generic_call_accuracy",) or c.endswith(("_mean", "_pass_rate"))]
        title = "Ranking (tool-call track, BFCL checker: call accuracy = BFCL accuracy)" if run.checker == "bfcl" else "Ranking (tool-call track)"
        out = [Section(title=title, table=percent_table(ranking, pct))]
        if len(models) > 1:
            out += decision_sections(doc)
            out.append(Section(title="Function winners (argument F1)", table=self.comparison_tables(scored)["function_winners"]))
        if run.checker == "bfcl":
            rows = []
            for m in models:
                for cat, cs in run.bfcl[m].categories.items():
                    rows.append({"model": m, "category": cat, "accuracy": f"{100 * cs.accuracy:.1f}%", "correct": cs.correct_count, "total": cs.total_count})
            out.append(Section(title="BFCL accuracy per category", table=pd.DataFrame(rows)))
            fails = [{"model": m, "id": i, "category": run.categories.get(i, ""), "error_type": v.error_type, "error": v.error}
                     for m in models for i, v in run.bfcl[m].failures.items()]
            if fails:
                out.append(Section(title=f"BFCL failures ({len(fails)})", table=pd.DataFrame(fails), status_column=None))
        frames = [self.item_table(scored, m) for m in models]
        out.append(Section(title="Per-function metrics (reference functions; other predicted names pooled)",
                           table=percent_table(pd.concat(frames, ignore_index=True), ["name_match_rate", "args_exact_rate"]) if frames else None))
        invalid = [{"model": m, "record_id": ex["id"], "error": ex["error"], "output (first 160 characters)": ex["output"]}
                   for m in models for ex in run.generic.models[m].to_dict()["invalid_examples"]]
        if invalid:
            out.append(Section(title="Invalid outputs (up to five per model)", table=pd.DataFrame(invalid)))
        formats = [{"model": m, "format": f, "records": n} for m in models for f, n in run.generic.models[m].formats.items()]
        if formats:
            out.append(Section(title="Output formats recognised", table=pd.DataFrame(formats)))
        warnings = [f"{w['file']}: line {w['line']} (id {w['id']}): {w['message']}" if "file" in w else w["message"]
                    for w in doc.get("warnings", [])]
        for m in models:
            gm = run.generic.models[m]
            if gm.missing_ids:
                warnings.append(f"{m}: no output for {len(gm.missing_ids)} record(s), counted invalid (e.g. {', '.join(gm.missing_ids[:5])})")
            if gm.extra_ids:
                warnings.append(f"{m}: {len(gm.extra_ids)} output(s) for ids not in the truth were ignored (e.g. {', '.join(gm.extra_ids[:5])})")
        return out + closing_sections(warnings, scored.config)


def _truth_frame(truth: Mapping[str, Any], ids: Sequence[str], possible_answer: bool) -> pd.DataFrame:
    """The truth as the run logs it: per record id, the references as canonical JSON text."""
    column = "ground_truth" if possible_answer else "calls"
    return pd.DataFrame({column: [_canonical(truth[i]) for i in ids]}, index=pd.Index(ids, name="id"))


def _function_rows(counts: Mapping[str, Mapping[str, int]], zd: float) -> dict[str, dict[str, float]]:
    """function → its counts (`tasks.toolcalls.functions.function_counts`) and ratios, by the task's one map."""
    from extracteval.tasks.toolcalls.metrics import count_metrics

    names = {"args_precision": "precision", "args_recall": "recall", "args_f1": "f1", "name_match_rate": "name_match_rate",
             "args_exact_rate": "args_exact_rate"}  # the map's metric → the function table's column
    rows = {}
    for fname, c in counts.items():
        got = count_metrics(c, which=tuple(names), zero_division=zd)
        rows[fname] = {**{k: float(v) for k, v in c.items()}, **{names[k]: float(v) for k, v in got.items()}}
    return rows


def _canonical(value: Any) -> str:
    from extracteval.core.decision_track import canonical_text

    return canonical_text(value)


ADAPTER = ToolcallsAdapter()
