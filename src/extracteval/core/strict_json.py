"""Strict JSON for every document extracteval writes: an undefined number (NaN, which
`zero_division="nan"` gives a ratio whose denominator is 0; ±inf) is written as `null`, never as
the `NaN` / `Infinity` tokens Python's `json` module writes by default and JSON does not have.

`dumps` first tries the document as it is (the usual case: no undefined number, the same text as
`json.dumps`), and only when that fails walks it once to replace the undefined numbers.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any


__all__ = ["dumps", "defined_or_none", "from_json_number"]


def defined_or_none(value: Any, default: Callable[[Any], Any] | None = None) -> Any:
    """`value` with every NaN or ±inf number (Python or numpy, inside dicts, lists, tuples and
    numpy arrays, or as `default` turns an object into JSON) replaced by None.

    Examples:
        >>> import numpy as np
        >>> defined_or_none({"f1": float("nan"), "n": [1, np.float64("inf"), 0.5]})
        {'f1': None, 'n': [1, None, 0.5]}
    """
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, (str, int, bool)) or value is None:
        return value
    if isinstance(value, dict):
        return {k: defined_or_none(v, default) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [defined_or_none(v, default) for v in value]
    import numpy as np  # here, not at the top: the commands import this module to print, and `--help` loads no numpy

    if isinstance(value, np.ndarray):
        return defined_or_none(value.tolist(), default)
    if isinstance(value, np.generic):
        return defined_or_none(value.item(), default)
    if default is not None:
        return defined_or_none(default(value))
    return value


def dumps(doc: Any, **kw: Any) -> str:
    """`json.dumps(doc, **kw)` as strict JSON (`allow_nan=False` holds): an undefined number is `null`."""
    try:
        return json.dumps(doc, allow_nan=False, **kw)
    except ValueError:
        return json.dumps(defined_or_none(doc, kw.get("default")), allow_nan=False, **kw)


def from_json_number(value: Any) -> float:
    """A number read back from a strict JSON document: `null` (an undefined number) is NaN."""
    return math.nan if value is None else float(value)
