"""The README and the documentation cannot rot: every command they show in a `bash runnable` or
`python runnable` block is executed here.

The pages read: README.md and every docs/**/*.md (the MkDocs site; tests/test_docs.py builds it).
Markers (the info string of a fenced block, after the language):
- `runnable`: run with `bash -e -o pipefail` (`python runnable`: with `python -`) in a fresh copy
  of the repository's user-facing files (experiments/, MLproject, …) with a fresh MLflow store
  (the default ./mlflow.db of that copy: made by the block on the README, made already on the
  other pages), `../shared/data` linked next to it when present; exit code 0 expected, and
  nothing left in the copy but that store (scratch files go to `mktemp -d`).
  A block shown on several pages (the README's tour is also the getting-started guide's) is run
  once.
- `setup`: `make` targets, checked with `make -n` (running them would reinstall the venv).
- `illustrative`: shapes with placeholder file names; not run, but every `extracteval …` line in
  them must name existing sub-commands and options (test_illustrative_commands_…).
Every bash/sh/shell/console/python block must carry one of them.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
DOCS = REPO / "docs"
# the pages whose blocks are read: the README, then the documentation site's pages
PAGES = [README, *sorted(p for p in DOCS.rglob("*.md") if "hooks" not in p.relative_to(DOCS).parts)]
MARKERS = {"runnable", "setup", "illustrative"}
CODE_LANGUAGES = {"bash", "sh", "shell", "console", "python"}
# what a block run needs from the checkout; the package itself comes from the environment
COPIED = ("experiments", "MLproject", "python_env.yaml", "conda.yaml", "pyproject.toml", "README.md", "Makefile")
# what a block may leave in the copy: the default MLflow store and its artifacts
STORE = {"mlflow.db", "mlartifacts", "mlruns"}


@dataclass(frozen=True)
class Block:
    line: int  # line of the opening fence (1-based)
    language: str
    markers: frozenset[str]
    text: str
    source: str = "README.md"  # the page, relative to the repository

    @property
    def where(self) -> str:
        return f"{self.source}:{self.line}"

    @property
    def label(self) -> str:
        first = next((ln.strip() for ln in self.text.splitlines() if ln.strip()), "")
        return f"{self.where} {first[:60]}"


def page_blocks(path: Path) -> list[Block]:
    """The fenced blocks of one page, each knowing its page."""
    source = path.relative_to(REPO).as_posix()
    return [Block(b.line, b.language, b.markers, b.text, source) for b in readme_blocks(path.read_text(encoding="utf-8"))]


def readme_blocks(text: str) -> list[Block]:
    """Fenced blocks (``` at the start of a line) with their info string split into language and markers."""
    blocks: list[Block] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = re.match(r"^```(\S*)(.*)$", lines[i])
        if m and m.group(1):
            start = i
            j = i + 1
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            words = m.group(2).split()
            blocks.append(Block(line=start + 1, language=m.group(1), markers=frozenset(words), text="\n".join(lines[start + 1 : j])))
            i = j + 1
        elif m:  # an unlabelled fence: skip to its end
            j = i + 1
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            blocks.append(Block(line=i + 1, language="", markers=frozenset(), text="\n".join(lines[i + 1 : j])))
            i = j + 1
        else:
            i += 1
    return blocks


BLOCKS = [b for page in PAGES for b in page_blocks(page)]
RUNNABLE_LANGUAGES = {"bash", "sh", "shell", "python"}


def _distinct(blocks: list[Block]) -> list[Block]:
    """The first of each group of identical blocks (same language and text): run once."""
    seen: dict[tuple[str, str], Block] = {}
    for b in blocks:
        seen.setdefault((b.language, b.text.strip()), b)
    return list(seen.values())


ALL_RUNNABLE = [b for b in BLOCKS if b.language in RUNNABLE_LANGUAGES and "runnable" in b.markers]
RUNNABLE = _distinct(ALL_RUNNABLE)
SETUP = [b for b in BLOCKS if "setup" in b.markers]


def _commands() -> set[str]:
    """Sub-commands this build of `extracteval` has."""
    import argparse

    from extracteval.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return set(sub.choices)


def _needed_commands(block: Block) -> set[str]:
    if block.language == "python":  # Python calls the package, not the command
        return set()
    needed = set(re.findall(r"\bextracteval[ \t]+([a-z][a-z-]*)", block.text))
    needed |= set(re.findall(r"\bmlflow run \S+(?:\s+\S+)*?\s+-e\s+([a-z]+)", block.text))
    return needed


def test_readme_has_runnable_blocks_for_the_tour_and_mlflow_run() -> None:
    readme = "\n".join(b.text for b in ALL_RUNNABLE if b.source == "README.md")
    for command in ("extracteval score fields", "extracteval evaluate fields", "extracteval leaderboard",
                    "extracteval compare "):
        assert command in readme, f"the README's tour has no runnable block showing `{command}`"
    text = "\n".join(b.text for b in RUNNABLE)
    for command in ("extracteval demo", "extracteval rescore", "extracteval compare-models", "import extracteval",
                    "mlflow run . -e demo --env-manager local", "mlflow run . -e evaluate", "mlflow.models.evaluate"):
        assert command in text, f"no runnable block of the README or docs/ shows `{command}`"


def test_blocks_are_read_from_the_readme_and_every_docs_page() -> None:
    sources = {b.source for b in ALL_RUNNABLE}
    assert "README.md" in sources and "docs/getting-started.md" in sources and "docs/tasks/spans.md" in sources
    # the README's tour is the guide's: shown twice, run once
    assert len(RUNNABLE) < len(ALL_RUNNABLE)
    assert any(b.language == "python" for b in RUNNABLE)


def test_every_code_block_is_marked_runnable_setup_or_illustrative() -> None:
    unmarked = [f"{b.where} ```{b.language}" for b in BLOCKS
                if (b.language in CODE_LANGUAGES or (b.language == "" and re.search(r"^\s*(extracteval|mlflow|make|python) ", b.text, re.M)))
                and not (b.markers & MARKERS)]
    assert not unmarked, ("mark each block `runnable` (tests/test_readme.py runs it), `setup` or `illustrative`: "
                          + ", ".join(unmarked))


def test_the_block_parser_sees_markers_and_bodies() -> None:
    blocks = readme_blocks("text\n```bash runnable\necho hi\n```\n```\nplain\n```\n```python illustrative\nx = 1\n```\n")
    assert [(b.line, b.language, set(b.markers), b.text) for b in blocks] == [
        (2, "bash", {"runnable"}, "echo hi"), (5, "", set(), "plain"), (8, "python", {"illustrative"}, "x = 1")]
    twice = [*blocks, Block(9, "bash", frozenset({"runnable"}), "echo hi\n", "docs/x.md")]
    assert [b.where for b in _distinct(twice)] == ["README.md:2", "README.md:5", "README.md:8"]


@pytest.mark.parametrize("block", SETUP, ids=lambda b: b.label)
def test_setup_commands_are_make_targets_that_exist(block: Block) -> None:
    make = shutil.which("make")
    if make is None:
        pytest.skip("make is not installed")
    targets = [ln.split()[1] for ln in block.text.splitlines() if ln.strip().startswith("make ")]
    assert targets == ["demo", "test"]
    for target in targets:  # -n: print the recipe without running it
        done = subprocess.run([make, "-n", target], cwd=REPO, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr


@pytest.fixture
def readme_workdir(tmp_path: Path) -> Path:
    """A copy of the user-facing files, as a fresh clone would have them, with ../shared/data linked."""
    work = tmp_path / "repo"
    work.mkdir()
    for name in COPIED:
        src = REPO / name
        if src.is_dir():
            shutil.copytree(src, work / name, ignore=shutil.ignore_patterns("__pycache__"))
        elif src.exists():
            shutil.copy(src, work / name)
    from tests.conftest import SHARED_DATA

    if SHARED_DATA.is_dir():
        (tmp_path / "shared").mkdir()
        (tmp_path / "shared" / "data").symlink_to(SHARED_DATA.resolve())
    return work


@pytest.mark.slow
@pytest.mark.parametrize("block", RUNNABLE, ids=lambda b: b.label)
def test_runnable_readme_block(block: Block, readme_workdir: Path, migrated_store) -> None:  # noqa: ANN001 - tests/conftest.py's fixture
    missing = _needed_commands(block) - _commands()
    if missing:
        pytest.skip(f"needs `extracteval {', '.join(sorted(missing))}`, which this build does not have yet")
    if "../shared/data" in block.text and not (readme_workdir.parent / "shared" / "data").is_dir():
        pytest.skip("needs ../shared/data (reference data), absent here; set EXTRACTEVAL_SHARED_DATA")
    bin_dir = str(Path(sys.executable).parent)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}  # the default store of the copy
    env["PATH"] = bin_dir + os.pathsep + env.get("PATH", "")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO / "src"), env.get("PYTHONPATH", "")) if p)
    env["MLFLOW_HTTP_REQUEST_MAX_RETRIES"] = "0"
    if shutil.which("extracteval", path=env["PATH"]) is None:
        pytest.skip("the extracteval command is not installed next to this Python (pip install -e .)")
    # The README's blocks start as a fresh clone does, without a store: their first command makes
    # MLflow's default store (every schema migration, in that process). Every other page's block
    # finds that store already made, empty (the tables MLflow's migrations make, copied from the
    # session's template): about 1 s less per block.
    template = migrated_store()
    if block.source != "README.md" and template is not None:
        shutil.copy(template, readme_workdir / "mlflow.db")
    before = set(os.listdir(readme_workdir))
    runs_before = _runs(readme_workdir / "mlflow.db")
    if block.language == "python":
        argv, stdin = [sys.executable, "-"], block.text
    else:
        argv, stdin = ["bash", "-e", "-o", "pipefail", "-c", block.text], None
    done = subprocess.run(argv, cwd=readme_workdir, env=env, input=stdin,
                          capture_output=True, text=True, timeout=400)
    assert done.returncode == 0, (f"{block.label} failed with exit code {done.returncode}\n$ "
                                  + shlex.quote(block.text) + "\n--- stdout\n" + done.stdout[-4000:] + "\n--- stderr\n" + done.stderr[-4000:])
    assert "Traceback" not in done.stderr
    assert "Creating initial MLflow database tables" not in done.stderr  # MLflow's schema-making log is not the user's business
    # nothing escaped the copy: the default store is the copy's own, and the runs went there
    if any(w in block.text for w in ("extracteval evaluate", "extracteval demo", "mlflow run", "mlflow.models.evaluate")):
        assert _runs(readme_workdir / "mlflow.db") > runs_before, f"{block.label} logged no run to the copy's default store"
    left = set(os.listdir(readme_workdir)) - before - STORE
    assert not left, f"{block.label} left {sorted(left)} in the repository root; write scratch files under $(mktemp -d)"


