"""One reading of a record's cell, whatever brought it: a file the command line read, a DataFrame
given to `mlflow.models.evaluate`, a row of `mlflow.genai.evaluate`.

A file reader sees text; a DataFrame holds whatever pandas made of it (`read_csv` gives numbers,
NaN for an empty cell and a JSON list as its text, `read_json` gives dicts and lists, a user's
own code gives JSON strings or dicts). The rules below make every one of these read as the
command line reads the file:

- **Empty cell.** None, NaN, pandas' NA and NaT, and an empty or whitespace-only string: no value
  (for a whole record cell: no output for that record).
- **JSON list in a text cell.** `'["A", "B"]'` is the multi-valued cell `["A", "B"]`, exactly as
  the CSV reader turns such a cell into a list (`json_list_value`).
- **A record as text.** A JSON object, also inside a ```json fence or after a line of prose, as
  raw model output usually is (`record_object`).
- **Status.** `ok`, `pending`, `error` (or empty) per record, from a `status` column or key.
- **NumPy values.** NumPy scalars and arrays (what Parquet and pandas hand out) are plain Python
  values and lists.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from extracteval.io.json_text import cap_depth, loads

__all__ = ["is_missing", "is_empty", "plain", "json_list_value", "record_object", "status_text"]


def is_missing(value: Any) -> bool:
    """None, NaN, pd.NA, NaT: an empty cell (a list or dict is never missing; neither is text,
    even blank: see `is_empty`)."""
    if value is None:
        return True
    import numpy as np
    import pandas as pd

    if isinstance(value, (Mapping, list, tuple, np.ndarray, str, bytes)):
        return False
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def is_empty(value: Any) -> bool:
    """None, NaN, pandas' NA / NaT, or a blank string: the cell holds nothing."""
    if value is None:
        return True
    if isinstance(value, str):
        return not value.strip()
    if isinstance(value, float):
        return math.isnan(value)
    if isinstance(value, (list, tuple, dict, bytes, bytearray)) or hasattr(value, "__len__"):
        return False
    try:
        import pandas as pd

        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def plain(value: Any) -> Any:
    """NumPy scalars → Python scalars, NumPy arrays and tuples → lists (recursively inside lists
    and dicts); everything else unchanged."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    mod = type(value).__module__
    if mod == "numpy":
        if hasattr(value, "tolist"):
            return plain(value.tolist())
    return value


def json_list_value(value: Any) -> Any:
    """A text cell holding a JSON list (`'["A", "B"]'`) → that list (a multi-valued cell); any
    other value unchanged. The CSV reader applies the same rule to every distinct cell."""
    if isinstance(value, str) and value.startswith("[") and value.endswith("]"):
        try:
            parsed = loads(value)
        except ValueError:
            return value
        if isinstance(parsed, list):
            return cap_depth(parsed)
    return value


def record_object(value: Any) -> tuple[Any, str | None]:
    """A record cell → (its value, None), or (None, why it is not readable).

    A mapping is taken as it is. Text (or UTF-8 bytes) is parsed as JSON; when it is not JSON as a
    whole, the first ```json fence that holds JSON, or else the first balanced JSON object or
    list in the text (model output with prose around it), is taken. An empty cell gives
    (None, "no output"). What the value is (an object, a list) is the caller's check."""
    from extracteval.io.model_output import parse_json_output

    if isinstance(value, Mapping):
        return plain(dict(value)), None
    if is_empty(value):
        return None, "no output"
    parsed = parse_json_output(value)
    if not parsed.ok:
        return None, parsed.error or "not valid JSON"
    return plain(parsed.value), None


def status_text(value: Any) -> str:
    """A status cell → its text, stripped (`""` for an empty cell); validated by the scorer."""
    if is_empty(value):
        return ""
    return str(value).strip()
