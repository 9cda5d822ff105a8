"""Value normalisation: absent values, text, numbers, booleans and dates.

Every value is turned into a *canonical key*: a short string with a type prefix (`t:` text,
`n:` number, `b:` boolean, `d:` date, `j:` JSON object/array) or `None` when the value is
absent. Two values are EXACT-equal when their keys are equal. A `Normalizer` caches the key of
each distinct value, so a column of a million cells with a few thousand distinct values costs a
few thousand parses.
"""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal
from typing import Any

import numpy as np

__all__ = [
    "DEFAULT_NULL_TOKENS",
    "ExactFloat",
    "Normalizer",
    "NormalizationConfig",
    "key_text",
    "key_type",
    "decimal_key",
    "exact_float",
    "float_key",
    "int_key",
    "number_key",
    "number_text_key",
]

DEFAULT_NULL_TOKENS: frozenset[str] = frozenset({"not present", "n/a", "na", "none", "null", "-"})

_BOOLEANS = {"true": "b:true", "yes": "b:true", "false": "b:false", "no": "b:false"}
_WS = re.compile(r"\s+")
_HAS_DIGIT = re.compile(r"\d")
_MISSING = object()
# "1,000", "1000.0", "-3.5", "1e3", ".5"; thousands separators only in groups of three
_NUMBER = re.compile(r"^[+-]?(?:\d{1,3}(?:,\d{3})+|\d+)?(?:\.\d+)?(?:[eE][+-]?\d+)?$")
# currency symbols and codes, stripped from either end of a number
_SYMBOLS = "$€£¥"
_CURRENCY_PREFIXES = {"usd", "eur", "gbp", "jpy", "chf", "cad", "aud"}
_SYMBOL = "[" + re.escape(_SYMBOLS) + "]"
_CODES = "(?:" + "|".join(sorted(_CURRENCY_PREFIXES)) + ")"
_CURRENCY = re.compile(rf"^(?:{_SYMBOL}|{_CODES}\b)\s*|\s*(?:{_SYMBOL}|\b{_CODES})$")

_MONTHS = (
    "jan|january|feb|february|mar|march|apr|april|may|jun|june|jul|july|aug|august|"
    "sep|sept|september|oct|october|nov|november|dec|december"
)
_MONTH_NUMBER = {
    name: i
    for i, names in enumerate(
        [("jan", "january"), ("feb", "february"), ("mar", "march"), ("apr", "april"), ("may",), ("jun", "june"),
         ("jul", "july"), ("aug", "august"), ("sep", "sept", "september"), ("oct", "october"), ("nov", "november"),
         ("dec", "december")],
        start=1,
    )
    for name in names
}
_ORD = r"(?:st|nd|rd|th)?"
_WEEKDAY = r"(?:(?:mon|tue|wed|thu|fri|sat|sun)[a-z]*\.?,?\s+)?"
# A strict set of date shapes, each parsed directly from its groups: anything else stays text,
# and plain numbers are never dates. Only ISO timestamps with a time part go through dateutil.
_DATE_SHAPES: list[tuple[str, re.Pattern[str]]] = [
    ("ymd", re.compile(r"^(?P<y>\d{4})[-/.](?P<m>\d{1,2})[-/.](?P<d>\d{1,2})$")),
    ("iso_time", re.compile(r"^\d{4}-\d{1,2}-\d{1,2}[t ]\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:z|[+-]\d{2}:?\d{2})?$")),
    ("abY", re.compile(r"^(?P<a>\d{1,2})[/.-](?P<b>\d{1,2})[/.-](?P<y>\d{4})$")),
    # two-digit years only with slashes: "1.2.33" is a version, not a date
    ("aby", re.compile(r"^(?P<a>\d{1,2})/(?P<b>\d{1,2})/(?P<y>\d{2})$")),
    ("Mdy", re.compile(rf"^{_WEEKDAY}(?P<mon>{_MONTHS})\.?\s+(?P<d>\d{{1,2}}){_ORD},?\s+(?P<y>\d{{4}})$")),
    ("dMy", re.compile(rf"^{_WEEKDAY}(?P<d>\d{{1,2}}){_ORD}\s+(?:of\s+)?(?P<mon>{_MONTHS})\.?,?\s+(?P<y>\d{{4}})$")),
    ("d-M-y", re.compile(rf"^(?P<d>\d{{1,2}})-(?P<mon>{_MONTHS})-(?P<y>\d{{4}})$")),
]


def _two_digit_year(y: int, today: date | None = None) -> int:
    """dateutil's rule: the century that puts the year within 50 years of today."""
    this_year = (today or date.today()).year
    year = this_year // 100 * 100 + y
    if year >= this_year + 50:
        year -= 100
    elif year < this_year - 50:
        year += 100
    return year


