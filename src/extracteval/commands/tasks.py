"""`extracteval tasks`: the tasks of this installation and what each one can do."""

from __future__ import annotations

import argparse
import json

HELP = "list the tasks and the capability matrix (which engine and MLflow capability each task has)"
DESCRIPTION = """\
List the tasks (name, MLflow model type, what each scores) and the capability matrix: for every
task, whether it has each engine (in memory, chunks and workers, Spark), each MLflow capability
(streamed and Spark evaluate, leaderboard intervals, compare intervals, rescore, the evaluator
plugin, the genai scorer) and the Python API. The matrix is read from the tasks themselves.

examples:
  extracteval tasks
  extracteval tasks --json
"""


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print the tasks and the matrix as one JSON document")


def run(args: argparse.Namespace) -> int:
    from extracteval.api import tasks
    from extracteval.mlflow.capabilities import capability_matrix, render_matrix

    matrix = capability_matrix()
    listed = tasks()
    if args.json:
        print(json.dumps({"tasks": listed, "capabilities": matrix}, indent=2))
        return 0
    for t in listed:
        print(f"{t['task']:<11} {t['model_type']:<20} {t['scores']}")
    print()
    print(render_matrix(matrix))
    return 0
