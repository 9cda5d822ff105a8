"""Optimal one-to-one matching: never greedy, never dependent on input order."""

from __future__ import annotations

import numpy as np

__all__ = ["max_matching"]


def max_matching(score: np.ndarray, threshold: float) -> list[tuple[int, int]]:
    """Pairs (i, j) that maximise first the number of pairs with score ≥ threshold, then their
    total score (scipy's linear_sum_assignment on a shifted matrix).

    Example:
        >>> import numpy as np
        >>> # greedy would take (0, 0) and leave row 1 unmatched
        >>> sorted(max_matching(np.array([[0.9, 0.8], [0.7, 0.0]]), 0.5))
        [(0, 1), (1, 0)]
    """
    if score.size == 0:
        return []
    from scipy.optimize import linear_sum_assignment

    ok = score >= threshold
    if not ok.any():
        return []
    # Every admissible pair is worth more than any total of scores, so the count of pairs comes
    # first and the summed score only breaks ties between matchings of equal size.
    big = float(min(score.shape) + 1)
    weight = np.where(ok, big + np.clip(score, 0.0, 1.0), 0.0)
    rows, cols = linear_sum_assignment(weight, maximize=True)
    return [(int(i), int(j)) for i, j in zip(rows, cols) if ok[i, j]]
