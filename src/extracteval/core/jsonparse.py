"""`json.loads` semantics at the speed of a C parser, with numbers at their exact value.

`loads_fast(text)` gives what `json.loads(text)` gives — the same value, or the same
`ValueError` — except that a number a float cannot hold exactly (more than 15 significant digits,
or beyond a float's range: `1.00000000000000001`, `1e400`) is an `ExactFloat`, a float that keeps
its text, so that different numbers never read as one. It parses with orjson where orjson is sure
to agree, which is nearly every model output and every record of a file. Where it could differ it
steps aside and the standard parser runs:

* orjson refuses `NaN`, `Infinity`, `-Infinity` and numbers too large for a float (`1e400`),
  which `json.loads` reads as floats; it refuses lone surrogates (`"\\ud800"`, or a lone
  surrogate character in the text), which `json.loads` keeps; it refuses nesting deeper than
  1,024 levels: each refusal falls back to `json.loads`;
* orjson silently reads an integer beyond 64 bits as a float, where `json.loads` keeps the exact
  integer, and any parser reads a long decimal as the nearest float: a text with a run of 16 or
  more digits (and points), or a three-digit exponent, never reaches orjson;
* a repeated key keeps its last value in both, at the position of its first occurrence.

Every error comes from `json.loads`, so messages and positions stay the same.
"""

from __future__ import annotations

import json
import re
from typing import Any

from extracteval.core.normalize import exact_float

try:  # a dependency; the standard parser alone gives the same results, only slower
    import orjson as _orjson
except ImportError:  # pragma: no cover - exercised only without orjson installed
    _orjson = None

__all__ = ["loads_fast", "loads_exact", "may_misread_numbers", "FAST_PARSER"]

FAST_PARSER = _orjson is not None
# A number orjson or a float may read otherwise than written has a run of 16 or more digits (and
# points: 16 significant digits, or an integer beyond 64 bits) or a three-digit exponent.
_LONG_NUMBER = re.compile(r"[0-9][0-9.]{15}|[eE][+-]?[0-9]{3}")
# a long text is scanned as bytes with every digit and point made a "0" (one C pass, several
# times faster than the pattern on a record-sized text; slower than it on a short one)
# (and `E` made `e`, `+` made `-`, so that two plain searches find any three-digit exponent)
_DIGITS_TO_ZERO = bytes.maketrans(b"123456789.E+", b"0000000000e-")
_LONG_RUN = b"0" * 16
_SHORT = 96
_std_loads = json.loads
loads_exact = json.JSONDecoder(parse_float=exact_float).decode  # `json.loads`, floats exact


def may_misread_numbers(text: str) -> bool:
    """Whether `text` may hold a number that orjson, or a float, would read otherwise than written:
    a run of 16 or more ASCII digits and points, or an exponent of three digits."""
    if len(text) < _SHORT:
        return _LONG_NUMBER.search(text) is not None
    return _misread_in(text.encode("utf-8", "surrogatepass"))


def _misread_in(raw: bytes) -> bool:
    """`may_misread_numbers` of a text's UTF-8 bytes: one translation, three plain searches."""
    zeroed = raw.translate(_DIGITS_TO_ZERO)
    return _LONG_RUN in zeroed or b"e000" in zeroed or b"e-000" in zeroed


def _std(text: Any) -> Any:
    if type(text) is str and not text.startswith("\ufeff"):  # (json.loads' own message for a BOM)
        return loads_exact(text)
    return _std_loads(text)


if _orjson is not None:
    _fast = _orjson.loads
    _FastError = _orjson.JSONDecodeError

    def loads_fast(text: str) -> Any:
        """`json.loads(text)` (same value, same errors; numbers exact), parsed by orjson where it agrees."""
        if type(text) is str:
            if len(text) < _SHORT:
                if _LONG_NUMBER.search(text) is None:
                    try:
                        return _fast(text)
                    except _FastError:
                        pass
                return _std(text)
            try:
                raw = text.encode()
            except UnicodeEncodeError:  # a lone surrogate, which orjson refuses
                return _std(text)
            if not _misread_in(raw):
                try:
                    return _fast(raw)
                except _FastError:
                    pass
        return _std(text)

else:  # pragma: no cover

    def loads_fast(text: str) -> Any:
        """`json.loads(text)`, numbers exact."""
        return _std(text)
