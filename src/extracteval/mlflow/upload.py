"""Upload a bundle to an MLflow tracking store, with batched writes and resumable failure.

Writes per run: one `log_batch` for params and tags (chunked by MLflow's 100-per-kind limit),
metrics in `log_batch` calls of at most 1000 (never one call per metric), one `log_inputs`
for the ground-truth dataset and one `log_artifacts` for the artifact folder: result.json, CSV,
Parquet, report.html, the figures (PNG files rendered by matplotlib into the local copy — what
`log_figure` writes, without rendering each figure a second time) and the per-item MLflow table
(the JSON `log_table` writes, registered by the `mlflow.loggedArtifacts` tag that `log_table`
sets; `log_table` itself would append a second copy of the rows when a failed upload is resumed). The run ids created are written to the
bundle's `state.json` as soon as they exist, so `--resume-from` completes those same runs
instead of creating duplicates. Metrics carry the bundle's timestamp and step 0, so logging them
again on resume writes identical values.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, NoReturn

from extracteval.errors import Interrupted
from extracteval.mlflow.bundle import NOTE_TAG, Bundle

__all__ = ["UploadError", "UploadInterrupted", "UploadResult", "upload_bundle", "METRICS_PER_CALL", "default_tracking_uri", "store_uri", "ui_hint"]

METRICS_PER_CALL = 1000
PARAMS_TAGS_PER_CALL = 100


class UploadError(RuntimeError):
    """The tracking store could not take the results; the local copy is complete."""


class UploadInterrupted(Interrupted):
    """Ctrl-C or SIGTERM while logging; the local copy is complete. Its message says how to log
    it; the command then ends as interrupted (exit status 130). Not an `UploadError`: an
    interrupt is not a failure of the store, and no caller goes on after it."""


@dataclass(frozen=True, kw_only=True)
class UploadResult:
    tracking_uri: str
    experiment_id: str
    run_ids: Mapping[str, str]  # run key → run id
    models: Mapping[str, str]  # model name → run id

    def to_dict(self) -> dict[str, Any]:
        return {"tracking_uri": self.tracking_uri, "experiment_id": self.experiment_id, "run_ids": dict(self.run_ids), "models": dict(self.models)}


def default_tracking_uri() -> str:
    """$MLFLOW_TRACKING_URI when set, else MLflow's embedded SQLite store in the working directory."""
    import os
    from pathlib import Path

    env = os.environ.get("MLFLOW_TRACKING_URI")
    if env:
        return env
    return f"sqlite:///{Path.cwd() / 'mlflow.db'}"


# the tables every MLflow SQLite store has (its schema version, experiments and runs)
_MLFLOW_TABLES = {"alembic_version", "experiments", "runs"}


def store_uri(given: str | None) -> str:
    """The tracking store a command logs to or reads: `given`, else MLflow's default; refused
    (InputError) when it names a SQLite file holding another application's database, to which
    MLflow would add its tables without a word."""
    uri = given or default_tracking_uri()
    db = _sqlite_path(uri)
    if db:
        check_sqlite_store(db)
    return uri


