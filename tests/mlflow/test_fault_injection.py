"""Fault injection on the MLflow path beyond tests/test_logging.py (server stopped mid-upload,
Ctrl-C, disk full): a tracking server unreachable from the start, one that answers every
request with HTTP 500, and one that answers too slowly (a delaying proxy in front of the real
server). The command fails clearly (exit 1, no traceback, the resume command printed), the local
copy is complete, and `--resume-from` into the real server then completes the runs with the same
metrics, each logged once."""

from __future__ import annotations

import http.client
import json
import socket
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from mlflow.tracking import MlflowClient

from tests.fixtures.tracking import CONTRACTS


@pytest.fixture
def fast_failing_http(monkeypatch):
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "3")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _Always500(BaseHTTPRequestHandler):
    def _fail(self) -> None:
        body = b'{"error_code": "INTERNAL_ERROR", "message": "injected failure"}'
        self.send_response(500)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _fail

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def server_500():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Always500)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()


def _check_failed_cleanly(code: int, err: str, out_dir: Path, expected: dict) -> None:
    assert code in (1, 2), err
    assert "Traceback" not in err
    lines = [ln for ln in err.splitlines() if ln.startswith("extracteval: error:")]
    assert len(lines) == 1 and lines[0].startswith("extracteval: error: Logging to "), err  # one sentence-led line
    if (out_dir / "manifest.json").exists():  # complete local copy, resumable
        assert f"--resume-from {out_dir}" in err
        manifest = json.loads((out_dir / "manifest.json").read_text())
        assert [r["key"] for r in manifest["runs"]] == ["parent", "model-1", "model-2", "model-3"]
        for r in manifest["runs"]:
            doc = json.loads((out_dir / "runs" / r["key"] / "artifacts" / "extracteval" / "result.json").read_text())
            assert doc["models"] == expected["models"]
        assert json.loads((out_dir / "state.json").read_text())["status"] != "UPLOADED"
    else:  # cleanly absent: no half-written folder
        assert not out_dir.exists() or not any(out_dir.iterdir())


def _resume_completes(cli, out_dir: Path, url: str, experiment: str) -> dict:
    """`--resume-from` into the real server: every run of the local copy FINISHED there with the
    local metrics, each metric and the dataset input logged once, and no other run in the experiment."""
    code, out, err = cli("evaluate", "--resume-from", str(out_dir), "--tracking-uri", url)
    assert code == 0, err
    state = json.loads((out_dir / "state.json").read_text())
    assert state["status"] == "UPLOADED" and list(state["runs"]) == ["parent", "model-1", "model-2", "model-3"]
    client = MlflowClient(url)
    runs = client.search_runs([client.get_experiment_by_name(experiment).experiment_id])
    assert sorted(r.info.run_id for r in runs) == sorted(state["runs"].values())  # none missing, none duplicated
    for key, rid in state["runs"].items():
        run = client.get_run(rid)
        local = json.loads((out_dir / "runs" / key / "metrics.json").read_text())
        assert run.info.status == "FINISHED"
        assert run.data.metrics == local
        twice = [k for k in local if len(client.get_metric_history(rid, k)) != 1]
        assert not twice, f"run {key}: logged more than once: {twice[:5]}"
        assert len(run.inputs.dataset_inputs) == 1
        if key != "parent":
            assert run.data.tags["mlflow.parentRunId"] == state["runs"]["parent"]
    return state


def test_tracking_server_unreachable_at_start(cli, contracts_args, tmp_path, fast_failing_http, mlflow_server):
    code, score_out, _ = cli("score", "fields", *contracts_args, "--json")
    out_dir = tmp_path / "kept"
    code, out, err = cli("evaluate", "fields", *contracts_args, "--experiment", "unreachable", "--tracking-uri", f"http://127.0.0.1:{_free_port()}",
                         "--output", str(out_dir), "--no-figures")
    _check_failed_cleanly(code, err, out_dir, json.loads(score_out))
    assert code == 1 and "not reachable" in err
    _resume_completes(cli, out_dir, mlflow_server.url, "unreachable")


def test_tracking_server_answering_500(cli, contracts_args, tmp_path, fast_failing_http, server_500, mlflow_server):
    code, score_out, _ = cli("score", "fields", *contracts_args, "--json")
    out_dir = tmp_path / "kept"
    code, out, err = cli("evaluate", "fields", *contracts_args, "--experiment", "answering-500", "--tracking-uri", server_500,
                         "--output", str(out_dir), "--no-figures")
    _check_failed_cleanly(code, err, out_dir, json.loads(score_out))
    assert code == 1 and "answered HTTP 500" in err and "not reachable" not in err
    _resume_completes(cli, out_dir, mlflow_server.url, "answering-500")


