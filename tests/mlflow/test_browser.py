"""The MLflow UI as a user opens it, in headless Chromium on a 1440 × 900 desktop: `mlflow server`
on the demo's store after a second demo of `contracts`, then the experiment's runs table and its
chart view with the parent collapsed, a parent run, a model run, the leaderboard run of the second
demo, the reports of `requirements` and of `toolcalls` inside MLflow's artifact viewer, and Compare
of the model runs. Each page must show what a user looks for first — the verdict in the first two
lines of each description, a chart view under 2,000 pixels, a report whose verdict table fits the
viewer — and our artifacts must not log errors to the console. Screenshots of every page are saved
under pytest's base temporary folder (`--basetemp`), in `browser-screenshots*/`.

Needs Debian's `chromium` (`.ci/run` installs it) and the `playwright` package (the `browser`
extra, which `make test` installs), which drives that browser: nothing downloads a browser at run
time. Without Chromium the test skips, naming the package and the command that installs it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from extracteval.tasks import RANKING_SPECS
from extracteval.mlflow.descriptions import (
    HEADLINE_GAP,
    HEADLINE_KEYS,
    HEADLINE_RANK,
    HEADLINE_SCORE,
    HEADLINE_WINNER,
    fmt_interval,
    fmt_value,
    primary_interval,
)

from tests.system import CHROMIUM, python_package

from tests.fixtures.tracking import REPO, MlflowServer, _demo_in

pytestmark = pytest.mark.slow

FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run", "--disable-component-update",
         "--disable-sync", "--disable-dev-shm-usage"]
EXPERIMENT = "extracteval-demo-contracts"
DESKTOP = {"width": 1440, "height": 900}
WAIT_MS = 30_000


@pytest.fixture(scope="module")
def browser():
    sync_api = python_package("playwright.sync_api", "browser")
    exe = CHROMIUM.require()
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=exe, args=FLAGS, headless=True)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture(scope="module")
def store_after_two_demos(demo_run, tmp_path_factory: pytest.TempPathFactory) -> str:
    """A copy of the session demo's store, then `demo --only contracts` again into it."""
    from .test_demo_full import _copy_store

    assert demo_run.code == 0, demo_run.err[-3000:]
    root = tmp_path_factory.mktemp("ui-store")
    _copy_store(demo_run.root / "mlflow.db", root / "mlflow.db")
    uri = f"sqlite:///{root / 'mlflow.db'}"
    code, _, err = _demo_in(root, "--experiments", str(REPO / "experiments"), "--tracking-uri", uri, "--only", "contracts")
    assert code == 0, err[-3000:]
    return uri


@pytest.fixture(scope="module")
def ui_server(store_after_two_demos: str, tmp_path_factory: pytest.TempPathFactory):
    server = MlflowServer(tmp_path_factory.mktemp("ui-server"), backend_uri=store_after_two_demos)
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("browser-screenshots")