def _runs(db: Path) -> int:
    import sqlite3

    if not db.is_file():
        return 0
    with sqlite3.connect(db) as con:
        return con.execute("SELECT count(*) FROM runs").fetchone()[0]


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_internal_links_point_at_headings_and_files() -> None:
    """The README's links (GitHub renders it): anchors of its own headings, files of the repository.
    The documentation's links are checked by `mkdocs build --strict` (tests/test_docs.py)."""
    text = README.read_text(encoding="utf-8")
    outside_code = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)
    anchors = {_slug(h) for h in re.findall(r"^#{1,6} (.+)$", outside_code, re.M)}
    links = set(re.findall(r"\]\(#([^)]+)\)", outside_code))
    assert not links - anchors, f"links to missing headings: {sorted(links - anchors)}"
    files = re.findall(r"\]\(((?:experiments|docs)/[^)#]+|[A-Z]+\.md)(?:#[^)]*)?\)", outside_code)
    assert any(f.startswith("docs/tasks/") for f in files), "the README links each task to its page"
    for target in files:
        assert (REPO / target).exists(), target


# ---- illustrative synopses cannot rot either ---------------------------------------------------

SHELL_LANGUAGES = {"bash", "sh", "shell", "console"}
PROGRAM = {"extracteval", "$MAIN"}  # `$MAIN`: the Spark block runs extracteval's __main__ under spark-submit