class _SlowProxy:
    """Forwards every request to the real server and holds back the answer of those `slow` picks
    for longer than the client waits: the server has done the work, the client times out — the
    case where a retry or a resume could log the same thing twice."""

    def __init__(self, upstream: str, slow: Callable[[str, str, bytes], bool], delay: float) -> None:
        up = urlsplit(upstream)
        proxy = self
        self.release = threading.Event()  # set at teardown so held answers end at once
        self.held: list[str] = []
        self.forwarded = threading.Event()  # the held request reached the server and was answered there

        class Handler(BaseHTTPRequestHandler):
            def _forward(self) -> None:
                body, data, status, resp_headers = _relay(self, up)
                if slow(self.command, self.path, body):
                    proxy.held.append(f"{self.command} {self.path}")
                    proxy.forwarded.set()
                    proxy.release.wait(delay)
                try:
                    _answer(self, status, resp_headers, data)
                except OSError:  # the client gave up long ago
                    pass

            do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _forward

            def log_message(self, *args) -> None:
                pass

        self.srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.srv.server_address[1]}"
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()

    def close(self) -> None:  # idempotent: called before the resume and again at teardown
        self.release.set()
        self.srv.shutdown()
        self.srv.server_close()



def _relay(handler: BaseHTTPRequestHandler, up: Any) -> tuple[bytes, bytes, int, list[tuple[str, str]]]:
    """Send the request `handler` received on to the real server at `up` (a `urlsplit` result):
    (request body, response body, status, response headers)."""
    n = int(handler.headers.get("Content-Length") or 0)
    body = handler.rfile.read(n) if n else b""
    headers = {k: v for k, v in handler.headers.items() if k.lower() not in ("host", "connection")}
    conn = http.client.HTTPConnection(up.hostname, up.port, timeout=60)
    try:
        conn.request(handler.command, handler.path, body=body or None, headers=headers)
        resp = conn.getresponse()
        return body, resp.read(), resp.status, resp.getheaders()
    finally:
        conn.close()


def _answer(handler: BaseHTTPRequestHandler, status: int, headers: list[tuple[str, str]], data: bytes) -> None:
    """Send the real server's answer back to the client, with its own length."""
    handler.send_response(status)
    for k, v in headers:
        if k.lower() not in ("transfer-encoding", "connection", "content-length", "date", "server"):
            handler.send_header(k, v)
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


def _metrics_batch(method: str, path: str, body: bytes) -> bool:
    if not path.endswith("/runs/log-batch"):
        return False
    try:
        return bool(json.loads(body or b"{}").get("metrics"))
    except ValueError:
        return False


@pytest.mark.parametrize("slow", [pytest.param(lambda *_: True, id="every-response"), pytest.param(_metrics_batch, id="metrics-batch")])
def test_tracking_server_answering_too_slowly(cli, contracts_args, tmp_path, monkeypatch, mlflow_server, slow, request):
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "2")
    proxy = _SlowProxy(mlflow_server.url, slow, delay=8)
    request.addfinalizer(proxy.close)
    experiment = f"slow-{request.node.callspec.id}"
    code, score_out, _ = cli("score", "fields", *contracts_args, "--json")
    out_dir = tmp_path / "kept"
    code, out, err = cli("evaluate", "fields", *contracts_args, "--experiment", experiment, "--tracking-uri", proxy.url,
                         "--output", str(out_dir), "--no-figures")
    _check_failed_cleanly(code, err, out_dir, json.loads(score_out))
    assert code == 1 and "did not answer within 2 s (timed out" in err, err
    assert proxy.held and proxy.forwarded.wait(30)
    state = json.loads((out_dir / "state.json").read_text())
    assert state["status"] == "FAILED" and "timed out" in state["error"]
    client = MlflowClient(mlflow_server.url)
    first = dict(state["runs"])
    if request.node.callspec.id == "metrics-batch":
        # the runs exist; the timed-out batch reached the server; the runs were marked FAILED
        assert "parent" in first and client.get_run(first["parent"]).info.status == "FAILED"
        assert client.get_run(first["parent"]).data.metrics  # the "lost" batch did land
    proxy.close()
    state = _resume_completes(cli, out_dir, mlflow_server.url, experiment)
    assert first.items() <= state["runs"].items()  # the same runs completed, not new ones


