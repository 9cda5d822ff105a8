"""One suite, one way to install it: `make test` installs every Python package the suite uses, and
CI (`.ci/run`) adds only system packages before calling it — so a newcomer who types `make test`
runs exactly CI's suite, and a green CI cannot hide a README command that fails."""

from __future__ import annotations

import ast
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest

from tests.system import SYSTEM_PACKAGES, WHOLE_SUITE

REPO = Path(__file__).resolve().parents[1]
CI_RUN = REPO / ".ci" / "run"

# a command that installs Python packages, however it is spelled
PYTHON_INSTALLERS = re.compile(
    r"(^|[\s;&|(/\"'`])(pip[0-9.]*|uv|uvx|poetry|pipx|pipenv|conda|mamba|micromamba|easy_install|virtualenv|pdm|hatch)(\s|$)"
    r"|-m\s+(pip|venv|ensurepip|uv)\b|setup\.py|\.venv/|site-packages|requirements[^\s]*\.txt|PYTHONPATH|PIP_")
# .ci/run's own installer of a Debian package: `apt_install PACKAGE WHAT`
APT_INSTALL = re.compile(r"(?:^|[\s;&|])apt_install\s+(\S+)")
SYSTEM_DEBIAN = {p.debian for p in SYSTEM_PACKAGES}


def _commands(script: str) -> list[str]:
    """The script's lines without comments and blank lines, continuation lines joined."""
    joined = re.sub(r"\\\n", " ", script)
    lines = []
    for line in joined.splitlines():
        stripped = line.split(" #", 1)[0].strip() if not line.lstrip().startswith("#") else ""
        if stripped:
            lines.append(stripped)
    return lines


def _ci_violations(script: str) -> list[str]:
    """What in a CI script goes beyond system packages and `make test` (empty when nothing)."""
    found = []
    commands = _commands(script)
    for line in commands:
        if PYTHON_INSTALLERS.search(line):
            found.append(f"installs or runs Python packages itself: {line!r}")
        if re.search(r"(^|[\s;&|(])python[0-9.]*(\s|$)", line):
            found.append(f"runs Python outside `make test`: {line!r}")
        for target in re.findall(r"(?:^|[\s;&|(])make((?:\s+[^\s;&|)]+)*)", line):
            words = [w for w in shlex.split(target) if not w.startswith("-")]
            if words != ["test"]:
                found.append(f"runs a make target other than `test`: {line!r}")
        named = [w for packages in re.findall(r"apt(?:-get)?\s+install\s+([^;&|]*)", line) for w in packages.split()]
        named += APT_INSTALL.findall(line)
        for package in (w.strip("\"'") for w in named):
            if not package.startswith("-") and "$" not in package and package not in SYSTEM_DEBIAN:
                found.append(f"installs a Debian package the suite does not name as a system requirement: {package!r}")
    if not commands or commands[-1] != "make test":
        found.append("does not end by calling `make test`")
    return found


def test_ci_installs_only_system_packages_then_runs_make_test() -> None:
    script = CI_RUN.read_text(encoding="utf-8")
    assert _ci_violations(script) == []
    # the system packages it installs are the ones the suite's skips name
    installs = {m for line in _commands(script) for m in APT_INSTALL.findall(line)}
    assert installs == SYSTEM_DEBIAN, installs


@pytest.mark.parametrize("line", [
    "pip install -e '.[spark]'",
    ".venv/bin/python -m pip install --quiet -e '.[test,spark,docs,browser]'",
    "python3 -m pip install pyspark",
    "uv pip install pyspark",
    "make .venv/.installed",
    "make test && pip3 install x",
    "apt-get install -y python3-pyspark",
    "conda install pyspark",
    "make demo",
    "PIP_EXTRA_INDEX_URL=x make test",
    "sh -c \"pip install x\"",
    "apt-get install -y \"python3-pyspark\"",
    "apt_install python3-pip \"pip\"",
    "uvx pyspark",
])
def test_the_ci_guard_catches_a_python_install(line: str) -> None:
    # the guard itself can fail: each of these, added to CI's script, is reported
    assert _ci_violations(f"#!/usr/bin/env bash\nset -e\n{line}\nmake test\n"), line


