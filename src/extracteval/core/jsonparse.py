"""`json.loads` semantics at the speed of a C parser.

`loads_fast(text)` gives exactly what `json.loads(text)` gives — the same value, or the same
`ValueError` — but parses with orjson where orjson is sure to agree, which is nearly every model
output and every record of a file. Where it could differ it steps aside and `json.loads` runs:

* orjson refuses `NaN`, `Infinity`, `-Infinity` and numbers too large for a float (`1e400`),
  which `json.loads` reads as floats; it refuses lone surrogates (`"\\ud800"`, or a lone
  surrogate character in the text), which `json.loads` keeps; it refuses nesting deeper than
  1,024 levels: each refusal falls back to `json.loads`;
* orjson silently reads an integer beyond 64 bits as a float, where `json.loads` keeps the exact
  integer: a text with a run of 19 or more digits never reaches orjson;
* a repeated key keeps its last value in both, at the position of its first occurrence.

Every error comes from `json.loads`, so messages and positions stay the same.
"""

from __future__ import annotations

import json
import re
from typing import Any

try:  # a dependency; the standard parser alone gives the same results, only slower
    import orjson as _orjson
except ImportError:  # pragma: no cover - exercised only without orjson installed
    _orjson = None

__all__ = ["loads_fast", "has_long_digits", "FAST_PARSER"]

FAST_PARSER = _orjson is not None
# an integer orjson would turn into a float has at least 19 digits (-2**63 - 1, 2**64)
_LONG_DIGITS = re.compile("[0-9]" * 19)  # spelled out: faster to scan for than [0-9]{19}
# a long text is scanned as bytes with every digit made a "0" (one C pass, several times faster
# than the pattern on a record-sized text; slower than it on a short one)
_DIGITS_TO_ZERO = bytes.maketrans(b"123456789", b"000000000")
_LONG_RUN = b"0" * 19
_SHORT = 96
_std_loads = json.loads


def has_long_digits(text: str) -> bool:
    """Whether `text` holds a run of 19 or more ASCII digits: where an integer may be too large
    for 64 bits (orjson would read it as a float)."""
    if len(text) < _SHORT:
        return _LONG_DIGITS.search(text) is not None
    return _LONG_RUN in text.encode("utf-8", "surrogatepass").translate(_DIGITS_TO_ZERO)


if _orjson is not None:
    _fast = _orjson.loads
    _FastError = _orjson.JSONDecodeError

    def loads_fast(text: str) -> Any:
        """`json.loads(text)` (same value, same errors), parsed by orjson where it agrees."""
        if type(text) is str:
            if len(text) < _SHORT:
                if _LONG_DIGITS.search(text) is None:
                    try:
                        return _fast(text)
                    except _FastError:
                        pass
                return _std_loads(text)
            try:
                raw = text.encode()
            except UnicodeEncodeError:  # a lone surrogate, which orjson refuses
                return _std_loads(text)
            if _LONG_RUN not in raw.translate(_DIGITS_TO_ZERO):
                try:
                    return _fast(raw)
                except _FastError:
                    pass
        return _std_loads(text)

else:  # pragma: no cover

    def loads_fast(text: str) -> Any:
        """`json.loads(text)`."""
        return _std_loads(text)