def test_concurrent_evaluation_creating_the_same_experiment(cli, contracts_args, tmp_path, monkeypatch, tracking_uri):
    """Two evaluations started together into a new experiment both find it missing; the one that
    loses the race to create it must log into the winner's, not fail (seen with 2 processes on
    the PostgreSQL server). The interleaving is forced: right after this evaluation's look-up,
    "another evaluation" creates the experiment in the real store."""
    from mlflow.tracking import MlflowClient as Client

    original = Client.get_experiment_by_name
    raced = []

    def look_up_then_lose_the_race(self, name):
        found = original(self, name)
        if found is None and not raced:
            raced.append(Client(tracking_uri).create_experiment(name, artifact_location=(tmp_path / "other").as_uri()))
        return found

    monkeypatch.setattr(Client, "get_experiment_by_name", look_up_then_lose_the_race)
    code, out, err = cli("evaluate", "fields", *contracts_args, "--no-ci", "--experiment", "raced", "--tracking-uri", tracking_uri,
                         "--output", str(tmp_path / "out"), "--no-figures")
    monkeypatch.undo()
    assert raced and code == 0, err
    state = json.loads((tmp_path / "out" / "state.json").read_text())
    assert state["experiment_id"] == raced[0] and state["status"] == "UPLOADED"
    client = MlflowClient(tracking_uri)
    assert len(client.search_runs([raced[0]])) == 4


# --- the tracking-store fault catalogue ------------------------------------------------------
#
# Every fault ends the same way: exit 1, one `extracteval: error:` line (the store, what is wrong
# with it, what to do, the resume command), no traceback, the complete local copy kept; once the
# fault is gone, `--resume-from` completes the runs in that same store, each metric and the
# dataset logged once. The server faults above (unreachable, HTTP 500, too slow) and below
# (closing the connection) use the module's one real server; the SQLite faults need none.

# one model, no intervals, no figures: the faults are in the store, not in the scoring
ONE = ("--truth", str(CONTRACTS / "truth.csv"), "--predictions", f"gpt-4o-mini={CONTRACTS / 'predictions' / 'gpt-4o-mini.csv'}",
       "--no-ci", "--no-figures")


def _resumed_once(cli, out_dir: Path, uri: str, experiment: str) -> dict:
    """`--resume-from` into `uri`: every run of the local copy FINISHED there with the local
    metrics, each metric and the dataset logged once, no other run in the experiment."""
    code, out, err = cli("evaluate", "--resume-from", str(out_dir), "--tracking-uri", uri)
    assert code == 0, err
    state = json.loads((out_dir / "state.json").read_text())
    keys = [r["key"] for r in json.loads((out_dir / "manifest.json").read_text())["runs"]]
    assert state["status"] == "UPLOADED" and list(state["runs"]) == keys
    client = MlflowClient(uri)
    runs = client.search_runs([client.get_experiment_by_name(experiment).experiment_id])
    assert sorted(r.info.run_id for r in runs) == sorted(state["runs"].values())
    for key, rid in state["runs"].items():
        run = client.get_run(rid)
        local = json.loads((out_dir / "runs" / key / "metrics.json").read_text())
        assert run.info.status == "FINISHED" and run.data.metrics == local
        assert not [k for k in local if len(client.get_metric_history(rid, k)) != 1], f"run {key}: a metric logged twice"
        assert len(run.inputs.dataset_inputs) == 1
    return state


def _one_clear_line(code: int, err: str, out_dir: Path, *needles: str) -> str:
    assert code == 1, err
    assert "Traceback" not in err, err
    lines = [ln for ln in err.splitlines() if ln.startswith("extracteval: error:")]
    assert len(lines) == 1, err
    line = lines[0]
    assert line.startswith("extracteval: error: Logging to ") and f"--resume-from {out_dir}" in line, line
    for needle in needles:
        assert needle in line, f"{needle!r} not in {line!r}"
    manifest = json.loads((out_dir / "manifest.json").read_text())
    for r in manifest["runs"]:  # the complete local copy
        assert (out_dir / "runs" / r["key"] / "metrics.json").is_file()
        assert (out_dir / "runs" / r["key"] / "artifacts" / "extracteval" / "result.json").is_file()
    assert json.loads((out_dir / "state.json").read_text())["status"] == "FAILED"
    return line


def _new_store(path: Path) -> str:
    """A valid, empty MLflow SQLite store at `path` (its tables created)."""
    uri = f"sqlite:///{path}"
    MlflowClient(uri).search_experiments()
    return uri