def check_sqlite_store(db: str) -> None:
    """Refuse a SQLite file that holds tables but is not an MLflow store (read only, nothing
    written). A missing or empty file is a new store; a damaged one is reported when opened."""
    import sqlite3
    from pathlib import Path
    from urllib.request import pathname2url

    from extracteval.errors import InputError

    p = Path(db)
    try:
        if not p.is_file() or p.stat().st_size == 0:
            return
        con = sqlite3.connect(f"file:{pathname2url(str(p.resolve()))}?mode=ro", uri=True)
        try:
            tables = sorted(r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"))
        finally:
            con.close()
    except (OSError, sqlite3.Error):
        return
    if tables and not _MLFLOW_TABLES <= set(tables):
        shown = ", ".join(repr(t) for t in tables[:5]) + (" …" if len(tables) > 5 else "")
        raise InputError(f"{db}: this SQLite file is another application's database (tables {shown}), not an MLflow tracking "
                         "store; extracteval does not add MLflow's tables to it. Choose another file with --tracking-uri "
                         "sqlite:///PATH (a new file becomes a store).")


# pauses between tries to reach a tracking server that does not answer: about 15 s in all, each
# announced, then the results are kept for a later `--resume-from` (MLflow's own retries would
# wait minutes without a word)
_SERVER_PAUSES = (1, 2, 4, 8)


def wait_for_server(uri: str, *, connect_timeout: float = 5.0) -> None:
    """Return once an http(s) tracking server accepts a connection; try again after each of
    `_SERVER_PAUSES` (as many as MLFLOW_HTTP_REQUEST_MAX_RETRIES allows), saying so on standard
    error; then raise ConnectionError. Other stores, and servers reached through a proxy, are left
    to MLflow."""
    import os
    import socket
    import sys
    import time
    from urllib.parse import urlsplit
    from urllib.request import getproxies, proxy_bypass

    parts = urlsplit(uri)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return
    if parts.scheme in getproxies() and not proxy_bypass(parts.hostname):
        return
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
        retries = max(0, int(os.environ.get("MLFLOW_HTTP_REQUEST_MAX_RETRIES", len(_SERVER_PAUSES))))
    except ValueError:
        return
    pauses = _SERVER_PAUSES[:retries]
    from extracteval.report.terminal import terminal_safe

    for attempt in range(len(pauses) + 1):
        try:
            socket.create_connection((parts.hostname, port), timeout=connect_timeout).close()
            return
        except OSError as e:
            why = "connection timed out" if isinstance(e, TimeoutError) else "connection refused" if isinstance(e, ConnectionRefusedError) \
                else f"connection refused: {e.strerror or e}"
        if attempt == len(pauses):
            raise ConnectionError(f"{why} (tried {attempt + 1} times over {sum(pauses)} s)")
        print(terminal_safe(f"extracteval: the tracking server {uri} does not answer ({why}); trying again in {pauses[attempt]} s "
                            f"(try {attempt + 2} of {len(pauses) + 1})", colours=False), file=sys.stderr, flush=True)
        time.sleep(pauses[attempt])


def new_sqlite_store(uri: str) -> None:
    """Create the schema of a new SQLite store (a file that does not exist, or is empty) aside,
    then move it into place whole: an interrupt or a failure while MLflow creates its tables
    leaves either no store or a complete one, never a half-built file every later run fails on.
    Other stores, and an MLflow without its table-creation step, are left to MLflow."""
    import os
    from pathlib import Path

    db = _sqlite_path(uri)
    if not db:
        return
    target = Path(db).absolute()
    try:
        if target.exists() and (not target.is_file() or target.stat().st_size > 0):
            return
    except OSError:
        return  # MLflow reports the store when it opens it
    try:
        import mlflow.store.db.utils as db_utils
        import sqlalchemy
    except ImportError:  # pragma: no cover - MLflow without SQLAlchemy stores
        return
    create_tables = getattr(db_utils, "_initialize_tables", None)
    if create_tables is None:  # pragma: no cover - an MLflow that builds its schema otherwise
        return
    partial = target.with_name(f".{target.name}.extracteval-{os.getpid()}.partial")
    try:
        engine = sqlalchemy.create_engine(f"sqlite:///{partial}")
        try:
            create_tables(engine)
        finally:
            engine.dispose()
        if target.exists():  # the empty file named as the store
            os.replace(partial, target)
        else:
            try:
                os.link(partial, target)  # never over a store another run has just made
            except FileExistsError:
                pass
            except OSError:  # a file system without hard links
                if not target.exists():
                    os.replace(partial, target)
    finally:  # the file built aside, and the journal SQLite keeps beside it while a transaction is open
        for leftover in (partial, *(partial.with_name(partial.name + suffix) for suffix in ("-journal", "-wal", "-shm"))):
            leftover.unlink(missing_ok=True)


def ui_hint(tracking_uri: str) -> str:
    """How to look at the runs in the MLflow UI."""
    if tracking_uri.startswith(("http://", "https://", "databricks")):
        return f"open {tracking_uri} in a browser"
    return f"mlflow ui --backend-store-uri {tracking_uri}   (then open http://127.0.0.1:5000)"


def _chunks(items: list[Any], n: int) -> list[list[Any]]:
    return [items[i : i + n] for i in range(0, len(items), n)]


def upload_bundle(
    bundle: Bundle,
    *,
    tracking_uri: str | None = None,
    experiment: str | None = None,
    into_run: str | None = None,
    on_step: Callable[[str], None] | None = None,
    experiment_description: str | None = None,
) -> UploadResult:
    """Log every run of `bundle` to the tracking store and return the run ids.

    Args:
        tracking_uri: store to log to (default: `default_tracking_uri()`; never the one the bundle names).
        experiment: experiment name (default: the bundle's; created when missing).
        into_run: log a single-run bundle into this existing run (the `mlflow.evaluate` case);
            the caller owns that run's lifecycle, so it is neither created nor terminated here.
        on_step: called with a short description before each write (progress, fault injection).
        experiment_description: the experiment's description in the MLflow UI, set when the
            experiment has none (one a user wrote is never replaced).

    Raises:
        UploadError: the store failed; every run created is marked FAILED (when the store still
            answers), `state.json` records the error, and the message says how to resume.
    """
    import contextlib
    import sys

    # MLflow prints "View run … at: URL" on stdout; stdout belongs to the command (`--json`).
    # Its SQL store logs a failed statement with a traceback before raising: the failure is
    # reported once, by the UploadError below, as one sentence.
    with contextlib.redirect_stdout(sys.stderr), _quiet_logger("mlflow.store.db.utils"):
        return _upload(bundle, tracking_uri=tracking_uri, experiment=experiment, into_run=into_run, on_step=on_step,
                       experiment_description=experiment_description)


@contextmanager
def _quiet_logger(name: str) -> Iterator[None]:
    import logging

    logger = logging.getLogger(name)
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)


