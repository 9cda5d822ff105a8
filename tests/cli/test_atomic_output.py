"""Nothing half-written: `score … --output DIR` builds its files in a temporary sibling folder and
renames them into DIR at the end, so Ctrl-C (SIGINT) or a full disk leaves DIR as it was before
the run (or absent), never a truncated file, and no temporary folder behind.

Both tests run the real command in a subprocess: the interrupt is a real SIGINT and the full disk
is a real write failure (RLIMIT_FSIZE with SIGXFSZ ignored, so write() fails with EFBIG).
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.tasks.fields.data import make_fields_data

REPO = Path(__file__).resolve().parents[2]
# an earlier run's results (its marker file says extracteval wrote the folder), and a file of the user's
PREVIOUS = {"result.json": b'{"previous": true}', "field_metrics.csv": b"previous\n", "notes.txt": b"the user's own file\n",
            ".extracteval-output": b'{"written_by": "extracteval"}\n'}


def _data(folder: Path, n: int) -> tuple[Path, Path]:
    truth, models = make_fields_data(n)
    t, p = folder / "truth.csv", folder / "alpha.csv"
    truth.to_csv(t, index=False)
    models["alpha"].to_csv(p, index=False)
    return t, p


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")]),
            "PYTHONDONTWRITEBYTECODE": "1"}


def _argv(truth: Path, pred: Path, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "extracteval", "score", "fields", "--truth", str(truth), "--predictions", f"alpha={pred}",
            "--no-ci", "--output", str(out), *extra]


def _leftovers(parent: Path, out: Path) -> list[str]:
    return sorted(p.name for p in parent.iterdir() if p.name.startswith(f".{out.name}."))


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _plant_previous(out: Path) -> None:
    out.mkdir()
    for name, data in PREVIOUS.items():
        (out / name).write_bytes(data)


@pytest.mark.slow
@pytest.mark.parametrize("previous,sig", [(False, signal.SIGINT), (True, signal.SIGINT), (True, signal.SIGTERM)],
                         ids=["new-folder", "existing-folder", "existing-folder-sigterm"])
def test_sigint_mid_run_leaves_the_previous_state(tmp_path: Path, previous: bool, sig: signal.Signals) -> None:
    """Ctrl-C, or SIGTERM (a scheduler stopping the job): the same clean end, exit status 130."""
    truth, pred = _data(tmp_path, 20_000)
    parent = tmp_path / "results"
    parent.mkdir()
    out = parent / "out"
    if previous:
        _plant_previous(out)
    # --chunk-size: the staging folder exists from the first chunk on (records.parquet is
    # streamed into it), so its appearance tells that scoring and writing are under way
    # the child takes Ctrl-C as a terminal would give it, even when this test process was started
    # in the background of a non-interactive shell (which ignores SIGINT, and children inherit that)
    proc = subprocess.Popen(_argv(truth, pred, out, "--chunk-size", "500"), env=_env(), cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 120
    while not _leftovers(parent, out):
        assert proc.poll() is None, f"finished before it could be interrupted: {proc.communicate()}"
        assert time.monotonic() < deadline, "the staging folder never appeared"
        time.sleep(0.005)
    # at once: the first of 40 chunks is being scored (a pause here, stretched by a loaded machine,
    # could outlast the whole run)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "interrupted" in err, err
    assert _leftovers(parent, out) == []
    if previous:
        assert _snapshot(out) == {k: v for k, v in PREVIOUS.items()}
    else:
        assert not out.exists()


def _limit_file_size(limit: int):
    def pre() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails (EFBIG) instead of killing
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return pre


@pytest.mark.slow
@pytest.mark.parametrize("chunked", [False, True], ids=["in-memory", "chunked"])
def test_disk_full_fails_clearly_and_a_rerun_works(tmp_path: Path, chunked: bool) -> None:
    truth, pred = _data(tmp_path, 5_000)  # records.parquet ≈ 80 kB, result.json ≈ 30 kB
    out = tmp_path / "out"
    extra = ("--chunk-size", "500") if chunked else ()

    def run(limit: int | None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(_argv(truth, pred, out, *extra), env=_env(), cwd=tmp_path, capture_output=True, text=True, timeout=300,
                              preexec_fn=_limit_file_size(limit) if limit else None)

    def assert_failed_clearly(r: subprocess.CompletedProcess[str]) -> None:
        assert r.returncode == 1, r.stderr  # the environment's fault, not the input's (2)
        assert "Traceback" not in r.stderr, r.stderr
        lines = [ln for ln in r.stderr.splitlines() if ln.startswith("extracteval: error:")]
        assert len(lines) == 1 and str(out) in lines[0], r.stderr
        assert "file too large" in lines[0].lower() or "no space" in lines[0].lower(), lines[0]
        assert _leftovers(tmp_path, out) == []

    r = run(40_000)
    assert_failed_clearly(r)
    assert not out.exists()

    r = run(None)  # space again: the rerun into the same folder works
    assert r.returncode == 0, r.stderr
    complete = _snapshot(out)
    assert set(complete) == {"result.json", "field_metrics.csv", "records.parquet", ".extracteval-output"}

    r = run(40_000)  # a failure now leaves the complete previous results, byte for byte
    assert_failed_clearly(r)
    assert _snapshot(out) == complete


def test_a_ctrl_c_while_the_staging_folder_is_made_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the SIGINT arrives the moment the temporary folder exists, before anything is written to
    # it: it must still end as KeyboardInterrupt with no folder left beside the output
    import tempfile

    from extracteval.io import outputs

    real_mkdtemp = tempfile.mkdtemp

    def mkdtemp_then_ctrl_c(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        path = real_mkdtemp(*args, **kwargs)
        os.kill(os.getpid(), signal.SIGINT)
        return path

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # as a terminal gives it, even in a background run
    monkeypatch.setattr(outputs.tempfile, "mkdtemp", mkdtemp_then_ctrl_c)
    try:
        with pytest.raises(KeyboardInterrupt):
            with outputs.staged_folder(tmp_path / "out"):
                pytest.fail("the folder was handed out although Ctrl-C came while it was made")
    finally:
        signal.signal(signal.SIGINT, previous)
    assert list(tmp_path.iterdir()) == []