class _Locker:
    """Another process holding the SQLite store's write lock (BEGIN IMMEDIATE) until released."""

    def __init__(self, db: Path) -> None:
        import subprocess
        import sys

        code = ("import sqlite3, sys; c = sqlite3.connect(sys.argv[1], isolation_level=None); c.execute('BEGIN IMMEDIATE'); "
                "print('locked', flush=True); sys.stdin.read()")
        self.proc = subprocess.Popen([sys.executable, "-c", code, str(db)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout.readline().strip() == "locked"

    def release(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait(timeout=30)


def _world_dir() -> Path:
    import tempfile

    d = Path(tempfile.mkdtemp(prefix="extracteval-readonly-"))
    d.chmod(0o755)
    return d


def test_store_fault_damaged_sqlite(cli, tmp_path):
    db = tmp_path / "store.db"
    db.write_bytes(b"garbage, not a database\n" * 10)
    uri, out_dir = f"sqlite:///{db}", tmp_path / "kept"
    code, _, err = cli("evaluate", "fields", *ONE, "--experiment", "damaged", "--tracking-uri", uri, "--output", str(out_dir))
    _one_clear_line(code, err, out_dir, str(db), "damaged or is not an MLflow database", f"Move {db} aside")
    db.rename(tmp_path / "store.db.damaged")
    _resumed_once(cli, out_dir, uri, "damaged")


@pytest.fixture
def short_sqlite_busy_timeout():
    """MLflow sets `PRAGMA busy_timeout = 20000` on every session of a SQLite store (no setting
    changes it): in this process, that statement asks for 1 s instead, so the locked-store test
    waits 1 s for the lock rather than 20 s. Only the wait is shorter; the error is the same."""
    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    def shorten(conn, cursor, statement, parameters, context, executemany):  # noqa: ANN001 - SQLAlchemy's hook
        if statement.replace(" ", "").lower().startswith("pragmabusy_timeout="):
            statement = "PRAGMA busy_timeout = 1000;"
        return statement, parameters

    event.listen(Engine, "before_cursor_execute", shorten, retval=True)
    yield
    event.remove(Engine, "before_cursor_execute", shorten)


def test_store_fault_locked_sqlite(cli, tmp_path, request, short_sqlite_busy_timeout):
    db = tmp_path / "store.db"
    uri, out_dir = _new_store(db), tmp_path / "kept"
    locker = _Locker(db)
    request.addfinalizer(locker.release)
    code, _, err = cli("evaluate", "fields", *ONE, "--experiment", "locked", "--tracking-uri", uri, "--output", str(out_dir))
    _one_clear_line(code, err, out_dir, str(db), "locked by another process", "Once that process has finished")
    locker.release()
    _resumed_once(cli, out_dir, uri, "locked")


def test_store_fault_read_only_sqlite(cli, tmp_path, request):
    """A store the user may read but not write. As root, permissions do not stop a write, so the
    command runs as the unprivileged user `nobody` (effective uid, restored after)."""
    import os
    import shutil

    root = os.geteuid() == 0
    base = _world_dir() if root else tmp_path
    request.addfinalizer(lambda: shutil.rmtree(base, ignore_errors=True))
    store = base / "store"
    store.mkdir()
    uri = _new_store(store / "mlflow.db")
    kept = base / "kept"
    kept.mkdir()
    kept.chmod(0o777)
    out_dir = kept / "bundle"
    # every module the command needs, imported by the same command into a writable store first
    code, _, err = cli("evaluate", "fields", *ONE, "--experiment", "warm", "--tracking-uri", f"sqlite:///{tmp_path / 'warm.db'}")
    assert code == 0, err
    if root:
        os.seteuid(65534)
    else:
        (store / "mlflow.db").chmod(0o444)
        store.chmod(0o555)
    try:
        code, _, err = cli("evaluate", "fields", *ONE, "--experiment", "read-only", "--tracking-uri", uri, "--output", str(out_dir))
    finally:
        if root:
            os.seteuid(0)
        else:
            store.chmod(0o755)
            (store / "mlflow.db").chmod(0o644)
    _one_clear_line(code, err, out_dir, str(store / "mlflow.db"), "read-only", "writable")
    _resumed_once(cli, out_dir, uri, "read-only")


def test_store_fault_full_disk_sqlite(tmp_path):
    """The disk fills up under the store: a real write failure of the database file, made with a
    file-size limit on the command's process (RLIMIT_FSIZE, SIGXFSZ ignored: writing past it
    fails with EFBIG as a full disk fails with ENOSPC), not a mocked exception. Not a real full
    disk: that needs a small file system mounted, which a test cannot count on."""
    import os
    import resource
    import signal
    import subprocess
    import sys

    db = tmp_path / "store.db"
    uri, out_dir = _new_store(db), tmp_path / "kept"
    limit = db.stat().st_size  # the store may not grow by a single page

    def pre() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[2] / "src"), os.environ.get("PYTHONPATH", "")])}
    r = subprocess.run([sys.executable, "-m", "extracteval", "evaluate", "fields", *ONE, "--experiment", "full",
                        "--tracking-uri", uri, "--output", str(out_dir)], env=env, cwd=tmp_path, capture_output=True, text=True,
                       timeout=300, preexec_fn=pre)
    line = _one_clear_line(r.returncode, r.stderr, out_dir, str(db))
    assert "is full" in line or "could not be written" in line, line
    _resumed_once(_InProcess(), out_dir, uri, "full")