def _run_gone(e: Exception) -> bool:
    """Whether the store's error says the run no longer exists (deleted since a first attempt)."""
    return "RESOURCE_DOES_NOT_EXIST" in str(e) or "not found" in str(e).lower()


def _experiment_of(client: Any, bundle: Bundle, state: dict[str, Any], into_run: str | None, exp_name: str, uri: str) -> str:
    """The experiment the bundle's runs go to: that of `into_run`; on a resumed upload that of
    the runs already created (by name when they are gone); else `exp_name`, created if missing."""
    m = bundle.manifest
    if into_run is not None:
        if len(m["runs"]) != 1:
            raise ValueError("into_run needs a single-run bundle")
        state["runs"] = {m["runs"][0]["key"]: into_run}
        return client.get_run(into_run).info.experiment_id
    if any(state["runs"].get(p.key) for p in bundle.runs):
        # resuming: the runs already exist; stay in their experiment (found or not, below)
        try:
            return client.get_run(next(state["runs"][p.key] for p in bundle.runs if state["runs"].get(p.key))).info.experiment_id
        except Exception as e:  # noqa: BLE001 - a run deleted meanwhile: fall back to the experiment by name
            if not _run_gone(e):
                raise
    return _experiment_id(client, exp_name, uri)


def _log_run(client: Any, bundle: Bundle, plan: Any, state: dict[str, Any], exp_id: str, into_run: str | None, uri: str,
             step: Callable[[str], None], created: list[str]) -> str:
    """One planned run into the store: the run (created, or the one a resumed upload made,
    running again; added to `created` before anything is logged to it, so that a failure marks
    it), its params and tags, metrics, dataset input and artifacts. Its id."""
    from mlflow.entities import Dataset, DatasetInput, InputTag, Metric, Param, RunTag
    from mlflow.store.artifact.artifact_repository_registry import get_artifact_repository
    from mlflow.utils.mlflow_tags import MLFLOW_PARENT_RUN_ID

    ts = int(bundle.manifest["created_ms"])
    ds = bundle.manifest.get("dataset")
    run_id = state["runs"].get(plan.key)
    artifact_uri = None
    if run_id is not None:
        try:
            info = client.get_run(run_id).info
            artifact_uri = info.artifact_uri
            if into_run is None and info.lifecycle_stage != "active":
                run_id = None
            elif into_run is None:
                client.update_run(run_id, status="RUNNING")
        except Exception as e:  # the run is gone from the store: make a new one
            if into_run is not None or not _run_gone(e):
                raise
            run_id = None
    if run_id is None:
        step(f"create {plan.key}")
        tags = {}
        if plan.parent is not None:
            tags[MLFLOW_PARENT_RUN_ID] = state["runs"][plan.parent]
        run = client.create_run(exp_id, start_time=ts, tags=tags, run_name=plan.run_name)
        run_id, artifact_uri = run.info.run_id, run.info.artifact_uri
        state["runs"][plan.key] = run_id
        bundle.write_state(state)
    if into_run is None:
        created.append(run_id)
    rdir = bundle.run_dir(plan.key)
    step(f"params {plan.key}")
    params = [Param(k, str(v)) for k, v in sorted(plan.params.items())]
    run_tags = [RunTag(k, str(v)) for k, v in sorted(plan.tags.items())]
    for pchunk in _chunks(params, PARAMS_TAGS_PER_CALL) or [[]]:
        tchunk, run_tags = run_tags[:PARAMS_TAGS_PER_CALL], run_tags[PARAMS_TAGS_PER_CALL:]
        client.log_batch(run_id, params=pchunk, tags=tchunk)
    for tchunk in _chunks(run_tags, PARAMS_TAGS_PER_CALL):
        client.log_batch(run_id, tags=tchunk)
    metrics = [Metric(k, float(v), ts, 0) for k, v in sorted(bundle.metrics(plan.key).items())]
    for i, mchunk in enumerate(_chunks(metrics, METRICS_PER_CALL)):
        step(f"metrics {plan.key} {i}")
        client.log_batch(run_id, metrics=mchunk)
    if ds is not None:
        step(f"dataset {plan.key}")
        client.log_inputs(run_id, [DatasetInput(dataset=Dataset(**ds), tags=[InputTag("mlflow.data.context", "truth")])])
    step(f"artifacts {plan.key}")
    repo = get_artifact_repository(artifact_uri, tracking_uri=uri)
    repo.log_artifacts(str(rdir / "artifacts"))
    return run_id


