"""Benchmark of the `labels` task: 200k rows × 5 features (6 to 300 labels each), one model.

Measured in the same run on the same data: extracteval's `score_labels` (normalisation of each
distinct value, both views, row accuracy), scikit-learn's `precision_recall_fscore_support`
(average=None, on labels already normalised — it does not normalise, so it does less work), and
a naive Python loop counting one-vs-rest tp/fp/fn per label, all timed by CPU time
(`time.process_time`, so other jobs on a shared machine do not skew the ratios), three times each
in turns on data made afresh, each keeping its fastest call (see `_timing.py`: a call on the
DataFrames of an earlier one would find what pandas keeps on them — the index's hash table that
checks the 200k ids for duplicates — already made). Also checks that the per-label F1 of all
three agree.
"""

from __future__ import annotations

import random
import resource

from _timing import best_of, spread

N_ROWS = 200_000
FEATURES = {"colour": 6, "size": 5, "country": 40, "status": 3, "code": 300}


def make_data(n: int, seed: int = 0):
    import pandas as pd

    rng = random.Random(seed)
    truth, pred = {}, {}
    for f, k in FEATURES.items():
        labels = [f"{f}-{i}" for i in range(k)] + [None]
        t = [rng.choice(labels) for _ in range(n)]
        p = [x if rng.random() < 0.8 else rng.choice(labels) for x in t]
        truth[f], pred[f] = t, p
    ids = [f"r{i}" for i in range(n)]
    return pd.DataFrame(truth, index=ids, dtype=object), pd.DataFrame(pred, index=ids, dtype=object)


def naive(truth, pred) -> dict[str, dict[str, float]]:
    out = {}
    for f in truth.columns:
        tp: dict[str, int] = {}
        fp: dict[str, int] = {}
        fn: dict[str, int] = {}
        for a, b in zip(truth[f].tolist(), pred[f].tolist()):
            a = "<MISSING>" if a is None else a.strip().casefold()
            b = "<MISSING>" if b is None else b.strip().casefold()
            if a == b:
                tp[a] = tp.get(a, 0) + 1
            else:
                fn[a] = fn.get(a, 0) + 1
                fp[b] = fp.get(b, 0) + 1
        labels = set(tp) | set(fp) | set(fn)
        out[f] = {}
        for lab in labels:
            t, p_, n_ = tp.get(lab, 0), fp.get(lab, 0), fn.get(lab, 0)
            out[f][lab] = 2 * t / (2 * t + p_ + n_) if t + p_ + n_ else 0.0
    return out


def main() -> None:
    from sklearn.metrics import precision_recall_fscore_support

    from extracteval.tasks.labels.semantics import ModelLabels, score_labels

    truth, pred = make_data(1000)  # for the warm-up below only: each timed call makes its own data
    cells = N_ROWS * len(FEATURES)
    # warm-up on 1,000 rows: imports and first-call costs are not what this measures
    score_labels(truth, [ModelLabels(name="m", values=pred)])
    precision_recall_fscore_support(["a", "b"], ["a", "a"], average=None, zero_division=0)

    def sklearn(truth, pred) -> dict[str, dict[str, float]]:
        sk = {}
        for f in FEATURES:
            yt = truth[f].fillna("<MISSING>").to_numpy(dtype=str)
            yp = pred[f].fillna("<MISSING>").to_numpy(dtype=str)
            labels = sorted(set(yt) | set(yp))
            _, _, f1, _ = precision_recall_fscore_support(yt, yp, labels=labels, average=None, zero_division=0)
            sk[f] = dict(zip(labels, f1))
        return sk

    data = lambda: make_data(N_ROWS)  # noqa: E731
    t_ours, t_sk, t_naive = best_of([(data, lambda t, p: score_labels(t, [ModelLabels(name="m", values=p)])), (data, sklearn), (data, naive)])
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # of the whole process, the three sides and their data
    r, sk, nv = t_ours.result, t_sk.result, t_naive.result
    ours, skt, nt = t_ours.cpu, t_sk.cpu, t_naive.cpu

    agree = all(
        abs(r.models["m"].aligned.features[f].labels[lab]["f1"] - sk[f][lab]) < 1e-12 and abs(sk[f][lab] - nv[f][lab]) < 1e-12
        for f in FEATURES for lab in sk[f]
    )
    print(f"extracteval score_labels: {N_ROWS:,} rows × {len(FEATURES)} features in {ours:.2f} s CPU = {cells / ours / 1e6:.2f} M cells/s "
          f"({N_ROWS / ours:,.0f} rows/s, both views + row accuracy; CPU s per call {spread(t_ours)}) · process peak RSS {peak_mb:,.0f} MB")
    print(f"scikit-learn precision_recall_fscore_support (pre-normalised labels, per-label only): {skt:.2f} s "
          f"= {cells / skt / 1e6:.2f} M cells/s ({spread(t_sk)}) · extracteval/sklearn time ratio {ours / skt:.2f}")
    print(f"naive Python loop (casefold + per-label F1 only): {nt:.2f} s = {cells / nt / 1e6:.2f} M cells/s "
          f"({spread(t_naive)}) · extracteval/naive time ratio {ours / nt:.2f}")
    print(f"per-label F1 identical across the three: {agree}")


if __name__ == "__main__":
    main()