class _InProcess:
    """The `cli` fixture's call shape for a test that also runs a subprocess."""

    def __call__(self, *argv: str) -> tuple[int, str, str]:
        import contextlib
        import io

        from extracteval.cli import main

        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(list(argv))
        return code, out.getvalue(), err.getvalue()


def test_store_fault_artifact_root_not_writable(cli, tmp_path):
    """The store takes the runs but their artifacts cannot be written: the artifact root (beside
    the database) is a file, so no folder can be made in it — a real failure, also for root."""
    store = tmp_path / "store"
    store.mkdir()
    uri, out_dir = _new_store(store / "mlflow.db"), tmp_path / "kept"
    (store / "mlartifacts").write_text("a file where the artifact folder should be\n")
    code, _, err = cli("evaluate", "fields", *ONE, "--experiment", "no-artifacts", "--tracking-uri", uri, "--output", str(out_dir))
    line = _one_clear_line(code, err, out_dir, "artifact folder", "cannot be written", "Make the artifact folder writable")
    state = json.loads((out_dir / "state.json").read_text())
    assert MlflowClient(uri).get_run(state["runs"]["single"]).info.status == "FAILED", line
    (store / "mlartifacts").unlink()
    after = _resumed_once(cli, out_dir, uri, "no-artifacts")
    assert after["runs"]["single"] == state["runs"]["single"]  # the same runs completed, not new ones


class _ClosingProxy:
    """Forwards requests to the real server; the first metrics batch is forwarded (the server
    logs it) and then the connection is closed without an answer."""

    def __init__(self, upstream: str) -> None:
        up = urlsplit(upstream)
        proxy = self
        self.closed: list[str] = []

        class Handler(BaseHTTPRequestHandler):
            def _forward(self) -> None:
                body, data, status, resp_headers = _relay(self, up)
                if not proxy.closed and _metrics_batch(self.command, self.path, body):
                    proxy.closed.append(self.path)
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)  # mid-upload: no status line, nothing
                    return
                _answer(self, status, resp_headers, data)

            do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _forward

            def log_message(self, *args) -> None:
                pass

        self.srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.srv.server_address[1]}"
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.srv.shutdown()
        self.srv.server_close()


def test_store_fault_server_closes_the_connection_mid_upload(cli, tmp_path, fast_failing_http, mlflow_server, request):
    proxy = _ClosingProxy(mlflow_server.url)
    request.addfinalizer(proxy.close)
    out_dir = tmp_path / "kept"
    code, _, err = cli("evaluate", "fields", *ONE, "--experiment", "closed", "--tracking-uri", proxy.url, "--output", str(out_dir))
    _one_clear_line(code, err, out_dir, proxy.url, "closed the connection before answering", "Once the tracking server answers again")
    assert proxy.closed
    first = json.loads((out_dir / "state.json").read_text())["runs"]
    state = _resumed_once(cli, out_dir, mlflow_server.url, "closed")
    assert first.items() <= state["runs"].items()  # the run the lost batch went to was completed, not made again


# the catalogue's size, quoted by the README: fault → the test that pins it
STORE_FAULTS = {
    "damaged SQLite file": test_store_fault_damaged_sqlite,
    "SQLite write lock held by another process": test_store_fault_locked_sqlite,
    "read-only SQLite store": test_store_fault_read_only_sqlite,
    "full disk under the SQLite store": test_store_fault_full_disk_sqlite,
    "artifact root not writable": test_store_fault_artifact_root_not_writable,
    "server unreachable": test_tracking_server_unreachable_at_start,
    "server answering HTTP 500": test_tracking_server_answering_500,
    "server answering too slowly (two variants)": test_tracking_server_answering_too_slowly,
    "server closing the connection mid-upload": test_store_fault_server_closes_the_connection_mid_upload,
}
