"""An interrupt during the first run on a new SQLite store never leaves a store the next run
cannot use.

The real command runs in a subprocess against a store file that does not exist yet, and gets a
real SIGINT or SIGTERM at a random moment: half of the tries at any moment of the run, half while
MLflow creates the store's tables (the moment the half-built store used to come from). After each:
the exit status is 0 (it had finished) or 130, never a traceback; the store is either absent or
complete (MLflow opens it and can log a run to it); no temporary file is left beside it. The next
run then logs to it.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from mlflow.tracking import MlflowClient

REPO = Path(__file__).resolve().parents[2]
TRIES = 20


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}
    return {**env, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")]), "PYTHONDONTWRITEBYTECODE": "1"}


def _argv(folder: Path, store: Path) -> list[str]:
    return [sys.executable, "-m", "extracteval", "evaluate", "fields", "--truth", str(folder / "t.csv"), "--predictions",
            f"m={folder / 'p.csv'}", "--no-ci", "--no-figures", "--experiment", "first", "--tracking-uri", f"sqlite:///{store}"]


def _start(folder: Path, store: Path) -> subprocess.Popen:
    # the child takes Ctrl-C as a terminal would give it, even when this process was started in the
    # background of a non-interactive shell (which ignores SIGINT, and children inherit that)
    return subprocess.Popen(_argv(folder, store), cwd=folder, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def _interrupt(proc: subprocess.Popen, store: Path, rng: random.Random, during_creation: bool) -> None:
    """Signal the run at a random moment of it, or a random moment after its store file (built
    aside) first appears."""
    sig = rng.choice([signal.SIGINT, signal.SIGTERM])
    if during_creation:
        deadline = time.monotonic() + 60
        while proc.poll() is None and time.monotonic() < deadline:
            if any(p.name.startswith(f".{store.name}.") for p in store.parent.iterdir()) or store.exists():
                break
            time.sleep(0.005)
        time.sleep(rng.uniform(0, 0.8))
    else:
        time.sleep(rng.uniform(0.2, 6.0))
    if proc.poll() is None:
        proc.send_signal(sig)


def _usable(store: Path) -> None:
    uri = f"sqlite:///{store}"
    client = MlflowClient(tracking_uri=uri)  # MLflow's own schema check runs here
    exp = client.get_experiment_by_name("probe") or client.get_experiment(client.create_experiment("probe"))
    run = client.create_run(exp.experiment_id)
    client.log_metric(run.info.run_id, "m", 1.0)
    client.set_terminated(run.info.run_id)


def test_interrupts_during_the_first_run_on_a_new_store_leave_a_usable_store_or_none(tmp_path: Path) -> None:
    (tmp_path / "t.csv").write_text("id,a,b\n1,x,1\n2,y,2\n3,z,3\n", encoding="utf-8")
    (tmp_path / "p.csv").write_text("id,a,b\n1,x,1\n2,y,9\n3,w,3\n", encoding="utf-8")
    rng = random.Random(20261129)
    outcomes: dict[str, int] = {"absent": 0, "complete": 0}
    for batch in range(TRIES // 2):  # two at a time: each try is a whole interpreter start
        runs = []
        for k in range(2):
            store = tmp_path / f"store-{batch}-{k}.db"
            runs.append((_start(tmp_path, store), store, k == 0))
        for proc, store, during in runs:
            _interrupt(proc, store, rng, during)
        for proc, store, _ in runs:
            _, err = proc.communicate(timeout=120)
            text = err.decode("utf-8", "replace")
            assert proc.returncode in (0, 130), f"{store.name}: exit {proc.returncode}: {text[-3000:]}"
            assert "Traceback" not in text, text[-2000:]
            assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(f".{store.name}.")], "a partial store was left"
            if store.exists():
                _usable(store)
                outcomes["complete"] += 1
            else:
                outcomes["absent"] += 1
    # the next run logs to a store an interrupted one left behind
    left = next((p for p in sorted(tmp_path.glob("store-*.db"))), tmp_path / "store-0-0.db")
    done = subprocess.run(_argv(tmp_path, left), cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-2000:]
    assert outcomes["absent"] + outcomes["complete"] == TRIES
