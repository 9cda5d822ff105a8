"""Per-field count patterns (what the per-field intervals of the streaming engines resample)
equal a plain count of (model, field, tp, fp, fn, tn) rows, on every counting path: a small code
space (one bincount), a large one (np.unique of codes) and counts too large for an int64 code."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from extracteval.core.bootstrap import field_patterns, merge_field_patterns


def _plain(counts):
    c = Counter()
    for mi, a in enumerate(counts):
        for r in range(a.shape[0]):
            for j in range(a.shape[1]):
                c[(mi, j, *map(int, a[r, j, :4]))] += 1
    return dict(c)


def _as_dict(rows, freq):
    return {tuple(r): int(x) for r, x in zip(rows.tolist(), freq.tolist())}


@pytest.mark.parametrize(("top", "dtype"), [(3, np.int32), (300, np.int32), (2**20, np.int64)])
@pytest.mark.parametrize("block", [1, 7, 1 << 16])
def test_field_patterns_count_every_model_field_and_count_row(top, dtype, block):
    rng = np.random.default_rng(top + block)
    counts = [rng.integers(0, top, size=(37, 4, 5)).astype(dtype) for _ in range(3)]
    want = _plain(counts)
    got = _as_dict(*field_patterns(counts, block=block))
    assert got == want
    assert sum(v for k, v in got.items() if k[:2] == (1, 2)) == 37  # every record once per model and field
    # split into chunks and merged: the same patterns
    halves = [field_patterns([c[:20] for c in counts]), field_patterns([c[20:] for c in counts])]
    assert _as_dict(*merge_field_patterns(halves)) == want


def test_no_records_no_patterns():
    rows, freq = field_patterns([np.zeros((0, 3, 5), dtype=np.int32)])
    assert rows.shape == (0, 6) and freq.shape == (0,)


@pytest.mark.parametrize("top", [2, 3, 200])
def test_record_patterns_past_the_prefix_equal_one_pass_over_all_rows(monkeypatch, top):
    # many rows: the first ones are counted alone (to give up early when they already hold too
    # many patterns), the rest merged in; the result is that of counting all rows at once
    import extracteval.core.bootstrap as bootstrap

    rows = np.random.default_rng(top).integers(0, top, size=(5000, 6))
    monkeypatch.setattr(bootstrap, "PATTERN_ENTRIES", 6 * 600)  # ≤ 600 patterns kept; first 1,200 rows alone
    patterns, freq = bootstrap.record_patterns(rows)
    distinct, counts = np.unique(rows, axis=0, return_counts=True)
    if len(distinct) > 600:
        assert patterns is None and freq is None
    else:
        assert _as_dict(patterns, freq) == {tuple(r): int(c) for r, c in zip(distinct.tolist(), counts.tolist())}
        assert freq.sum() == 5000
