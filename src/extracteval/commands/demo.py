"""`extracteval demo`: run every example under experiments/ and print its leaderboard."""

from __future__ import annotations

import argparse
import sys
from importlib import import_module
from pathlib import Path

DESCRIPTION = """\
Run every example in an experiments folder (each a sub-folder with an experiment.yaml naming
its task, truth, predictions and config), score all models and print each leaderboard.
"""

# task → module in extracteval.commands with run_experiment(folder, spec) -> (doc, text)
TASK_RUNNERS = {
    "fields": "score_fields",
    "json": "score_json",
    "labels": "score_labels",
    "entities": "score_entities",
    "spans": "score_spans",
    "structured": "score_structured",
    "toolcalls": "score_toolcalls",
    "structured+toolcalls": "compare_models",
}


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--experiments", default="experiments", metavar="DIR", help="folder of examples (default: ./experiments)")
    p.add_argument("--only", metavar="NAME", action="append", help="run only this example (repeatable)")
    p.add_argument("--output", metavar="DIR", help="write each example's result.json under DIR/<name>/")


def run(args: argparse.Namespace) -> int:
    import json

    from extracteval.errors import InputError
    from extracteval.io.config import load_mapping, safe_file_name

    root = Path(args.experiments)
    if not root.is_dir():
        raise InputError(f"{root}: no experiments folder here; run from the repository root or pass --experiments DIR.")
    specs = sorted(root.glob("*/experiment.yaml"))
    if args.only:
        specs = [s for s in specs if s.parent.name in set(args.only)]
    if not specs:
        raise InputError(f"{root}: no */experiment.yaml found" + (f" for {args.only}" if args.only else "") + ".")
    ran = 0
    for spec_path in specs:
        spec = load_mapping(spec_path)
        task = spec.get("task")
        module = TASK_RUNNERS.get(str(task))
        name = spec.get("name", spec_path.parent.name)
        if module is None:
            print(f"== {name}: task {task!r} is not available in this version; skipped\n")
            continue
        runner = import_module(f"extracteval.commands.{module}").run_experiment
        doc, text = runner(spec_path.parent, spec)
        print(f"== {name} ({task})")
        if spec.get("description"):
            print(" ".join(str(spec["description"]).split()))
        print()
        print(text)
        print()
        if args.output:
            out = Path(args.output) / safe_file_name(str(name))
            out.mkdir(parents=True, exist_ok=True)
            (out / "result.json").write_text(json.dumps(doc, indent=2, ensure_ascii=False, default=str), encoding="utf-8")
        ran += 1
    print(f"demo: scored {ran} example(s) from {root}/", file=sys.stderr)
    return 0