@dataclass(frozen=True, kw_only=True)
class NormalizationConfig:
    """How values are normalised before comparison.

    Attributes:
        null_tokens: strings (case-insensitive, after strip) that mean "absent".
        dayfirst: read `01/02/2024` as 1 February (True) or January 2 (False, default).
        strip_currency: drop `$`, `€`, `USD`… around numbers and a trailing `%`.
        detect_types: parse numbers, booleans and dates; when False only text rules apply.
        fold_text: the text rules (NFKC, case folded, runs of white space as one space); when
            False a text is compared exactly as written, white space around it aside (an id).
    """

    null_tokens: frozenset[str] = DEFAULT_NULL_TOKENS
    dayfirst: bool = False
    strip_currency: bool = True
    detect_types: bool = True
    fold_text: bool = True

    @property
    def listed_null_tokens(self) -> frozenset[str]:
        """The null tokens the user listed (none while they are the defaults): the only ones a
        category's values are checked against, where `None` or `-` may well be a class."""
        return frozenset() if self.null_tokens == DEFAULT_NULL_TOKENS else self.null_tokens

    def to_dict(self) -> dict[str, Any]:
        return {
            "null_tokens": sorted(self.null_tokens),
            "dayfirst": self.dayfirst,
            "strip_currency": self.strip_currency,
            "detect_types": self.detect_types,
        }


def key_type(key: str) -> str:
    """The type letter of a canonical key: `t`, `n`, `b`, `d` or `j`."""
    return key[0]


def key_text(key: str) -> str:
    """The comparable text of a canonical key (without its type prefix)."""
    return key[2:]


def _normalise_text(s: str) -> str:
    """NFKC, casefolded, runs of white space made one space, stripped."""
    if s.isascii() and s.isprintable() and "  " not in s:
        # the usual text: NFKC leaves ASCII as it is, casefolding it is lowering it, and its only
        # white space is single spaces
        return s.lower().strip()
    return _WS.sub(" ", unicodedata.normalize("NFKC", s).casefold()).strip()


_INT_TEXT_BITS = 14_000  # integers below this many bits are written in decimal (under Python's 4,300-digit limit)


# Numbers are keyed by their exact decimal value: sign, significant digits and power of ten, written
# plainly while that takes at most this many zeros (`1000`, `0.005`), else as `1.5e+400`.
_PLAIN_ZEROS = 40
# a number's text: sign, digits with an optional fraction, an optional exponent of a sane length
_DECIMAL_TEXT = re.compile(r"([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d{1,18}))?")


def decimal_key(negative: bool, digits: str, exponent: int) -> str:
    """The canonical key of the number ±`digits`×10^`exponent` (`digits`: ASCII digits, maybe
    with leading or trailing zeros). Equal values, however written, get one key; different values
    never share one.

    Example:
        >>> decimal_key(False, "1500", -3), decimal_key(True, "00012", 1), decimal_key(False, "5", 400)
        ('n:1.5', 'n:-120', 'n:5e+400')
    """
    digits = digits.lstrip("0")
    if not digits:
        return "n:0"
    significant = digits.rstrip("0")
    exponent += len(digits) - len(significant)
    sign = "-" if negative else ""
    n = len(significant)
    if 0 <= exponent <= _PLAIN_ZEROS:
        return f"n:{sign}{significant}{'0' * exponent}"
    if -_PLAIN_ZEROS <= exponent < 0:
        point = n + exponent
        if point > 0:
            return f"n:{sign}{significant[:point]}.{significant[point:]}"
        if point >= -_PLAIN_ZEROS:
            return f"n:{sign}0.{'0' * -point}{significant}"
    mantissa = significant[0] + ("." + significant[1:] if n > 1 else "")
    return f"n:{sign}{mantissa}e{n - 1 + exponent:+d}"


def number_text_key(text: str) -> str | None:
    """The key of a number written in decimal (`12`, `-0.50`, `1.5e3`, `.5`; no thousands
    separators), exactly as written; None when the text is not such a number."""
    m = _DECIMAL_TEXT.fullmatch(text)
    if m is None:
        return None
    sign, whole, fraction, exp = m.groups()
    fraction = fraction or ""
    if not whole and not fraction:
        return None
    return decimal_key(sign == "-", whole + fraction, int(exp or 0) - len(fraction))


def int_key(v: int) -> str:
    """The key of an integer of any size (the same as its decimal text's); one beyond the digits
    Python writes in decimal is read through `Decimal` (an absurd literal in a model's output is
    data, not a crash)."""
    if v.bit_length() < _INT_TEXT_BITS:
        return decimal_key(v < 0, str(abs(v)), 0)
    t = Decimal(v).as_tuple()  # beyond Python's limit for writing integers in decimal
    return decimal_key(bool(t.sign), "".join(map(str, t.digits)), int(t.exponent))


