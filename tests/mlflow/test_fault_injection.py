"""Fault injection on the MLflow path beyond tests/test_logging.py (server stopped mid-upload,
Ctrl-C, disk full): a tracking server unreachable from the start, and one that answers every
request with HTTP 500. The command fails clearly (exit 1, no traceback, the resume command
printed) and the local copy is complete, or cleanly absent."""

from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest


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


def test_tracking_server_unreachable_at_start(cli, contracts_args, tmp_path, fast_failing_http):
    code, score_out, _ = cli("score", "fields", *contracts_args, "--json")
    out_dir = tmp_path / "kept"
    code, out, err = cli("evaluate", "fields", *contracts_args, "--experiment", "x", "--tracking-uri", f"http://127.0.0.1:{_free_port()}",
                         "--output", str(out_dir), "--no-figures")
    _check_failed_cleanly(code, err, out_dir, json.loads(score_out))


def test_tracking_server_answering_500(cli, contracts_args, tmp_path, fast_failing_http, server_500):
    code, score_out, _ = cli("score", "fields", *contracts_args, "--json")
    out_dir = tmp_path / "kept"
    code, out, err = cli("evaluate", "fields", *contracts_args, "--experiment", "x", "--tracking-uri", server_500,
                         "--output", str(out_dir), "--no-figures")
    _check_failed_cleanly(code, err, out_dir, json.loads(score_out))
