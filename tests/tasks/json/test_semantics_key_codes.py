"""`_KeyTable.code` reads plain str / int / float values without `Normalizer.key`'s generic
dispatch: the canonical keys must be exactly the normaliser's, for any value."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from extracteval.tasks.json.paths import _KeyTable
from extracteval.core.normalize import NormalizationConfig, Normalizer

SCALARS = st.one_of(
    st.text(max_size=12),
    st.sampled_from(["1", " 1,000 ", "$5", "5%", "N/A", "none", "TRUE", "2024-01-01", "January 5, 1970", "01/02/2024", "1e3", "-0", "²"]),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([2**53 - 1, 2**53, 2**53 + 1, -(2**53) - 1]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([-0.0, 1e16, 1e16 + 2, 0.1, float("nan")]),
)


@settings(max_examples=500, deadline=None)
@given(st.lists(SCALARS, max_size=20), st.booleans())
def test_plain_scalars_get_the_normaliser_keys(values, dayfirst) -> None:
    cfg = NormalizationConfig(dayfirst=dayfirst)
    table = _KeyTable(Normalizer(cfg))
    reference = Normalizer(cfg)
    for v in values:
        c = table.code(v)
        expected = reference.key(v)
        assert (table.keys[c] if c >= 0 else None) == expected, v
        if isinstance(v, float) and math.isnan(v):
            assert v not in table.by_type.get(float, {})  # NaN never fills the cache
        else:
            assert table.by_type[type(v)][v] == c  # cached by type: True, 1 and 1.0 stay apart