def _upload(
    bundle: Bundle,
    *,
    tracking_uri: str | None,
    experiment: str | None,
    into_run: str | None,
    on_step: Callable[[str], None] | None,
    experiment_description: str | None = None,
) -> UploadResult:
    from mlflow.tracking import MlflowClient

    m = bundle.manifest
    uri = store_uri(tracking_uri)  # never the manifest's own: a results folder may come from anyone
    exp_name = experiment or m.get("experiment") or "extracteval"
    state = bundle.read_state()
    state.setdefault("runs", {})
    state["tracking_uri"] = uri
    step = on_step or (lambda _s: None)
    client = None
    created: list[str] = []
    current = "while connecting to the tracking server"
    try:
        # inside the try: opening a SQLite store reads the file (a damaged one fails here)
        wait_for_server(uri)
        current = "while creating the tracking store"
        new_sqlite_store(uri)
        current = "while opening the tracking store"
        client = MlflowClient(tracking_uri=uri)
        current = "while looking up the experiment"
        step("experiment")
        exp_id = _experiment_of(client, bundle, state, into_run, exp_name, uri)
        state["experiment_id"] = exp_id
        if experiment_description and into_run is None:
            _describe_experiment(client, exp_id, experiment_description)
        for plan in bundle.runs:
            current = f"while logging run {plan.run_name!r}"
            _log_run(client, bundle, plan, state, exp_id, into_run, uri, step, created)
        if into_run is None:
            # children first, then the parent: a FINISHED parent means every child is complete
            order = sorted(bundle.runs, key=lambda p: p.role == "comparison")
            current = "while marking the runs finished"
            for plan in order:
                step(f"finish {plan.key}")
                client.set_terminated(state["runs"][plan.key], "FINISHED")
        state["status"] = "UPLOADED"
        state["error"] = None
        state["uploaded_ms"] = int(time.time() * 1000)
        bundle.write_state(state)
    except KeyboardInterrupt:
        _interrupted(bundle, state, client, created, uri, current)
    except Exception as e:  # noqa: BLE001 - any store failure becomes one clear, resumable error
        if _caused_by_interrupt(e):  # SQLAlchemy's clean-up after the interrupt failed in turn
            _interrupted(bundle, state, client, created, uri, current)
        reason, advice = diagnose(e, uri)
        marked = _mark_failed(client, created)
        _forget_engine(uri)
        state["status"] = "FAILED"
        state["error"] = f"failed {current}: {reason}"
        bundle.write_state(state)
        note = "" if marked or not created else " The runs created so far could not be marked FAILED, because the store did not answer."
        raise UploadError(
            f"Logging to {uri} failed {current}: {reason}.{note} The complete results are kept in {bundle.path}. "
            + advice.format(cmd=_resume_command(bundle, uri))
        ) from e
    models = {p.model: state["runs"][p.key] for p in bundle.runs if p.model is not None}
    return UploadResult(tracking_uri=uri, experiment_id=str(exp_id), run_ids=dict(state["runs"]), models=models)


