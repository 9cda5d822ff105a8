"""Figures and report.html read well where they are looked at (the MLflow artifact viewer): whiskers
promised only where drawn, legends above the bars, colour bars that say what the colour is, twice
the pixels for high-density screens, tables that scroll inside the viewer, errors first."""

from __future__ import annotations

import struct

import pandas as pd
import pytest

pytest.importorskip("matplotlib")


def _drawn(fig):
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig).draw()
    return fig


def _table(ci: bool, models: int = 3, items: int = 4) -> pd.DataFrame:
    rows = []
    for k in range(models):
        for i in range(items):
            row = {"model": f"model-{k}", "tag": f"T{i}", "f1": 0.5 + 0.1 * i}
            if ci:
                row |= {"f1_ci_low": 0.4 + 0.1 * i, "f1_ci_high": 0.6 + 0.1 * i}
            rows.append(row)
    return pd.DataFrame(rows)


@pytest.mark.parametrize("ci", [True, False])
def test_item_bars_promise_whiskers_only_where_drawn_and_keep_the_legend_off_the_bars(ci: bool) -> None:
    from extracteval.report.figures import item_f1_bars

    fig = _drawn(item_f1_bars(_table(ci), item="tag", title="per-tag F1"))
    ax = fig.axes[0]
    assert ("whiskers" in ax.get_xlabel()) is ci
    legend = ax.get_legend()
    assert legend.get_window_extent().y0 >= ax.get_window_extent().y1 - 1  # above the plot, over no bar
    assert legend.get_window_extent().y1 <= ax.title.get_window_extent().y0 + 1  # and under the title


def test_figures_are_written_at_twice_their_size_and_shown_at_it() -> None:
    from extracteval.report.figures import item_f1_bars, png_bytes
    from extracteval.report.html import render_report

    fig = item_f1_bars(_table(True), item="tag")
    png = png_bytes(fig)
    width, height = struct.unpack(">II", png[16:24])
    w_in, h_in = fig.get_size_inches()
    assert width == round(2 * w_in * fig.dpi) and height == round(2 * h_in * fig.dpi)
    page = render_report(title="t", figures={"tag_f1.png": png})
    assert f'width="{width // 2}"' in page


def test_a_figure_of_hundreds_of_rows_stays_within_the_pixel_budget() -> None:
    from extracteval.report.figures import MAX_PIXELS, item_f1_bars, png_bytes

    png = png_bytes(item_f1_bars(_table(False, models=10, items=40), item="tag"))
    width, height = struct.unpack(">II", png[16:24])
    assert width * height <= MAX_PIXELS * 1.01


def test_the_leaderboard_heat_map_is_big_enough_to_read_with_a_colour_bar() -> None:
    from extracteval.report.leaderboard_views import item_heatmap

    items = [f"field_with_a_long_name_{i}" for i in range(7)]
    entries = [{"model": f"model-{r}", "run_id": f"r{r}"} for r in range(3)]
    doc = {"experiment": "e", "item_label": "fields", "groups": [{"ranking": entries, "field_winners": {i: {} for i in items}}]}
    scores = {f"r{r}": {it: 0.5 + 0.05 * r for it in items} for r in range(3)}
    fig = _drawn(item_heatmap(doc, scores))
    w, h = fig.get_size_inches()
    assert w * fig.dpi >= 450 and h * fig.dpi >= 250  # was 377 × 204 px: numbers of 5 px
    assert len(fig.axes) == 2  # the colour bar
    numbers = [t for t in fig.axes[0].texts if t.get_text().isdigit()]
    assert len(numbers) == 21 and min(t.get_fontsize() for t in numbers) >= 8
    # no label is clipped: every text lies inside the figure
    box = fig.bbox
    for t in fig.axes[0].texts:
        e = t.get_window_extent()
        assert e.x0 >= box.x0 - 1 and e.x1 <= box.x1 + 1 and e.y0 >= box.y0 - 1 and e.y1 <= box.y1 + 1, t.get_text()