def test_the_ci_guard_accepts_system_packages_and_make_test() -> None:
    script = ("#!/usr/bin/env bash\n# pip install is only a comment here\napt_install postgresql \"x\"\n"
              "apt-get install -y --no-install-recommends \"$package\"\nmake test\n")
    assert _ci_violations(script) == []


def test_make_test_installs_the_dev_extra_and_runs_the_whole_suite() -> None:
    make = shutil.which("make")
    if make is None:
        pytest.skip("make is not installed (Debian's `make`)")
    done = subprocess.run([make, "-n", "-B", "test"], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert re.search(r"pip install .*-e '\.\[dev\]'", done.stdout), done.stdout
    assert re.search(r"EXTRACTEVAL_WHOLE_SUITE=1 \S*python -m pytest", done.stdout), done.stdout
    extras = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    assert extras["dev"] == ["extracteval[test,spark,browser,docs,lint]"]


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _installed_closure() -> set[str]:
    """The distributions `pip install -e '.[dev]'` brings in, read from pyproject.toml (the project
    itself) and from the installed packages' metadata (everything they require, with extras)."""
    from packaging.requirements import Requirement

    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = project["optional-dependencies"]

    def own(names: set[str]) -> list[str]:
        reqs: list[str] = []
        for extra in names:
            for r in extras[extra]:
                req = Requirement(r)
                reqs += own(set(req.extras)) if _canonical(req.name) == "extracteval" else [r]
        return reqs

    todo = [Requirement(r) for r in [*project["dependencies"], *own({"dev"})]]
    seen: dict[str, set[str]] = {}
    while todo:
        req = todo.pop()
        name = _canonical(req.name)
        if name in seen and set(req.extras) <= seen[name]:
            continue
        seen.setdefault(name, set()).update(req.extras)
        try:
            requires = metadata.requires(req.name) or []
        except metadata.PackageNotFoundError:
            continue
        for r in map(Requirement, requires):
            active = [""] + sorted(seen[name])
            if r.marker is None or any(r.marker.evaluate({"extra": e}) for e in active):
                todo.append(r)
    return set(seen)


def _imported_by_the_suite() -> dict[str, str]:
    """Top-level module → a test file that imports it (inside functions too, and the modules
    named to `python_package` / `pytest.importorskip`), for every module outside the standard
    library and this project."""
    found: dict[str, str] = {}
    for path in sorted((REPO / "tests").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            elif (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
                  and isinstance(node.args[0].value, str)
                  and getattr(node.func, "attr", getattr(node.func, "id", None)) in {"python_package", "importorskip"}):
                names = [node.args[0].value]
            for name in names:
                top = name.split(".")[0]
                if top not in sys.stdlib_module_names and top not in {"extracteval", "tests", "__future__"}:
                    found.setdefault(top, str(path.relative_to(REPO)))
    return found


def test_make_test_installs_every_python_package_the_suite_imports() -> None:
    providers = metadata.packages_distributions()
    closure = _installed_closure()
    imported = _imported_by_the_suite()
    assert {"pyspark", "playwright", "mkdocs", "material", "mkdocstrings_handlers", "seqeval", "pytest"} <= set(imported)  # the optional ones are seen
    missing, uninstalled = [], []
    for module, where in sorted(imported.items()):
        dists = providers.get(module)
        if not dists:
            uninstalled.append(f"{module} (imported by {where})")
        elif not {_canonical(d) for d in dists} & closure:
            missing.append(f"{module} (imported by {where}; from {', '.join(dists)})")
    assert not missing, f"the suite imports packages `make test` does not install (add them to an extra in `dev`): {missing}"
    if uninstalled:
        message = f"not installed, so not checked: {uninstalled}: pip install -e '.[dev]' (`make test` installs it)"
        if WHOLE_SUITE:
            pytest.fail(message)
        pytest.skip(message)