def _interrupted(bundle: Bundle, state: dict[str, Any], client: Any, created: list[str], uri: str, current: str) -> NoReturn:
    _mark_failed(client, created, status="KILLED")
    state["status"] = "INTERRUPTED"
    state["error"] = f"interrupted {current}"
    bundle.write_state(state)
    raise UploadInterrupted(
        f"Logging to {uri} was interrupted {current}. The complete results are kept in {bundle.path}; "
        f"to log them, run: {_resume_command(bundle, uri)}"
    ) from None


def _caused_by_interrupt(e: BaseException) -> bool:
    """Whether a Ctrl-C or SIGTERM is what `e` arose from (an error raised while handling it)."""
    seen: set[int] = set()
    cur: BaseException | None = e
    while cur is not None and id(cur) not in seen:
        if isinstance(cur, KeyboardInterrupt):
            return True
        seen.add(id(cur))
        cur = cur.__cause__ or cur.__context__
    return False


def _describe_experiment(client: Any, exp_id: str, text: str) -> None:
    """The experiment's description (the MLflow UI's note), unless it has one already."""
    exp = client.get_experiment(exp_id)
    if not (exp.tags or {}).get(NOTE_TAG):
        client.set_experiment_tag(exp_id, NOTE_TAG, text)


def _experiment_id(client: Any, name: str, uri: str) -> str:
    """The experiment's id, creating it when missing. Evaluations started together into a new
    experiment all find it missing and race to create it: the losers take the winner's."""
    from mlflow.exceptions import MlflowException

    exp = client.get_experiment_by_name(name)
    if exp is not None:
        return exp.experiment_id
    try:
        return client.create_experiment(name, artifact_location=_artifact_location(uri, name))
    except MlflowException as e:
        if e.error_code != "RESOURCE_ALREADY_EXISTS":
            raise
        exp = client.get_experiment_by_name(name)
        if exp is None:
            raise
        return exp.experiment_id


def _artifact_location(uri: str, experiment: str) -> str | None:
    """Artifacts of an embedded SQLite store go beside the database (`mlartifacts/`), not into
    whatever folder the command happens to run in; servers choose their own location."""
    from pathlib import Path

    if not uri.startswith("sqlite:///"):
        return None
    db = Path(uri[len("sqlite:///"):])
    if str(db) in ("", ":memory:"):
        return None
    from extracteval.io.config import distinct_file_name

    return (db.resolve().parent / "mlartifacts" / distinct_file_name(experiment)).as_uri()


def _resume_command(bundle: Bundle, uri: str | None) -> str:
    return f"extracteval evaluate --resume-from {bundle.path}" + (f" --tracking-uri {uri}" if uri else "")


def _sqlite_path(uri: str) -> str | None:
    """The database file of a `sqlite:///` tracking URI (None for other stores)."""
    if not uri.startswith("sqlite:///"):
        return None
    return uri[len("sqlite:///"):].split("?", 1)[0] or None


def diagnose(e: BaseException, uri: str = "") -> tuple[str, str]:
    """(what went wrong, what to do about it) for an exception of the logging path: a clause
    naming the store (no exception class names, no SQL), and a sentence whose `{cmd}` is the
    command to run once the store works."""
    reason = _reason(e, uri)
    low = reason.lower()
    db = _sqlite_path(uri)
    if "not reachable" in low or "did not answer" in low or "closed the connection" in low:
        return reason, "Once the tracking server answers again, run: {cmd}"
    if "answered http" in low:
        return reason, "Once the server is fixed, run: {cmd}"
    if db and "not a database" in low:
        return reason, f"Move {db} aside (or choose another store with --tracking-uri), then run: {{cmd}}"
    if db and "locked" in low:
        return reason, "Once that process has finished, run: {cmd}"
    if db and "read-only" in low:
        return reason, f"Make {db} and its folder writable (or choose another store with --tracking-uri), then run: {{cmd}}"
    if "full" in low or "no space" in low:
        return reason, "Free some space, then run: {cmd}"
    if "artifact" in low:
        return reason, "Make the artifact folder writable, then run: {cmd}"
    return reason, "Once the tracking store works again, run: {cmd}"


