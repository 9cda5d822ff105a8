"""The evaluator's model path predicts in batches with a progress bar on a terminal, and stays
silent when stderr is not one (logs, CI, pipes)."""

from __future__ import annotations

import io
import sys

import pandas as pd


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _echo(batch: pd.DataFrame) -> list[str]:
    return [f"out-{x}" for x in batch["x"]]


def test_model_predictions_show_a_progress_bar_on_a_terminal(monkeypatch):
    from extracteval.mlflow.evaluator import predict_in_batches

    term = _Terminal()
    monkeypatch.setattr(sys, "stderr", term)
    out = predict_in_batches(_echo, pd.DataFrame({"x": range(5)}), batch_size=2)
    assert out == [f"out-{i}" for i in range(5)]
    frames = term.getvalue().split("\r")[1:]  # one redraw per batch, in place
    assert [f.split("] ")[1].strip() for f in frames] == ["2/5", "4/5", "5/5"]
    assert frames[0].startswith("predicting [") and "#" * 30 in frames[-1]  # full at the end
    assert term.getvalue().endswith("\n")  # the bar's line is closed for whatever prints next


def test_no_progress_bar_when_stderr_is_not_a_terminal(monkeypatch):
    from extracteval.mlflow.evaluator import predict_in_batches

    pipe = io.StringIO()
    monkeypatch.setattr(sys, "stderr", pipe)
    assert len(predict_in_batches(_echo, pd.DataFrame({"x": range(5)}), batch_size=2)) == 5
    assert pipe.getvalue() == ""
