"""Benchmark the `spans` task against seqeval and nervaluate on the same data, in the same run.

Data: synthetic CoNLL-style BIO tags, 8 entity types, sentences of 25 tokens (1M tokens by
default), predictions = gold with boundary slips, type swaps, misses and spurious chunks.
Figures: end-to-end throughput (tokens/s) of extracteval exact-only and exact + relaxed (from
in-memory tag lists, the input seqeval takes, and from a CoNLL file; bootstrap intervals off,
as the peers compute none), seqeval
`classification_report`, nervaluate `Evaluator.evaluate()` (all its schemes), peak memory, and
one 100k-token document against 4k sentences of 25 tokens (cost must be linear in length).

    python bench/run.py spans            # or: python bench/bench_spans.py [--tokens N]
"""

from __future__ import annotations

import os
import random
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np

WORDS = "the board of Acme Corp met in Paris on Monday to approve a $ 5 million budget for new research labs and staff".split()
TYPES = ["PER", "ORG", "LOC", "MISC", "DATE", "MONEY", "PRODUCT", "EVENT"]


def make_data(n_tokens: int, sent_len: int, seed: int = 0) -> tuple[list[list[str]], list[list[str]]]:
    rng = random.Random(seed)
    gold, pred = [], []
    for _ in range(max(1, n_tokens // sent_len)):
        g = ["O"] * sent_len
        i = 0
        while i < sent_len:
            if rng.random() < 0.25:
                L = min(rng.randint(1, 4), sent_len - i)
                t = rng.choice(TYPES)
                g[i] = f"B-{t}"
                for k in range(i + 1, i + L):
                    g[k] = f"I-{t}"
                i += L + 1
            else:
                i += 1
        p = list(g)
        for k in range(sent_len):
            r = rng.random()
            if g[k].startswith("B-"):
                if r < 0.05:  # type swap of the whole chunk
                    t = rng.choice(TYPES)
                    j = k
                    while j < sent_len and (j == k or p[j].startswith("I-")):
                        p[j] = p[j][:2] + t
                        j += 1
                elif r < 0.10 and k + 1 < sent_len and g[k + 1] == "O":  # run on one token
                    p[k + 1] = "I-" + g[k][2:]
                elif r < 0.13:  # missed
                    j = k
                    while j < sent_len and (j == k or g[j].startswith("I-")):
                        p[j] = "O"
                        j += 1
            elif g[k] == "O" and r < 0.01:
                p[k] = "B-" + rng.choice(TYPES)  # spurious
        gold.append(g)
        pred.append(p)
    return gold, pred


def _flat(sents: list[list[str]]) -> tuple[list[str], np.ndarray]:
    flat = [t for s in sents for t in s]
    sent = np.zeros(len(flat), dtype=bool)
    sent[np.cumsum([0] + [len(s) for s in sents[:-1]])] = True
    return flat, sent


def timed(fn, repeat: int = 1) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    from extracteval.core.spans import SpansConfig, corpus_from_tags, score_spans

    n = int(os.environ.get("BENCH_SPANS_TOKENS", "1000000"))
    if "--tokens" in sys.argv:
        n = int(sys.argv[sys.argv.index("--tokens") + 1])
    gold, pred = make_data(n, 25)
    n_tok = sum(map(len, gold))
    print(f"data: {n_tok:,} tokens, {len(gold):,} sentences of 25, {len(TYPES)} types (BIO)")

    words = [WORDS[(i * 7919) % len(WORDS)] for i in range(25)]
    tokens = [words] * len(gold)  # the words only feed TextSim; their identity does not matter

    def run_exact():
        fg, sent = _flat(gold)
        fp, _ = _flat(pred)
        c = corpus_from_tags(fg, {"m": fp}, sentence_start=sent)
        return score_spans(c, config=SpansConfig(scheme="conlleval", relaxed=False, bootstrap=0))

    def run_full():
        fg, sent = _flat(gold)
        fp, _ = _flat(pred)
        ft, _ = _flat(tokens)
        c = corpus_from_tags(fg, {"m": fp}, sentence_start=sent, tokens=ft)
        return score_spans(c, config=SpansConfig(scheme="conlleval", bootstrap=0))

    run_full()  # warm-up: imports (scipy, rapidfuzz) are not part of the figures
    t_exact = timed(run_exact, 3)
    t_full = timed(run_full, 3)
    print(f"extracteval exact only (lists → result):          {t_exact:7.3f} s  {n_tok / t_exact / 1e6:6.2f} M tokens/s")
    print(f"extracteval exact + relaxed + curve + errors:     {t_full:7.3f} s  {n_tok / t_full / 1e6:6.2f} M tokens/s")

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.conll"
        with open(path, "w", encoding="utf-8") as fh:
            for g, p in zip(gold, pred):
                fh.write("".join(f"{w} {a} {b}\n" for w, a, b in zip(words, g, p)))
                fh.write("\n")
        from extracteval.io.spans_inputs import load_token_corpus

        def from_file():
            c = load_token_corpus(conll=[("m", path)])
            return score_spans(c, config=SpansConfig(scheme="conlleval", bootstrap=0))

        t_file = timed(from_file, 1)
        print(f"extracteval from CoNLL file, everything:          {t_file:7.3f} s  {n_tok / t_file / 1e6:6.2f} M tokens/s")

    tracemalloc.start()
    run_full()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(f"extracteval peak traced memory (exact + relaxed): {peak / 2**20:7.1f} MiB")

    try:
        from seqeval.metrics import classification_report
    except ImportError:
        print("seqeval: not installed (pip install -e '.[bench]'); skipped")
        t_seq = None
    else:
        t_seq = timed(lambda: classification_report(gold, pred, output_dict=True, zero_division=0), 1)
        print(f"seqeval classification_report:                   {t_seq:7.3f} s  {n_tok / t_seq / 1e6:6.2f} M tokens/s")
    try:
        from nervaluate import Evaluator
    except ImportError:
        print("nervaluate: not installed (pip install -e '.[bench]'); skipped")
        t_ner = None
    else:
        t_ner = timed(lambda: Evaluator(gold, pred, tags=TYPES, loader="list").evaluate(), 1)
        print(f"nervaluate Evaluator.evaluate (all schemes):      {t_ner:7.3f} s  {n_tok / t_ner / 1e6:6.2f} M tokens/s")
    if t_seq:
        print(f"ratio vs seqeval:    exact {t_seq / t_exact:6.1f}×   exact+relaxed {t_seq / t_full:6.1f}×")
    if t_ner:
        print(f"ratio vs nervaluate: exact {t_ner / t_exact:6.1f}×   exact+relaxed {t_ner / t_full:6.1f}×")

    # linear in document length: one 100k-token document vs 4k sentences of 25 tokens
    short_g, short_p = make_data(100_000, 25, seed=1)
    long_g = [[t for s in short_g for t in s]]
    long_p = [[t for s in short_p for t in s]]
    long_t = [[words[i % 25] for i in range(len(long_g[0]))]]
    short_t = [words] * len(short_g)

    def ours_on(g, p, t):
        fg, sent = _flat(g)
        fp, _ = _flat(p)
        ft, _ = _flat(t)
        return score_spans(corpus_from_tags(fg, {"m": fp}, sentence_start=sent, tokens=ft), config=SpansConfig(scheme="conlleval", bootstrap=0))

    t_short = timed(lambda: ours_on(short_g, short_p, short_t), 3)
    t_long = timed(lambda: ours_on(long_g, long_p, long_t), 3)
    print(f"extracteval 4k×25-token sentences: {t_short:6.3f} s; one 100k-token document: {t_long:6.3f} s; long/short = {t_long / t_short:4.2f}")
    if t_ner is not None:
        # nervaluate is quadratic in document length (about 3 minutes at 100k tokens), so it
        # is measured at 20k tokens: 800 sentences against one 20k-token document
        sg, sp = short_g[:800], short_p[:800]
        lg, lp = [[t for s in sg for t in s]], [[t for s in sp for t in s]]
        n_short = timed(lambda: Evaluator(sg, sp, tags=TYPES, loader="list").evaluate(), 1)
        n_long = timed(lambda: Evaluator(lg, lp, tags=TYPES, loader="list").evaluate(), 1)
        print(f"nervaluate  800×25-token sentences: {n_short:6.3f} s; one 20k-token document: {n_long:6.3f} s; long/short = {n_long / n_short:4.2f}")


if __name__ == "__main__":
    main()