def _reason(e: BaseException, uri: str = "") -> str:
    import re

    text = " ".join(str(e).split())
    low = text.lower()
    db = _sqlite_path(uri)
    # before the "max retries exceeded" test below: urllib3 wraps a read timeout in that phrase
    # too, and a server that answers slowly is not one that refuses connections
    if "read timed out" in low or "readtimeout" in low:
        limit = re.search(r"read timeout=([0-9.]+)", low)
        within = f" within {limit.group(1)} s" if limit else ""
        return f"the tracking server did not answer{within} (timed out; MLFLOW_HTTP_REQUEST_TIMEOUT sets the limit)"
    # MLflow retries 5xx answers through urllib3, which then reports "too many 500 error responses"
    # inside the same "max retries exceeded" phrase: the server is up, and failing
    status = re.search(r"too many (\d{3}) error responses", low)
    if status:
        return f"the tracking server answered HTTP {status.group(1)} (a server error; its log says why)"
    if "connecttimeout" in low or "connect timeout" in low or "connection timed out" in low:
        return "the tracking server is not reachable (connection timed out)"
    if any(s in low for s in ("remote end closed", "connection aborted", "connection reset", "remotedisconnected",
                              "incompleteread", "connection broken")):
        return "the tracking server closed the connection before answering"
    if any(s in low for s in ("connection refused", "max retries exceeded", "failed to establish", "connectionerror")):
        return "the tracking server is not reachable (connection refused)"
    if isinstance(e, OSError) and not isinstance(e, ConnectionError) and type(e).__module__ == "builtins":
        # writing the artifacts (a local or mounted artifact root): the file system said no
        import errno

        what = e.strerror or text
        if e.errno == errno.ENOSPC or "no space left" in low:
            return f"the disk holding the artifacts is full ({what})"
        return f"the artifact folder {e.filename or ''} cannot be written ({what})".replace("folder  cannot", "folder cannot")
    store = f"the SQLite tracking store {db}" if db else "the tracking store"
    if "file is not a database" in low or "database disk image is malformed" in low:
        return f"{store} is damaged or is not an MLflow database (SQLite: {'file is not a database' if 'not a database' in low else 'database disk image is malformed'})"
    if "database is locked" in low:
        return f"{store} is locked by another process that is writing to it (SQLite: database is locked)"
    if "readonly database" in low or "read-only" in low:
        return f"{store} is read-only (SQLite: attempt to write a readonly database)"
    if "database or disk is full" in low or "no space left" in low:
        return f"the disk holding {db or 'the tracking store'} is full ({'SQLite: database or disk is full' if 'database or disk' in low else 'no space left on device'})"
    if "unable to open database file" in low:
        return f"{store} cannot be opened (SQLite: unable to open database file; does its folder exist and may it be written?)"
    if "disk i/o error" in low:
        return f"{store} could not be written (SQLite: disk I/O error; the disk may be full or failing)"
    text = re.sub(r"\s*\[SQL: .*", "", text)  # SQLAlchemy appends the statement and a link: not for the user
    text = re.sub(r"\s*\(Background on this error at: \S+\)", "", text)
    return (text[:300] + "…") if len(text) > 300 else (text or type(e).__name__)


def _forget_engine(uri: str) -> None:
    """Drop MLflow's cached database engine of a failed SQLite store: its pooled connections
    stay open on the file as it was, so a retry in this process after the user moved a damaged
    file aside (or freed space) would meet the old file again. Best effort: a private cache."""
    if not uri.startswith("sqlite:"):
        return
    try:
        from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

        engines = getattr(SqlAlchemyStore, "_engine_map", {})
        for key in [k for k in engines if k == uri]:
            engines.pop(key).dispose()
    except Exception:  # noqa: BLE001 - an MLflow without that cache: nothing to drop
        pass


def _mark_failed(client: Any, run_ids: list[str], status: str = "FAILED") -> bool:
    if client is None:
        return not run_ids
    ok = True
    for rid in run_ids:
        try:
            client.set_terminated(rid, status)
        except Exception:  # noqa: BLE001 - best effort: the store may be the thing that failed
            ok = False
    return ok
