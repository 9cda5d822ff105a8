from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from extracteval.core.normalize import NormalizationConfig, Normalizer


@pytest.mark.parametrize(
    "a,b",
    [
        ("2024-01-01", "January 1, 2024"),
        ("2024-01-01", "1 January 2024"),
        ("2024-01-01", "Jan 1, 2024"),
        ("2024-01-01", "01/01/2024"),
        ("2024-03-02", "03/02/2024"),
        ("2024-01-01", "2024/01/01"),
        ("1,000", "1000.0"),
        ("1000", "1e3"),
        ("$1,250.50", "1250.5"),
        ("USD 99", "99"),
        ("15%", "15"),
        ("Yes", "true"),
        ("NO", "false"),
        ("  Service   Agreement ", "service agreement"),
        ("ﬁle", "file"),  # NFKC ligature
    ],
)
def test_equal_after_normalisation(a, b):
    n = Normalizer()
    assert n.key(a) == n.key(b)


@pytest.mark.parametrize(
    "a,b",
    [
        ("2024", "2024-01-01"),  # plain numbers are never dates
        ("foo bar", "foo baz"),  # two different unparsable values are not equal
        ("13/45/2024", "14/45/2024"),  # invalid dates stay text and stay different
        ("1.2.33", "1.2.34"),  # version strings are not dates
        ("1,00", "100"),  # malformed thousands separator stays text
    ],
)
def test_not_equal(a, b):
    n = Normalizer()
    assert n.key(a) != n.key(b)


@pytest.mark.parametrize("v", [None, float("nan"), "", "   ", "Not Present", "N/A", "na", "None", "NULL", "-", [], {}])
def test_absent_values(v):
    assert Normalizer().key(v) is None


def test_dayfirst_flag():
    assert Normalizer(NormalizationConfig(dayfirst=True)).key("03/02/2024") == "d:2024-02-03"
    assert Normalizer().key("03/02/2024") == "d:2024-03-02"


def test_custom_null_tokens():
    n = Normalizer(NormalizationConfig(null_tokens=frozenset({"missing"})))
    assert n.key("MISSING") is None
    assert n.key("n/a") == "t:n/a"


def test_parse_is_cached_per_distinct_value():
    n = Normalizer()
    for _ in range(3):
        n.key("January 1, 2024")
    assert len(n._cache) == 1


def test_typed_python_values():
    from datetime import date, datetime

    n = Normalizer()
    assert n.key(True) == n.key("yes")
    assert n.key(3) == n.key(3.0) == n.key("3")
    assert n.key(date(2024, 1, 1)) == n.key(datetime(2024, 1, 1)) == n.key("2024-01-01")
    assert n.key(math.inf) == "n:inf"


@given(st.one_of(st.text(max_size=30), st.integers(), st.floats(allow_nan=True), st.booleans(), st.none()))
def test_normalisation_is_idempotent_and_total(v):
    n = Normalizer()
    k = n.key(v)
    assert k is None or isinstance(k, str)
    assert n.key(v) == k
    if k is not None and k.startswith("t:"):
        # the normalised text of a text key is its own fixed point
        assert n.key(k[2:]) == k


_DATE_PIECES = st.sampled_from(["2024-01-05", "5/1/2024", "05.01.2024", "1/5/24", "January 5, 2024", "5th of January 2024",
                                "mon, jan 5, 2024", "5-jan-2024", "2024-01-05t10:30:00z", "2024-01-05 10:30+02:00",
                                "2024-01-05t10:30:00.5", "acme 12 inc.", "person 42", "v1.2.33", "z", "12"])


@given(st.lists(st.one_of(_DATE_PIECES, st.text("0123456789 -/.:tz+,ofjanuaryth", max_size=6)), min_size=1, max_size=3))
def test_the_date_shortcut_never_skips_a_date(parts):
    # _classify_text only tries the date shapes on text ending in a digit or `z`; every shape
    # that parses must indeed end so, or the shortcut would turn a date into text
    text = " ".join(" ".join(parts).split())
    if text and Normalizer()._date(text) is not None:
        assert text[-1].isdigit() or text[-1] == "z"
        assert any(c in text for c in "-/. ")


def test_dates_still_detected_after_the_shortcut():
    n = Normalizer()
    for raw in ("2024-01-05", "January 5, 2024", "5 January 2024", "2024-01-05T00:00:00Z", "05-Jan-2024"):
        assert n.key(raw) == "d:2024-01-05", raw
    assert n.key("2024-01-05T10:30:00Z") == "d:2024-01-05T10:30:00"
    assert n.key("Acme Robotics 12 Inc.") == "t:acme robotics 12 inc."


def _slow_text(s: str) -> str:
    import re
    import unicodedata

    return re.sub(r"\s+", " ", unicodedata.normalize("NFKC", s).casefold()).strip()


TEXTS = st.lists(st.sampled_from(list("aZ 0.,$€£¥%-+eE\t\n\x0b\x1c\u00a0\u2003ﬁß İ") + ["usd", "EUR", "  ", "12"]), max_size=10).map("".join)


@given(TEXTS | st.text(max_size=10))
def test_the_plain_text_shortcuts_change_no_key(s: str) -> None:
    """Plain ASCII text skips the Unicode normalisation, and text with no currency at either end
    skips the currency pattern: the same normalised text and the same key as without them."""
    from extracteval.core import normalize

    assert normalize._normalise_text(s) == _slow_text(s)
    for cfg in (NormalizationConfig(), NormalizationConfig(strip_currency=False)):
        n = Normalizer(cfg)
        text = _slow_text(s)
        if not text:
            continue
        full = normalize._CURRENCY.sub("", text).strip() if cfg.strip_currency else text
        if full.endswith("%") and cfg.strip_currency:
            full = full[:-1].strip()
        want = None
        if full and normalize._NUMBER.match(full) and any(c.isdigit() for c in full):
            want = normalize.number_text_key(full.replace(",", ""))
        assert n._number(text) == want, s


@settings(max_examples=2000, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False))
def test_a_float_keys_as_the_exact_value_of_its_shortest_text(x: float) -> None:
    """`float_key`'s shortcuts (whole numbers, a shortest text with no exponent) give the key of
    the float's shortest decimal text read exactly, which is also the key of that text in a cell."""
    from extracteval.core.normalize import float_key, number_text_key

    assert float_key(x) == number_text_key(repr(x)) == Normalizer().key(repr(x))
