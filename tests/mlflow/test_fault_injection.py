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
from urllib.parse import urlsplit

import pytest
from mlflow.tracking import MlflowClient


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
    assert "extracteval: error:" in err or "extracteval:" in err
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
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else b""
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
                conn = http.client.HTTPConnection(up.hostname, up.port, timeout=60)
                try:
                    conn.request(self.command, self.path, body=body or None, headers=headers)
                    resp = conn.getresponse()
                    data, status, resp_headers = resp.read(), resp.status, resp.getheaders()
                finally:
                    conn.close()
                if slow(self.command, self.path, body):
                    proxy.held.append(f"{self.command} {self.path}")
                    proxy.forwarded.set()
                    proxy.release.wait(delay)
                try:
                    self.send_response(status)
                    for k, v in resp_headers:
                        if k.lower() not in ("transfer-encoding", "connection", "content-length", "date", "server"):
                            self.send_header(k, v)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
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