def synopsis_errors(block: Block, parser) -> tuple[list[str], list[str]]:  # noqa: ANN001 - argparse.ArgumentParser
    """(the sub-commands the block's `extracteval …` lines use, what is wrong with them): every
    sub-command must exist and every `--option` must be one of that sub-command's options.
    Synopsis brackets (`[--json]`) and alternatives (`exact|normalized`) are read as plain text."""
    import argparse

    def subparsers(p: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
        act = next((a for a in p._actions if isinstance(a, argparse._SubParsersAction)), None)
        return {} if act is None else dict(act.choices)

    used, errors = [], []
    for line in block.text.replace("\\\n", " ").splitlines():
        try:
            tokens = shlex.split(line, comments=True)
        except ValueError as e:
            errors.append(f"{block.where}: cannot read {line.strip()[:60]!r} ({e})")
            continue
        starts = [i for i, t in enumerate(tokens) if t in PROGRAM]
        if not starts:
            continue
        argv = [t.strip("[]") for t in tokens[starts[0] + 1 :]]
        p, path = parser, []
        while (choices := subparsers(p)) and argv:
            word = argv.pop(0)
            if word not in choices:
                errors.append(f"{block.where}: `extracteval {' '.join(path + [word])}`: no such sub-command ({', '.join(sorted(choices))})")
                p = None
                break
            p = choices[word]
            path.append(word)
        if p is None:
            continue
        used.append(" ".join(path))
        for t in argv:
            if t.startswith("--"):
                name = t.split("=", 1)[0]
                if name not in p._option_string_actions:
                    errors.append(f"{block.where}: `extracteval {' '.join(path)}` has no option {name}")
    return used, errors


ILLUSTRATIVE = [b for b in BLOCKS if "illustrative" in b.markers and b.language in SHELL_LANGUAGES]


def test_illustrative_commands_use_existing_subcommands_and_options() -> None:
    from extracteval.cli import build_parser

    parser = build_parser()
    used, errors = set(), []
    for block in ILLUSTRATIVE:
        u, e = synopsis_errors(block, parser)
        used |= set(u)
        errors += e
    assert not errors, "\n".join(errors)
    # the synopses the pages show in place of a runnable command are all read
    assert {"score labels", "score entities", "score structured", "score toolcalls", "score spans", "score fields",
            "evaluate fields", "leaderboard", "compare", "rescore"} <= used, sorted(used)


def test_the_synopsis_check_catches_a_wrong_option_and_sub_command() -> None:
    from extracteval.cli import build_parser

    block = readme_blocks("```bash illustrative\nextracteval compare --baseline RUN [--no-such-option] \\\n"
                          "    [--json]\nextracteval score nonsense --truth FILE\n```\n")[0]
    used, errors = synopsis_errors(block, build_parser())
    assert used == ["compare"]
    assert len(errors) == 2 and "has no option --no-such-option" in errors[0] and "`extracteval score nonsense`" in errors[1]
