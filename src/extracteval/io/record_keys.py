"""The keys a truth record's reference is read from, per task, and the keys a model's raw output is
read from (the first key present counts).
A module of its own, importing nothing, so that the command line can name them in its help
without loading the readers."""

from __future__ import annotations

__all__ = ["TOOLCALL_TRUTH_KEYS", "STRUCTURED_TRUTH_KEYS", "OUTPUT_KEYS"]

TOOLCALL_TRUTH_KEYS = ("calls", "reference", "expected", "truth", "ground_truth", "possible_answer")
STRUCTURED_TRUTH_KEYS = ("reference", "expected", "truth", "ground_truth")
OUTPUT_KEYS = ("output", "prediction", "response", "result", "completion")