def float_key(x: float) -> str | None:
    """The key of a binary float: the value of the shortest decimal text that reads back as it
    (`0.1` is 0.1, as written); infinities key as `inf`/`-inf`, NaN is absent (None)."""
    if x != x:
        return None
    if x in (_INF, -_INF):
        return "n:inf" if x > 0 else "n:-inf"
    if x.is_integer() and -1e15 < x < 1e15:
        return decimal_key(x < 0, str(abs(int(x))), 0)
    text = repr(float(x))
    if "e" not in text and not text.endswith(".0"):
        # `12.5`, `-0.0625`: the shortest text of a float that is not a whole number has no
        # trailing zero and at most one leading one, so it is its canonical key as it stands
        return "n:" + text
    return number_text_key(text)


_INF = float("inf")


class ExactFloat(float):
    """A float that keeps the decimal text it was read from, where the float alone would lose
    that text's value (more significant digits than a float holds, or beyond its range):
    `1.00000000000000001` and `1e400` stay what they say. It is a float everywhere else."""

    __slots__ = ("text",)
    text: str

    def __new__(cls, text: str) -> ExactFloat:
        obj = super().__new__(cls, text)
        obj.text = text
        return obj

    def __eq__(self, other: object) -> bool:
        if type(other) is ExactFloat:
            return number_text_key(self.text) == number_text_key(other.text)
        return float.__eq__(self, other)  # type: ignore[operator]

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    __hash__ = float.__hash__

    def __repr__(self) -> str:
        return self.text

    def __reduce__(self) -> tuple[Any, ...]:
        return (ExactFloat, (self.text,))


# messages name a value's type by its class name: this one is a float to the user
ExactFloat.__name__ = ExactFloat.__qualname__ = "float"


def exact_float(text: str) -> float:
    """A JSON number with a fraction or exponent: a float, or an `ExactFloat` where the float
    would not hold the text's exact value."""
    x = float(text)
    if number_text_key(text) == float_key(x):
        return x
    return ExactFloat(text)


def number_key(value: Any) -> str | None:
    """The key of a Python number (int, float, `ExactFloat`, numpy scalar); None for NaN."""
    if type(value) is ExactFloat:
        return number_text_key(value.text)
    if isinstance(value, (int, np.integer)):
        return int_key(int(value))
    return float_key(float(value))


