"""`make bench`: run every bench/bench_*.py (each has main()) and print its figures.

Each benchmark measures extracteval against the peers it names, in the same run, and prints
ratios; none is a pass/fail test. `python bench/run.py fields` runs only bench_fields.py.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

HERE = Path(__file__).parent


def main(argv: list[str]) -> int:
    wanted = set(argv)
    for path in sorted(HERE.glob("bench_*.py")):
        name = path.stem.removeprefix("bench_")
        if wanted and name not in wanted:
            continue
        spec = importlib.util.spec_from_file_location(path.stem, path)
        assert spec and spec.loader
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        print(f"=== bench {name}", flush=True)
        mod.main()
        print(flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