def _runs(uri: str, experiment: str) -> tuple[str, dict[str, list]]:
    """The experiment's id and its runs by role, the latest first; model runs of the latest
    parent in rank order."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(uri)
    exp = client.get_experiment_by_name(experiment)
    by_role: dict[str, list] = {}
    for r in client.search_runs([exp.experiment_id], order_by=["attributes.start_time DESC"]):
        by_role.setdefault(r.data.tags.get("extracteval.role"), []).append(r)
    latest = by_role["comparison"][0].info.run_id
    by_role["model"] = sorted((r for r in by_role["model"] if r.data.tags["mlflow.parentRunId"] == latest),
                              key=lambda r: int(r.data.tags["extracteval.rank"]))
    return exp.experiment_id, by_role


def _close_assistant(page) -> None:
    """MLflow 3 may open its assistant panel beside every page; close it when it is there."""
    button = page.locator('button[data-component-id="mlflow.assistant.chat_panel.close"]')
    if button.count():
        button.first.click()
        page.wait_for_timeout(300)


def _description_lines(page, first_words: str) -> list[str]:
    """The rendered lines of the description paragraph that starts with `first_words`."""
    para = page.locator("p", has_text=first_words).first
    para.wait_for(timeout=WAIT_MS)
    return [line.strip() for line in para.inner_text().splitlines() if line.strip()]


def test_the_first_screens_of_the_mlflow_ui(browser, ui_server: MlflowServer, store_after_two_demos: str, shots: Path) -> None:
    uri = store_after_two_demos
    exp_id, by_role = _runs(uri, EXPERIMENT)
    parent = by_role["comparison"][0]
    assert len(by_role["comparison"]) == 2 and len(by_role["leaderboard"]) == 2  # two demos
    board = by_role["leaderboard"][0]  # the second demo's
    models = by_role["model"]
    second = models[1]  # a model run that is not the winner
    spec = RANKING_SPECS["fields"]
    base = f"{ui_server.url}/#/experiments/{exp_id}"

    page = browser.new_page(viewport=DESKTOP)
    errors: list[str] = []
    page.on("console", lambda m: errors.append(f"{m.type}: {m.text} @ {m.location.get('url', '')}") if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))

    def visit(url: str, *texts: str) -> None:
        page.goto(url)
        for t in texts:
            page.get_by_text(t, exact=False).first.wait_for(timeout=WAIT_MS)
        _close_assistant(page)
        page.wait_for_timeout(500)  # let the charts settle before the picture

    # 1. the chart view with the parent collapsed: the parent and leaderboard runs chart only the
    #    verdict, so the whole view is a screen or two, not a wall of one-bar charts
    visit(f"{base}/runs?compareRunsMode=CHART", parent.info.run_name, HEADLINE_WINNER)
    page.wait_for_timeout(1000)
    page.screenshot(path=str(shots / "1-chart-view.png"))
    # the scrolling pane that holds the charts: its whole height
    height = page.evaluate("""() => Math.max(...Array.from(document.querySelectorAll('div'))
        .filter(e => e.innerText && e.innerText.includes('Main/best') && ['auto', 'scroll'].includes(getComputedStyle(e).overflowY))
        .map(e => e.scrollHeight))""")
    assert 0 < height < 2000, height
    sections = re.findall(r"^(\S+)\s*\((\d+)\)$", page.inner_text("body"), re.M)
    assert sections and sum(int(n) for _, n in sections) <= 10, sections  # every chart of the collapsed view: the verdict's few keys
    # what a parent and a leaderboard run log: at most ten metrics, all of them the verdict
    for run in (parent, board):
        assert len(run.data.metrics) <= 10 and set(run.data.metrics) <= set(HEADLINE_KEYS), sorted(run.data.metrics)

    # 2. the runs table, as the README says to set it up: Columns → the `Main/…` metrics, then the
    #    parent's row expanded to show its model runs
    page.set_viewport_size({"width": 2400, "height": 900})  # room for the metric columns beside MLflow's own
    visit(f"{base}/runs", parent.info.run_name, board.info.run_name)
    page.get_by_role("button", name="Columns", exact=True).click()
    page.get_by_placeholder("Search columns").fill("Main/")
    page.get_by_text(re.compile(r"^Metrics \(\d+\)$")).first.click()
    page.keyboard.press("Escape")
    page.locator(".ag-row", has_text=parent.info.run_name).first.locator('button[data-component-id*="runnamecellrenderer"]').first.click()
    for m in models:
        page.get_by_text(m.info.run_name, exact=True).first.wait_for(timeout=WAIT_MS)
    page.wait_for_timeout(500)
    page.screenshot(path=str(shots / "2-runs-table.png"))
    headers = page.evaluate("""() => Array.from(document.querySelectorAll('.ag-header-cell')).map(h => {
        const cut = Array.from(h.querySelectorAll('*')).some(e => e.scrollWidth > e.clientWidth + 6);
        return [h.innerText.trim(), cut];})""")
    shown = {text: cut for text, cut in headers if text.startswith("Main/")}
    for key in (HEADLINE_SCORE, HEADLINE_RANK, HEADLINE_WINNER):
        assert key in shown and not shown[key], (key, headers)  # the column is there and its name is not cut
    page.set_viewport_size(DESKTOP)

    # 3. the parent: line 1 the winner, score, interval, margin and its verdict; line 2 the ranks below
    top, runner = models[0], models[1]
    visit(f"{base}/runs/{parent.info.run_id}", "Winner:")
    page.get_by_text("Winner:").first.scroll_into_view_if_needed()
    page.screenshot(path=str(shots / "3-parent-run.png"))
    first, second_line, *_ = _description_lines(page, "Winner:")
    assert first.startswith(f"Winner: {top.data.tags['extracteval.model']} — {spec.label} "
                            f"{fmt_value(spec, top.data.metrics[spec.primary])} {fmt_interval(spec, *primary_interval(spec, top.data.metrics))}")
    assert f"ahead of rank 2 ({runner.data.tags['extracteval.model']})" in first and "paired 95% CI [" in first, first
    assert second_line.startswith(("Below the winner:", "Every adjacent pair")), second_line

    # 4. a model run: line 1 its rank, score and interval; line 2 its gap to the next rank
    visit(f"{base}/runs/{second.info.run_id}", f"rank 2 of {len(models)}")
    lines = _description_lines(page, f"rank 2 of {len(models)}")
    page.get_by_text(f"rank 2 of {len(models)}").first.scroll_into_view_if_needed()
    page.screenshot(path=str(shots / "4-model-run.png"))
    assert lines[0].startswith(f"{second.data.tags['extracteval.model']}: rank 2 of {len(models)} — {spec.label} "
                               f"{fmt_value(spec, second.data.metrics[spec.primary])}"), lines
    assert f"ahead of rank 3 ({models[2].data.tags['extracteval.model']})" in lines[1], lines
    assert {HEADLINE_RANK, HEADLINE_GAP} <= set(second.data.metrics)

    # 5. the second demo's leaderboard run: the verdict first, the first demo's runs superseded
    visit(f"{base}/runs/{board.info.run_id}", f"Leaderboard of {EXPERIMENT}")
    lines = _description_lines(page, f"Leaderboard of {EXPERIMENT}")
    page.get_by_text(f"Leaderboard of {EXPERIMENT}").first.scroll_into_view_if_needed()
    page.screenshot(path=str(shots / "5-leaderboard-run.png"))
    assert f"Winner: {top.data.tags['extracteval.model']}" in lines[0] and "ahead of rank 2" in lines[0], lines
    assert "superseded" in page.inner_text("body")

    # 6. the reports of requirements (spans) and tool calls in MLflow's artifact viewer: the
    #    verdict table first and whole inside the viewer's frame
    for name, experiment in (("6-report-requirements", "extracteval-demo-requirements"),
                             ("7-report-toolcalls", "extracteval-demo-slm-vs-llm-toolcalls")):
        eid, roles = _runs(uri, experiment)
        p = roles["comparison"][0]
        visit(f"{ui_server.url}/#/experiments/{eid}/runs/{p.info.run_id}/artifacts/extracteval/report.html", "report.html")
        frame = page.frame_locator("iframe").first
        frame.get_by_role("heading", name="Verdict").wait_for(timeout=WAIT_MS)
        page.wait_for_timeout(300)
        page.screenshot(path=str(shots / f"{name}.png"))
        table = frame.locator("h2:has-text('Verdict') ~ div table, h2:has-text('Verdict') ~ table").first
        rows = table.inner_text()
        for m in roles["model"]:
            assert m.data.tags["extracteval.model"] in rows
        assert "vs next rank" in rows and "95% CI" in rows
        box, viewer = table.bounding_box(), page.locator("iframe").first.bounding_box()
        assert box["x"] + box["width"] <= viewer["x"] + viewer["width"], (name, box, viewer)  # nothing cut at the right edge
        assert box["y"] < viewer["y"] + 900, (name, box)  # above the figures, on the first screen

    # 7. Compare of the model runs: the headline metrics come first in the metrics table
    ids = json.dumps([m.info.run_id for m in models])
    visit(f"{ui_server.url}/#/compare-runs?runs={ids}&experiments={json.dumps([exp_id])}", "Comparing", HEADLINE_SCORE)
    page.screenshot(path=str(shots / "8-compare.png"))
    metric_rows = re.findall(r"^(Main/\S+|overall/\S+)", page.inner_text("body"), re.M)
    assert metric_rows and metric_rows[0].startswith("Main/"), metric_rows[:5]

    # no console errors caused by what we logged (the report, figures and tables we serve)
    ours = [e for e in errors if "get-artifact" in e or "report.html" in e or "pageerror" in e]
    assert not ours, ours
    page.close()
