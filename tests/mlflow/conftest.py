"""Fixtures: a real `mlflow server` (SQLite back end by default — `MlflowServer` takes any backend
store URI, e.g. PostgreSQL in test_postgres_concurrency.py —, artifacts in tmp, 127.0.0.1, free
port, started once per session and stopped by its process group) and the embedded SQLite store."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

pytest.importorskip("mlflow")

REPO = Path(__file__).resolve().parents[2]
CONTRACTS = REPO / "experiments" / "contracts"


def comparison_figures(client, run_id: str) -> dict[str, float]:
    """The figures a comparison (parent) run keeps in `extracteval/comparison_metrics.json` rather
    than charting them: per model, per pair, counts, decision, item winners."""
    import json
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        path = client.download_artifacts(run_id, "extracteval/comparison_metrics.json", d)
        return json.loads(Path(path).read_text(encoding="utf-8"))["metrics"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class MlflowServer:
    """`mlflow server` in its own process group; `stop()` and `start()` again on the same port
    and database (the fault test restarts it). `backend_uri` defaults to a SQLite file in `root`."""

    def __init__(self, root: Path, backend_uri: str | None = None, workers: int = 1) -> None:
        self.root = root
        self.db = root / "server.db"
        self.backend_uri = backend_uri or f"sqlite:///{self.db}"
        self.workers = workers
        self.artifacts = root / "server-artifacts"
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None
        self.log = root / "server.log"

    def start(self, timeout: float = 90.0) -> None:
        cmd = [
            sys.executable, "-m", "mlflow", "server",
            "--backend-store-uri", self.backend_uri,
            "--artifacts-destination", str(self.artifacts),
            "--host", "127.0.0.1", "--port", str(self.port), "--workers", str(self.workers),
        ]
        # no background job runner: one process less to start on a busy machine
        env = {**os.environ, "MLFLOW_TRACKING_URI": "", "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env=env, cwd=self.root)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"mlflow server exited with {self.proc.returncode}:\n{self.log.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(f"{self.url}/health", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.3)
        self.stop()
        raise RuntimeError(f"mlflow server did not answer /health within {timeout} s:\n{self.log.read_text()[-3000:]}")

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        pgid = os.getpgid(self.proc.pid)
        os.killpg(pgid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            os.killpg(pgid, signal.SIGKILL)
            self.proc.wait(timeout=10)
        # workers of the group may outlive the parent by a moment; wait until the port is free
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) != 0:
                    return
            time.sleep(0.2)


SERVERS: dict[str, MlflowServer] = {}  # url → running server (tests read its access log)


@pytest.fixture(scope="session")
def mlflow_server(tmp_path_factory: pytest.TempPathFactory):
    """One server for the session (each start costs seconds of imports): the modules using it
    (test_fault_injection, test_leaderboard_server, test_logging) log to experiments of their own
    names; test_logging's last test stops it and starts it again on the same port and database."""
    server = MlflowServer(tmp_path_factory.mktemp("mlflow-server"))
    server.start()
    SERVERS[server.url] = server
    yield server
    SERVERS.pop(server.url, None)
    server.stop()


@pytest.fixture(scope="module")
def sqlite_uri(tmp_path_factory: pytest.TempPathFactory) -> str:
    return f"sqlite:///{tmp_path_factory.mktemp('mlflow-sqlite') / 'mlflow.db'}"


@pytest.fixture(scope="module", params=["server", "sqlite"])
def tracking_uri(request: pytest.FixtureRequest) -> str:
    """The same tests over HTTP against a real server and against the embedded SQLite store."""
    if request.param == "server":
        return request.getfixturevalue("mlflow_server").url
    return request.getfixturevalue("sqlite_uri")


@pytest.fixture
def contracts_args() -> list[str]:
    return [
        "--truth", str(CONTRACTS / "truth.csv"),
        "--predictions", f"gpt-4o-mini={CONTRACTS / 'predictions' / 'gpt-4o-mini.csv'}",
        "--predictions", f"llama-3.1-8b={CONTRACTS / 'predictions' / 'llama-3.1-8b.csv'}",
        "--predictions", f"regex-baseline={CONTRACTS / 'predictions' / 'regex-baseline.csv'}",
        "--strategies", str(CONTRACTS / "strategies.yaml"),
        "--resamples", "200",  # intervals are checked for shape, not precision; keeps the suite fast
    ]


