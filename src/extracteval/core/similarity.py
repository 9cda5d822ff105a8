"""Similarity backends behind one small batched protocol.

`similarity(a, b)` takes two equally long lists of strings and returns one float in [0, 1] per
pair. Backends cache per distinct pair; none downloads anything.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np

from extracteval.errors import InputError

__all__ = ["SimilarityBackend", "FuzzySimilarity", "get_similarity", "FUZZY_SCORERS"]

FUZZY_SCORERS = ("ratio", "partial_ratio", "token_sort_ratio", "token_set_ratio", "WRatio", "QRatio")


@runtime_checkable
class SimilarityBackend(Protocol):
    name: str

    def similarity(self, a: list[str], b: list[str]) -> np.ndarray: ...


@dataclass
class FuzzySimilarity:
    """rapidfuzz similarity / 100 (default scorer `fuzz.ratio`), cached per distinct pair.

    Example:
        >>> float(FuzzySimilarity().similarity(["acme corp"], ["acme corp."])[0]) > 0.9
        True
    """

    scorer: str = "ratio"
    name: str = "fuzzy"
    _cache: dict[tuple[str, str], float] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if self.scorer not in FUZZY_SCORERS:
            raise InputError(f"fuzzy scorer: expected one of {', '.join(FUZZY_SCORERS)}, but got {self.scorer!r}.")

    def similarity(self, a: list[str], b: list[str]) -> np.ndarray:
        if len(a) != len(b):
            raise ValueError(f"similarity() needs two lists of equal length, got {len(a)} and {len(b)}.")
        from rapidfuzz import fuzz

        fn = getattr(fuzz, self.scorer)
        out = np.empty(len(a), dtype=np.float64)
        cache = self._cache
        for i, pair in enumerate(zip(a, b)):
            s = cache.get(pair)
            if s is None:
                s = cache[pair] = fn(pair[0], pair[1]) / 100.0
            out[i] = s
        return out


def get_similarity(name: str, **options: object) -> SimilarityBackend:
    """Look a similarity backend up by name; the error lists the valid names."""
    backends = {"fuzzy": FuzzySimilarity}
    try:
        cls = backends[name]
    except KeyError:
        raise InputError(f"similarity: expected one of {', '.join(sorted(backends))}, but got {name!r}.") from None
    return cls(**options)  # type: ignore[arg-type]
