"""The MLflow UI as a user opens it, in headless Chromium: `mlflow server` on the demo's store, then
the experiment page, a model run, the parent (comparison) run, the leaderboard run, the parent's
report artifact and Compare of the model runs. Each page must show what a user looks for first
(the description's rank and primary metric, the `Main/…` metrics, the report's ranking table)
and our artifacts must not log errors to the console. Screenshots of every page are saved under
pytest's base temporary folder (`--basetemp`), in `browser-screenshots*/`, so a failing run can be
looked at.

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
from extracteval.mlflow.descriptions import HEADLINE_SCORE, HEADLINE_WINNER, HEADLINE_WINS, fmt_value

from tests.system import CHROMIUM, python_package

from .conftest import MlflowServer

pytestmark = pytest.mark.slow

FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run", "--disable-component-update",
         "--disable-sync", "--disable-dev-shm-usage"]
EXPERIMENT = "extracteval-demo-contracts"
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
def ui_server(demo_store: str, tmp_path_factory: pytest.TempPathFactory):
    server = MlflowServer(tmp_path_factory.mktemp("ui-server"), backend_uri=demo_store)
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("browser-screenshots")


def _runs(uri: str) -> tuple[str, dict[str, list]]:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(uri)
    exp = client.get_experiment_by_name(EXPERIMENT)
    by_role: dict[str, list] = {}
    for r in client.search_runs([exp.experiment_id]):
        by_role.setdefault(r.data.tags.get("extracteval.role"), []).append(r)
    by_role["model"].sort(key=lambda r: int(r.data.tags["extracteval.rank"]))
    return exp.experiment_id, by_role


def test_the_first_screens_of_the_mlflow_ui(browser, ui_server: MlflowServer, demo_store: str, shots: Path) -> None:
    exp_id, by_role = _runs(demo_store)
    (parent,) = by_role["comparison"]
    (board,) = by_role["leaderboard"]
    models = by_role["model"]
    second = models[1]  # a model run that is not the winner: its rank says "2 of 3"
    spec = RANKING_SPECS["fields"]
    base = f"{ui_server.url}/#/experiments/{exp_id}"

    page = browser.new_page(viewport={"width": 1920, "height": 1080})
    errors: list[str] = []
    page.on("console", lambda m: errors.append(f"{m.type}: {m.text} @ {m.location.get('url', '')}") if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))
    seen: dict[str, str] = {}

    def visit(name: str, url: str, *texts: str) -> None:
        page.goto(url)
        for t in texts:
            page.get_by_text(t, exact=False).first.wait_for(timeout=WAIT_MS)
        page.wait_for_timeout(500)  # let the charts settle before the picture
        page.screenshot(path=str(shots / f"{name}.png"))
        seen[name] = page.inner_text("body")

    # 1. the experiment's runs table, as the README says to set it up: Columns → the `Main/…`
    #    metrics, then the parent's row expanded to show its model runs
    page.set_viewport_size({"width": 2400, "height": 1080})  # room for the metric columns beside MLflow's own
    page.goto(f"{base}/runs")
    page.get_by_text(parent.info.run_name).first.wait_for(timeout=WAIT_MS)
    page.get_by_text(board.info.run_name).first.wait_for(timeout=WAIT_MS)
    page.get_by_role("button", name="Columns").click()
    page.get_by_placeholder("Search columns").fill("Main/")
    page.get_by_text(re.compile(r"^Metrics \(\d+\)$")).first.click()
    page.keyboard.press("Escape")
    page.locator(".ag-row", has_text=parent.info.run_name).first.locator('button[data-component-id*="runnamecellrenderer"]').first.click()
    for m in models:
        page.get_by_text(m.info.run_name, exact=True).first.wait_for(timeout=WAIT_MS)
    page.wait_for_timeout(500)
    page.screenshot(path=str(shots / "1-experiment.png"))
    headers = page.evaluate("""() => Array.from(document.querySelectorAll('.ag-header-cell')).map(h => {
        const cut = Array.from(h.querySelectorAll('*')).some(e => e.scrollWidth > e.clientWidth + 6);
        return [h.innerText.trim(), cut];})""")
    shown = {text: cut for text, cut in headers if text.startswith("Main/")}
    for key in (HEADLINE_SCORE, HEADLINE_WINNER, HEADLINE_WINS):
        assert key in shown and not shown[key], (key, headers)  # the column is there and its name is not cut
    rows = page.locator(".ag-center-cols-container .ag-row").all_inner_texts()
    assert len(rows) >= 2 + len(models), rows  # leaderboard, parent and its model runs
    page.set_viewport_size({"width": 1920, "height": 1080})
    # 2. a model run: its description opens with its rank and its primary metric
    score = fmt_value(spec, second.data.metrics[spec.primary])
    visit("2-model-run", f"{base}/runs/{second.info.run_id}", f"rank 2 of {len(models)}", score)
    assert spec.label in seen["2-model-run"] and "Weakest fields" in seen["2-model-run"]
    assert HEADLINE_SCORE in seen["2-model-run"]
    # 3. the parent: the ranking table in the description, every model with its score
    visit("3-parent-run", f"{base}/runs/{parent.info.run_id}", f"Winner: {models[0].data.tags['extracteval.model']}")
    for m in models:
        assert m.data.tags["extracteval.model"] in seen["3-parent-run"]
    assert fmt_value(spec, models[0].data.metrics[spec.primary]) in seen["3-parent-run"]
    assert HEADLINE_WINNER in seen["3-parent-run"]
    # 4. the leaderboard run
    visit("4-leaderboard-run", f"{base}/runs/{board.info.run_id}", f"Leaderboard of {EXPERIMENT}")
    assert fmt_value(spec, models[0].data.metrics[spec.primary]) in seen["4-leaderboard-run"]
    # 5. the parent's report, rendered by the artifact viewer in a frame
    visit("5-report", f"{base}/runs/{parent.info.run_id}/artifacts/extracteval/report.html", "report.html")
    frame = page.frame_locator("iframe").first
    frame.get_by_role("heading", name="Ranking").wait_for(timeout=WAIT_MS)
    table = frame.locator("h2:has-text('Ranking') + table, h2:has-text('Ranking') ~ div table").first
    rows = table.inner_text()
    for m in models:
        assert m.data.tags["extracteval.model"] in rows
    page.screenshot(path=str(shots / "5-report.png"))
    # 6. Compare of the model runs: the headline metrics come first in the metrics table
    ids = json.dumps([m.info.run_id for m in models])
    visit("6-compare", f"{ui_server.url}/#/compare-runs?runs={ids}&experiments={json.dumps([exp_id])}", "Comparing", HEADLINE_SCORE)
    metric_rows = re.findall(r"^(Main/\S+|overall/\S+)", seen["6-compare"], re.M)
    assert metric_rows and metric_rows[0].startswith("Main/"), metric_rows[:5]
    # and the parallel-coordinates plot opens on the score (MLflow picks the first metric key)
    assert re.search(rf"Metrics:\s*{re.escape(HEADLINE_SCORE)}\s", seen["6-compare"]), seen["6-compare"][:1500]

    # no console errors caused by what we logged (the report, figures and tables we serve)
    ours = [e for e in errors if "get-artifact" in e or "report.html" in e or "pageerror" in e]
    assert not ours, ours
    page.close()