@pytest.fixture(autouse=True)
def _no_ambient_tracking(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests never log to a store from the environment, and never wait minutes for retries."""
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "20")


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]):
    """Run `extracteval` in-process: cli("evaluate", "fields", …) -> (code, out, err)."""
    from extracteval.cli import main

    def run(*argv: str) -> tuple[int, str, str]:
        try:
            code = main(list(argv))
        except SystemExit as e:
            code = int(e.code or 0)
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    return run


@dataclass(frozen=True)
class DemoRun:
    """One `extracteval demo`: the folder it ran in (its store and ./mlartifacts when no other
    store was named), the store's URI, its exit code and what it printed."""

    uri: str
    root: Path
    code: int
    out: str
    err: str


def _demo_in(root: Path, *argv: str) -> tuple[int, str, str]:
    """`extracteval demo ARGV` in-process, from the folder `root`, without MLFLOW_TRACKING_URI."""
    import contextlib
    import io

    from extracteval.cli import main

    out, err = io.StringIO(), io.StringIO()
    saved = {k: os.environ.get(k) for k in ("MLFLOW_TRACKING_URI",)}
    cwd = os.getcwd()
    try:
        os.environ.pop("MLFLOW_TRACKING_URI", None)
        os.chdir(root)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(["demo", *argv])
            except SystemExit as e:
                code = int(e.code or 0)
    finally:
        os.chdir(cwd)
        for k, v in saved.items():
            if v is not None:
                os.environ[k] = v
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> DemoRun:
    """`extracteval demo --experiments experiments --tracking-uri URI` over every example, once
    per session, into a SQLite store in tmp: test_demo_full.py checks what it printed and logged,
    the run descriptions and the browser test read the store."""
    root = tmp_path_factory.mktemp("demo-store")
    uri = f"sqlite:///{root / 'mlflow.db'}"
    code, out, err = _demo_in(root, "--experiments", str(REPO / "experiments"), "--tracking-uri", uri)
    return DemoRun(uri=uri, root=root, code=code, out=out, err=err)


@pytest.fixture(scope="session")
def demo_store(demo_run: DemoRun) -> str:
    """The URI of `demo_run`'s store, once that demo exited 0."""
    assert demo_run.code == 0, demo_run.err[-3000:]
    return demo_run.uri


@pytest.fixture(scope="session")
def contracts_demo(tmp_path_factory: pytest.TempPathFactory) -> DemoRun:
    """`extracteval demo --experiments experiments --only contracts`, once per session, from an
    empty folder in tmp: no --tracking-uri, so into the default store there (./mlflow.db and
    ./mlartifacts). test_demo.py and test_demo_outputs.py check it."""
    root = tmp_path_factory.mktemp("demo-contracts")
    code, out, err = _demo_in(root, "--experiments", str(REPO / "experiments"), "--only", "contracts")
    return DemoRun(uri=f"sqlite:///{root / 'mlflow.db'}", root=root, code=code, out=out, err=err)


@pytest.fixture(scope="session")
def evaluated(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    """Every task's bundled example (its README `score` command) evaluated with all its models, each
    into the experiment `primary-<task>` of one SQLite store, from a copy of experiments/ in tmp:
    (the store's URI, that folder). Once per session: test_primary_metric.py and test_intervals.py
    read it; neither writes to those experiments."""
    import shutil

    from extracteval.mlflow.adapters import TASKS as REGISTRY
    from tests.mlflow.test_logged_examples import TRACKS, _main

    root = tmp_path_factory.mktemp("primary-metric")
    shutil.copytree(REPO / "experiments", root / "experiments", ignore=shutil.ignore_patterns("__pycache__"))
    uri = f"sqlite:///{root / 'mlflow.db'}"
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(root)
        for task in REGISTRY:
            t = TRACKS[task]
            every = [a for m, p in t.predictions.items() for a in ("--predictions", f"{m}={p}")]
            code, _, err = _main("evaluate", task, *every, *t.options, "--experiment", f"primary-{task}", "--tracking-uri", uri, "--json")
            assert code == 0, err
    return uri, root
