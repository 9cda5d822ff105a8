"""Terminal view of a `spans` result: conlleval's report layout, then relaxed matching, the
F1-vs-threshold curve and the error breakdown."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from extracteval.report.terminal import colour, comparison_line, percent, table

__all__ = ["classification_lines", "conlleval_lines", "render_spans", "schema_table"]


def _pct(num: int, den: int) -> float:
    # conlleval.pl computes 100*correct/found (in that order); same order → same last digit
    return 100 * num / den if den > 0 else 0.0


def _fb1(p: float, r: float) -> float:
    return 2 * p * r / (p + r) if p + r > 0 else 0.0


def conlleval_lines(
    *,
    tokens: int | None,
    correct_tags: int | None,
    per_type: Sequence[tuple[str, int, int, int]],
    unit_words: tuple[str, str] = ("tokens", "phrases"),
) -> list[str]:
    """conlleval.pl's report, character for character.

    Args:
        tokens: tokens processed (None for span input: the first line then counts documents
            and there is no accuracy).
        correct_tags: tokens whose gold and predicted tags are equal.
        per_type: (type, correct, found in predictions, found in gold), any order.
        unit_words: what is counted ("tokens", "phrases"); span input says ("documents", "spans").
    """
    correct = sum(c for _, c, _, _ in per_type)
    guessed = sum(g for _, _, g, _ in per_type)
    gold = sum(t for _, _, _, t in per_type)
    p = _pct(correct, guessed)
    r = _pct(correct, gold)
    first, second = unit_words
    lines = [f"processed {tokens if tokens is not None else 0} {first} with {gold} {second}; found: {guessed} {second}; correct: {correct}."]
    head = f"accuracy: {_pct(correct_tags or 0, tokens):6.2f}%; " if tokens and correct_tags is not None else ""
    lines.append(f"{head}precision: {p:6.2f}%; recall: {r:6.2f}%; FB1: {_fb1(p, r):6.2f}")
    for name, c, g, t in sorted(per_type):
        tp_ = _pct(c, g)
        tr = _pct(c, t)
        lines.append(f"{name:>17}: precision: {tp_:6.2f}%; recall: {tr:6.2f}%; FB1: {_fb1(tp_, tr):6.2f}  {g}")
    return lines


def _per_type(mode: dict[str, Any]) -> list[tuple[str, int, int, int]]:
    return [(t, m["tp"], m["tp"] + m["fp"], m["tp"] + m["fn"]) for t, m in mode["per_tag"].items()]


def render_spans(doc: dict[str, Any], *, use_colour: bool = False, style: str = "default") -> str:
    """The terminal view of `SpansResult.to_dict()`: in the `default` style, or `nervaluate` (the
    four SemEval-2013 schemas) or `classification` (seqeval's classification_report)."""
    if style in ("nervaluate", "classification"):
        return _styled(doc, style, use_colour)
    models = doc["models"]
    ranking = doc["ranking"]
    cfg = doc["config"]
    token = doc["unit"] == "token"
    relaxed_keys = [f"relaxed@{t:g}" for t in cfg["report_thresholds"] if all(f"relaxed@{t:g}" in models[m] for m in ranking)]
    out = [
        f"extracteval · spans · {len(ranking)} model(s) · {doc['n_documents']} "
        + ("sentences" if token else "documents")
        + (f" · {doc['n_tokens']} tokens" if token else "")
        + f" · {doc['n_gold_spans']} gold spans · scheme {cfg['scheme'] or 'n/a (span input)'}",
        f"relaxed score = {cfg['iou_weight']:g}·IoU + {cfg['text_weight']:g}·TextSim ({cfg['text_similarity']}), same tag, overlapping",
        "",
    ]
    if len(ranking) > 1:
        out += _ranking_lines(doc, relaxed_keys, token, use_colour)
    for m in ranking:
        r = models[m]
        out.append(colour(f"== {m}" + (f"  (rank {r['rank']}, {r['tier'].replace('_', ' ')})" if len(ranking) > 1 else ""), "bold", use_colour))
        out.append("Exact match (conlleval layout):")
        out += conlleval_lines(
            tokens=doc["n_tokens"] if token else doc["n_documents"],
            correct_tags=r.get("token_correct") if token else None,
            per_type=_per_type(r["exact"]),
            unit_words=("tokens", "phrases") if token else ("documents", "spans"),
        )
        for avg, what in (("macro", "mean over tags"), ("weighted", "mean over tags weighted by gold spans")):
            a = r["exact"][avg]
            out.append(f"{avg} avg ({what}): precision {a['precision'] * 100:6.2f}%; recall {a['recall'] * 100:6.2f}%; FB1 {a['f1'] * 100:6.2f}")
        out.append("")
        out.append("Relaxed match (per tag: support, exact F1, then P/R/F1 at each threshold):")
        out.append(_tag_table(r, relaxed_keys))
        out.append("")
        pts = r["curve"]
        if pts:
            out.append("F1 vs relaxed threshold (micro):")
        for i in range(0, len(pts), 7):
            chunk = pts[i : i + 7]
            out.append("  " + "  ".join(f"{p['threshold']:.2f}→{100 * p['f1']:5.1f}" for p in chunk))
        if pts:
            out.append("")
        out += _error_lines(r, cfg, use_colour)
        out.append("")
    for w in doc.get("warnings", []):
        out.append(colour(f"warning: {w}", "yellow", use_colour))
    return "\n".join(out).rstrip()


def _ranking_lines(doc: dict[str, Any], relaxed_keys: list[str], token: bool, use_colour: bool) -> list[str]:
    """The ranking table of several models (exact P/R/F1, its interval, macro F1, relaxed F1s,
    token accuracy, tier, tag wins) and the adjacent-rank comparisons."""
    models, ranking = doc["models"], doc["ranking"]
    show_ci = any(models[m].get("ci") for m in ranking)
    rows, cols = [], []
    for m in ranking:
        r = models[m]
        e = r["exact"]
        row = [f"#{r['rank']}", m, percent(e["micro"]["precision"]), percent(e["micro"]["recall"]), percent(e["micro"]["f1"])]
        if show_ci:
            ci = (r.get("ci") or {}).get("exact_micro_f1")
            row.append(f"[{100 * ci['low']:.1f}, {100 * ci['high']:.1f}]" if ci else "-")
        row.append(percent(e["macro"]["f1"]))
        row += [percent(r[k]["micro"]["f1"]) for k in relaxed_keys]
        if token:
            row.append(percent(r.get("token_accuracy")))
        row += [r["tier"].replace("_", " "), r["wins_label"]]
        rows.append(row)
        n_num = 4 + (1 if show_ci else 0) + len(relaxed_keys) + (1 if token else 0)
        cols.append([None, "bold"] + [None] * n_num + [r.get("tier_colour"), None])
    headers = ["Rank", "Model", "Exact P", "Exact R", "Exact F1"] + (["F1 95% CI"] if show_ci else []) + ["Macro F1"]
    headers += [f"F1 {k}" for k in relaxed_keys] + (["Token acc"] if token else []) + ["Tier", "Tag wins"]
    out = ["Ranking (by exact micro F1, then precision, recall, tag wins, name):",
           table(headers, rows, align="ll" + "r" * (len(headers) - 4) + "ll", colours=cols, use_colour=use_colour)]
    if doc.get("comparisons"):
        out.append("Adjacent ranks (documents resampled, paired bootstrap of the exact micro F1 difference):")
        out += ["  " + comparison_line(c) for c in doc["comparisons"]]
    out.append("")
    return out


def _tag_table(r: dict[str, Any], relaxed_keys: list[str]) -> str:
    """One model's per-tag table: support and exact F1, then P/R/F1 at each relaxed threshold,
    closed by the micro, macro and weighted rows (exact F1; P/R/F1 at each threshold)."""
    tags = sorted(set(r["exact"]["per_tag"]) | {t for k in relaxed_keys for t in r[k]["per_tag"]})
    headers = ["Tag", "Support", "Exact F1"]
    for k in relaxed_keys:
        headers += [f"P {k}", f"R {k}", f"F1 {k}"]
    rows = []
    for t in tags + ["(micro)", "(macro)", "(weighted)"]:
        if t.startswith("("):
            avg = t.strip("()")
            row = [t, str(r["exact"]["micro"]["support"]) if avg == "micro" else "", percent(r["exact"][avg]["f1"])]
            for k in relaxed_keys:
                a = r[k][avg]
                row += [percent(a["precision"]), percent(a["recall"]), percent(a["f1"])]
        else:
            ex = r["exact"]["per_tag"].get(t)
            row = [t, str(ex["support"] if ex else 0), percent(ex["f1"] if ex else 0.0)]
            for k in relaxed_keys:
                x = r[k]["per_tag"].get(t)
                row += [percent(x["precision"]), percent(x["recall"]), percent(x["f1"])] if x else ["-", "-", "-"]
        rows.append(row)
    return table(headers, rows, align="l" + "r" * (len(headers) - 1))


def _error_lines(r: dict[str, Any], cfg: dict[str, Any], use_colour: bool) -> list[str]:
    """One model's exact-match errors by kind, with up to three examples each, the most frequent
    tag confusions and the ill-formed chunks dropped."""
    c = r["errors"]["counts"]
    total = sum(c.values())
    out = [f"Errors of the exact match ({total}): boundary {c['boundary']}, type {c['type']}, "
           f"boundary+type {c['boundary_type']}, missed {c['missed']}, spurious {c['spurious']}"]
    for kind, label in (("boundary", "boundary"), ("type", "type"), ("boundary_type", "boundary+type"), ("missed", "missed"), ("spurious", "spurious")):
        for ex in r["errors"]["examples"].get(kind, [])[:3]:
            out.append(f"  {label:<13} {ex['doc']}: gold {_fmt_span(ex['gold'])}  pred {_fmt_span(ex['pred'])}")
    if r["errors"]["confusions"]:
        top = r["errors"]["confusions"][:5]
        out.append("  tag confusions (gold→pred): " + ", ".join(f"{x['gold']}→{x['pred']} ×{x['count']}" for x in top))
    if r.get("ill_formed_chunks"):
        out.append(colour(f"  {r['ill_formed_chunks']} ill-formed predicted chunk(s) dropped under {cfg['scheme']}", "yellow", use_colour))
    return out


def _fmt_span(s: dict[str, Any] | None) -> str:
    if s is None:
        return "—"
    text = s.get("text")
    shown = "" if text is None else f" {text[:40]!r}" + ("…" if len(text) > 40 else "")
    return f"{s['tag']}[{s['start']},{s['end']}){shown}"


_SCHEMA_COLUMNS = (("COR", "correct"), ("INC", "incorrect"), ("PAR", "partial"), ("MIS", "missed"), ("SPU", "spurious"),
                   ("POS", "possible"), ("ACT", "actual"))


def _schema_row(name: str, d: dict[str, Any]) -> list[str]:
    return [name, *(str(d[k]) for _, k in _SCHEMA_COLUMNS), *(f"{d[k]:.4f}" for k in ("precision", "recall", "f1"))]


def schema_table(semeval: dict[str, Any]) -> str:
    """The four schemas (rows) × COR INC PAR MIS SPU POS ACT P R F1 of one model, then the same per type."""
    heads = [*(h for h, _ in _SCHEMA_COLUMNS), "P", "R", "F1"]
    schemas = list(semeval)
    out = [table(["Schema", *heads], [_schema_row(s, semeval[s]) for s in schemas], align="l" + "r" * len(heads))]
    tags = sorted({t for s in schemas for t in semeval[s]["per_type"]})
    if tags:
        rows = [[t if i == 0 else "", *_schema_row(s, semeval[s]["per_type"][t])] for t in tags for i, s in enumerate(schemas)]
        out += ["", "Per type:", table(["Type", "Schema", *heads], rows, align="ll" + "r" * len(heads))]
    return "\n".join(out)


def classification_lines(mode: dict[str, Any], digits: int = 2) -> list[str]:
    """seqeval's `classification_report` layout of one matching mode: per type precision, recall,
    f1-score and support, then the micro, macro and weighted averages."""
    names = sorted(mode["per_tag"])
    width = max([len(n) for n in names] + [len("weighted avg"), digits])
    row_fmt = "{:>{width}s} " + " {:>9.{digits}f}" * 3 + " {:>9}"
    lines = [("{:>{width}s} " + " {:>9}" * 4).format("", "precision", "recall", "f1-score", "support", width=width), ""]
    for n in names:
        m = mode["per_tag"][n]
        lines.append(row_fmt.format(n, m["precision"], m["recall"], m["f1"], m["support"], width=width, digits=digits))
    lines.append("")
    support = mode["micro"]["support"]
    for avg in ("micro", "macro", "weighted"):
        a = mode[avg]
        lines.append(row_fmt.format(f"{avg} avg", a["precision"], a["recall"], a["f1"], support, width=width, digits=digits))
    return lines


def _styled(doc: dict[str, Any], style: str, use_colour: bool) -> str:
    """The `nervaluate` or `classification` report of every model, in ranking order."""
    cfg = doc["config"]
    what = (f"SemEval-2013 schemas (nervaluate), min overlap {cfg.get('min_overlap', 1.0):g}% of the gold span" if style == "nervaluate"
            else "exact match, seqeval classification_report layout")
    out = [f"extracteval · spans · {len(doc['ranking'])} model(s) · {doc['n_documents']} "
           + ("sentences" if doc["unit"] == "token" else "documents") + f" · {doc['n_gold_spans']} gold spans · {what}", ""]
    for m in doc["ranking"]:
        out.append(colour(f"== {m}", "bold", use_colour))
        out += [schema_table(doc["models"][m]["nervaluate"])] if style == "nervaluate" else classification_lines(doc["models"][m]["exact"])
        out.append("")
    for w in doc.get("warnings", []):
        out.append(colour(f"warning: {w}", "yellow", use_colour))
    return "\n".join(out).rstrip()
