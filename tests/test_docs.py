"""The documentation site (docs/, MkDocs + Material) builds without a warning and says what the
code does: every option of `extracteval score <task>` is on the task's page, every
`evaluator_config` key on the evaluator's page. Its runnable blocks are run by tests/test_readme.py.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.system import python_package

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
TASK_PAGES = ("fields", "json", "spans", "labels", "entities", "structured", "toolcalls")


def _need_mkdocs() -> None:
    """MkDocs, its theme and the API-reference plugin (the `docs` extra, which `make test` installs)."""
    python_package("mkdocs", "docs")
    python_package("material", "docs")
    python_package("mkdocstrings", "docs")
    python_package("mkdocstrings_handlers.python", "docs")


def _section(text: str, heading: str) -> str:
    """The text under `## heading` up to the next heading of level 2 or higher."""
    m = re.search(rf"^## {re.escape(heading)}[^\n]*\n(.*?)(?=^#{{1,2}} |\Z)", text, re.M | re.S)
    assert m, f"no '## {heading}' section"
    return m.group(1)


def _first_column_options(table: str) -> set[str]:
    return {o for row in re.findall(r"^\| `([^`]+)` \|", table, re.M) for o in re.findall(r"--[a-z][a-z0-9-]*", row)}


def _score_parser(task: str) -> argparse.ArgumentParser:
    from extracteval.cli import build_parser

    def sub(p: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
        return next(a for a in p._actions if isinstance(a, argparse._SubParsersAction)).choices[name]

    return sub(sub(build_parser(), "score"), task)


@pytest.mark.parametrize("task", TASK_PAGES)
def test_each_task_page_lists_every_option_of_its_command(task: str) -> None:
    page = (DOCS / "tasks" / f"{task}.md").read_text(encoding="utf-8")
    listed = _first_column_options(_section(page, "Options"))
    options = {o for a in _score_parser(task)._actions for o in a.option_strings if o.startswith("--")} - {"--help"}
    assert listed == options, (f"docs/tasks/{task}.md, section Options: missing {sorted(options - listed)}, "
                               f"not options of `extracteval score {task}`: {sorted(listed - options)}")


def test_the_evaluator_page_lists_every_config_key(product_tasks_only: None) -> None:
    from extracteval.mlflow.adapters import COMMON_CONFIG_KEYS, TASKS, get_adapter

    page = (DOCS / "mlflow" / "evaluator.md").read_text(encoding="utf-8")
    config = _section(page, "Configuration")
    parts = re.split(r"^### `([a-z]+)`\s*$", config, flags=re.M)
    common, per_task = parts[0], dict(zip(parts[1::2], parts[2::2], strict=True))

    def keys(table: str) -> set[str]:
        return set(re.findall(r"^\| `([a-z_]+)` \|", table, re.M))

    assert keys(common) == set(COMMON_CONFIG_KEYS)
    assert set(per_task) == set(TASKS)
    for task, table in per_task.items():
        assert keys(table) == set(get_adapter(task).config_keys), f"docs/mlflow/evaluator.md, `{task}`"


def test_every_page_is_in_the_navigation() -> None:
    import yaml

    def pages(nav: object) -> list[str]:
        if isinstance(nav, str):
            return [nav]
        if isinstance(nav, list):
            return [p for item in nav for p in pages(item)]
        if isinstance(nav, dict):
            return [p for v in nav.values() for p in pages(v)]
        return []

    class Loader(yaml.SafeLoader):  # mkdocs.yml may carry !ENV / !!python tags; none are needed here
        pass

    config = yaml.load((REPO / "mkdocs.yml").read_text(encoding="utf-8"), Loader=Loader)  # noqa: S506 - SafeLoader subclass
    in_nav = set(pages(config["nav"]))
    on_disk = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")}
    assert on_disk == in_nav, f"not in mkdocs.yml's nav: {sorted(on_disk - in_nav)}; missing files: {sorted(in_nav - on_disk)}"
    assert {f"tasks/{t}.md" for t in TASK_PAGES} <= in_nav


def test_the_docs_extra_names_mkdocs() -> None:
    extras = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    docs = {re.split(r"[\[>=<]", req)[0]: req for req in extras["docs"]}
    assert set(docs) == {"mkdocs", "mkdocs-material", "mkdocstrings"}
    assert all(">=" in req for req in docs.values()) and "[python]" in docs["mkdocstrings"]


def test_make_docs_builds_the_site() -> None:
    make = shutil.which("make")
    if make is None:
        pytest.skip("make is not installed")
    done = subprocess.run([make, "-n", "docs"], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "mkdocs build --strict" in done.stdout


def test_the_hook_drops_test_markers_and_includes_examples(tmp_path: Path) -> None:
    _need_mkdocs()
    from types import SimpleNamespace

    from mkdocs.exceptions import PluginError

    spec = importlib.util.spec_from_file_location("docs_hook_markers", DOCS / "hooks" / "markers.py")
    assert spec and spec.loader
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    (tmp_path / "mkdocs.yml").write_text("site_name: x\n")
    (tmp_path / "ex").mkdir()
    (tmp_path / "ex" / "README.md").write_text("# ex\n\n```bash runnable\nextracteval demo --only ex\n```\n")
    config = SimpleNamespace(config_file_path=str(tmp_path / "mkdocs.yml"))
    page = SimpleNamespace(file=SimpleNamespace(src_path="examples/ex.md"))
    out = hook.on_page_markdown("```python illustrative\nx = 1\n```\n<!-- include: ex/README.md -->\n", page, config, None)
    assert out == "```python\nx = 1\n```\n# ex\n\n```bash\nextracteval demo --only ex\n```\n\n"
    assert hook.on_page_markdown("````bash setup\nmake\n````\n", page, config, None) == "````bash\nmake\n````\n"
    for bad in ("nosuch/README.md", "../outside.md"):
        with pytest.raises(PluginError, match="cannot include"):
            hook.on_page_markdown(f"<!-- include: {bad} -->\n", page, config, None)


def test_mkdocs_build_strict(tmp_path: Path) -> None:
    """Broken links and anchors, pages missing from the navigation, docstrings the API reference
    cannot render: each is a warning, and --strict turns warnings into a failed build."""
    _need_mkdocs()
    site = tmp_path / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-6000:]
    assert "WARNING" not in done.stderr, done.stderr[-6000:]
    spans = (site / "tasks" / "spans" / "index.html").read_text(encoding="utf-8")
    from tests.test_readme import readme_blocks

    fences = readme_blocks((DOCS / "tasks" / "spans.md").read_text(encoding="utf-8"))
    assert "conlleval" in spans and spans.count('<div class="highlight">') == len(fences)  # every marked fence is code
    assert "runnable" not in spans and "illustrative" not in spans  # the test markers are not shown
    api = (site / "api" / "index.html").read_text(encoding="utf-8")
    for name in ("score_fields", "ScoreResult", "extraction_scorer", "get_similarity"):
        assert name in api, f"the API reference lacks {name}"
    example = (site / "examples" / "contracts" / "index.html").read_text(encoding="utf-8")
    assert "strategies.yaml" in example and "include:" not in example