@dataclass
class Normalizer:
    """Canonical keys for values, cached per distinct value.

    Example:
        >>> n = Normalizer()
        >>> n.key("2024-01-01") == n.key("January 1, 2024")
        True
        >>> n.key("1,000") == n.key(1000.0)
        True
        >>> n.key("Not Present") is None
        True
    """

    config: NormalizationConfig = field(default_factory=NormalizationConfig)
    _cache: dict[Any, str | None] = field(default_factory=dict, repr=False)

    def is_absent(self, value: Any) -> bool:
        return self.key(value) is None

    def key(self, value: Any) -> str | None:
        """The canonical key of one value, or None when the value is absent."""
        if value is None:
            return None
        if isinstance(value, (list, tuple, dict, set)):
            return self._structured_key(value)
        cache_key = (ExactFloat, value.text) if type(value) is ExactFloat else (type(value), value)
        try:
            return self._cache[cache_key]
        except KeyError:
            pass
        except TypeError:  # unhashable value of an unexpected type
            return self._compute(value)
        k = self._cache[cache_key] = self._compute(value)
        return k

    def keys(self, values: np.ndarray | list[Any]) -> list[str | None]:
        """Canonical keys of many values; strings not seen before are normalised as one batch
        (the same rules as `key`, with less per-value overhead)."""
        out: list[str | None] = [None] * len(values)
        cache = self._cache
        todo_idx: list[int] = []
        todo: list[str] = []
        for i, v in enumerate(values):
            if type(v) is str:
                k = cache.get((str, v), _MISSING)
                if k is _MISSING:
                    todo_idx.append(i)
                    todo.append(v)
                else:
                    out[i] = k  # type: ignore[assignment]
            elif v is not None:
                out[i] = self.key(v)
        if todo:
            classify = self._classify_text
            fold = self.config.fold_text
            for i, raw in zip(todo_idx, todo):
                k = cache.get((str, raw), _MISSING)  # the same string twice in one batch
                if k is _MISSING:
                    k = cache[(str, raw)] = classify(_normalise_text(raw)) if fold else self._string_key(raw)
                out[i] = k  # type: ignore[assignment]
        return out

    # -- internals -------------------------------------------------------------------------

    def _structured_key(self, value: Any) -> str | None:
        if len(value) == 0:
            return None
        return "j:" + json.dumps(_canonical_json(value, self), sort_keys=True, ensure_ascii=False)

    def _compute(self, value: Any) -> str | None:
        if isinstance(value, bool) or isinstance(value, np.bool_):
            if not self.config.detect_types:
                return self._string_key("true" if value else "false")
            return "b:true" if value else "b:false"
        if isinstance(value, (int, np.integer, float, np.floating)):
            if not self.config.detect_types:  # text rules only: the number's own text
                k = number_key(value)
                return None if k is None else self._string_key(key_text(k))
            return number_key(value)
        if isinstance(value, datetime):
            if (value.hour, value.minute, value.second, value.microsecond) == (0, 0, 0, 0):
                return "d:" + value.date().isoformat()
            return "d:" + value.replace(tzinfo=None).isoformat()
        if isinstance(value, date):
            return "d:" + value.isoformat()
        if isinstance(value, bytes):
            value = value.decode("utf-8", errors="replace")
        if not isinstance(value, str):
            value = str(value)
        return self._string_key(value)

    def _string_key(self, raw: str) -> str | None:
        if not self.config.fold_text:
            text = raw.strip()
            return None if not text or _normalise_text(text) in self.config.null_tokens else "t:" + text
        return self._classify_text(_normalise_text(raw))

    def _classify_text(self, text: str) -> str | None:
        """Key of an already normalised (NFKC, casefolded, whitespace-collapsed) string."""
        if not text or text in self.config.null_tokens:
            return None
        if not self.config.detect_types:
            return "t:" + text
        b = _BOOLEANS.get(text)
        if b is not None:
            return b
        if text[0].isdigit() or text[0] in "+-.%" or text[0] in _SYMBOLS or text[:3] in _CURRENCY_PREFIXES:
            n = self._number(text)
            if n is not None:
                return n
        # every date shape ends in a digit (or the `z` of a UTC timestamp) and holds a `-`, `/`,
        # `.` or space: cheap tests that spare names such as "acme robotics 12 inc." and codes
        # such as "sku123" the pattern matching
        if ((text[-1].isdigit() or text[-1] == "z") and ("-" in text or "/" in text or "." in text or " " in text)
                and _HAS_DIGIT.search(text)):
            d = self._date(text)
            if d is not None:
                return d
        return "t:" + text

    def _number(self, text: str) -> str | None:
        t = text
        if self.config.strip_currency:
            if t[0] in _SYMBOLS or t[-1] in _SYMBOLS or t[:3] in _CURRENCY_PREFIXES or t[-3:] in _CURRENCY_PREFIXES:
                # (a symbol or code is stripped only at either end: other texts are spared the pattern)
                t = _CURRENCY.sub("", t).strip()
            if t.endswith("%"):
                t = t[:-1].strip()
        if not t or not _NUMBER.match(t) or not any(c.isdigit() for c in t):
            return None
        return number_text_key(t.replace(",", ""))

    def _date(self, text: str) -> str | None:
        for kind, pattern in _DATE_SHAPES:
            m = pattern.match(text)
            if m is None:
                continue
            try:
                if kind == "iso_time":
                    from dateutil import parser as date_parser

                    dt = date_parser.isoparse(text.upper())
                    if (dt.hour, dt.minute, dt.second, dt.microsecond) == (0, 0, 0, 0):
                        return "d:" + dt.date().isoformat()
                    return "d:" + dt.replace(tzinfo=None).isoformat()
                if kind in ("abY", "aby"):
                    a, b = int(m["a"]), int(m["b"])
                    y = int(m["y"]) if kind == "abY" else _two_digit_year(int(m["y"]))
                    day, month = (a, b) if self.config.dayfirst else (b, a)
                    if month > 12 and day <= 12:  # unambiguous the other way round, as dateutil reads it
                        day, month = month, day
                    return "d:" + date(y, month, day).isoformat()
                month = _MONTH_NUMBER[m["mon"]] if "mon" in m.groupdict() else int(m["m"])
                return "d:" + date(int(m["y"]), month, int(m["d"])).isoformat()
            except (ValueError, OverflowError):
                return None
        return None



def _canonical_json(value: Any, normalizer: Normalizer) -> Any:
    """Nested value with every leaf replaced by its canonical key (iterative, no recursion limit)."""
    # Build bottom-up with an explicit stack so a 10,000-deep nesting cannot overflow.
    root: list[Any] = [None]
    stack: list[tuple[Any, list[Any] | dict[str, Any], Any]] = [(value, root, 0)]
    while stack:
        node, parent, slot = stack.pop()
        if isinstance(node, dict):
            out: dict[str, Any] = {}
            parent[slot] = out
            for k, v in node.items():
                stack.append((v, out, str(k)))
        elif isinstance(node, (list, tuple, set)):
            items = sorted(node, key=repr) if isinstance(node, set) else list(node)
            lst: list[Any] = [None] * len(items)
            parent[slot] = lst
            for i, v in enumerate(items):
                stack.append((v, lst, i))
        else:
            parent[slot] = None if node is None else normalizer.key(node)
    return root[0]