def test_the_heat_map_is_in_percent_on_a_colour_blind_safe_scale_spread_over_the_scores() -> None:
    from extracteval.report.leaderboard_views import item_heatmap

    items = ["a", "b", "c"]
    entries = [{"model": f"m{r}", "run_id": f"r{r}"} for r in range(2)]
    doc = {"experiment": "e", "item_label": "fields", "groups": [{"ranking": entries, "field_winners": {i: {} for i in items}}]}
    scores = {"r0": {"a": 1.0, "b": 0.97, "c": 0.9}, "r1": {"a": 0.66, "b": 0.8, "c": 0.7}}
    fig = _drawn(item_heatmap(doc, scores))
    image = fig.axes[0].images[0]
    assert image.get_cmap().name == "viridis"  # perceptually uniform, readable with colour-vision deficiency and in grey
    assert image.get_clim() == (65.0, 100.0)  # from the lowest score (to a multiple of 5), not from 0: 66 and 100 differ
    assert fig.axes[1].get_ylabel() == "score (%)"
    assert sorted(t.get_text() for t in fig.axes[0].texts if t.get_text().isdigit()) == sorted(["100", "97", "90", "66", "80", "70"])
    # the number on each cell stays legible: light text on the dark end, dark text on the light end
    colour = {t.get_text(): t.get_color() for t in fig.axes[0].texts if t.get_text().isdigit()}
    assert (colour["66"], colour["100"]) == ("white", "black")


def test_report_tables_scroll_inside_the_viewer_and_list_errors_first() -> None:
    from extracteval.mlflow.adapters import Section
    from extracteval.report.html import render_report

    ex = pd.DataFrame([{"kind": "tp", "correct": True, "record_id": "a"}, {"kind": "fn", "correct": False, "record_id": "b"},
                       {"kind": "tn", "correct": True, "record_id": "c"}, {"kind": "fp", "correct": False, "record_id": "d"}])
    page = render_report(title="t", sections=[Section(title="Examples", table=ex, status_column="correct")])
    assert '<div class="scroll"><table>' in page and ".scroll{max-width:100%;overflow-x:auto}" in page
    body = page.split("<tbody>", 1)[1]
    order = [body.index(f"<td>{r}</td>") for r in "abcd"]
    assert order[1] < order[3] < order[0] < order[2]  # fn, fp (in their order), then tp, tn
    assert body.count('<tr class="bad">') == 2 and body.startswith('<tr class="bad">')


def test_rates_are_percentages_in_every_table() -> None:
    from extracteval.report.html import render_report
    from extracteval.mlflow.adapters import Section

    t = pd.DataFrame([{"model": "m", "call_accuracy": 0.95, "json_valid_rate": 0.5, "rqs_mean": 0.828, "count": 3.0}])
    page = render_report(title="t", sections=[Section(title="x", table=t)])
    assert ">95.0%<" in page and ">50.0%<" in page and ">0.828<" in page and ">3<" in page


def test_reports_from_the_evaluator_name_the_dataset_once() -> None:
    from types import SimpleNamespace

    from extracteval.mlflow.evaluator import _truth_source

    assert _truth_source(SimpleNamespace(name="dataset")) == "dataset"
    assert _truth_source(SimpleNamespace(name="contracts-v2")) == "dataset contracts-v2"
    assert _truth_source(SimpleNamespace()) == "dataset"


def test_a_tall_figure_of_ten_models_keeps_its_title_and_legend_inside() -> None:
    from extracteval.report.figures import item_f1_bars

    fig = _drawn(item_f1_bars(_table(True, models=10, items=40), item="tag", title="per-tag F1 (40 of 200: most errors)"))
    ax = fig.axes[0]
    top = fig.bbox.y1
    assert ax.title.get_window_extent().y1 <= top + 1
    assert ax.get_legend().get_window_extent().y1 <= ax.title.get_window_extent().y0 + 1
