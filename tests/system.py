"""What the suite needs beyond this package, said one way by every test that needs it.

`make test` installs every Python package the suite imports (the `dev` extra) and sets
`EXTRACTEVAL_WHOLE_SUITE=1`: under it, a Python package that is missing fails the test instead of
skipping it, so the suite that passes is the whole suite. System packages (a Java runtime for
Spark, Chromium for the browser test, PostgreSQL for the server test) are not pip's to install: a
test that needs one skips, naming the Debian package and the command that installs it (`.ci/run`
runs that command before `make test`).
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Callable

import pytest

from extracteval.spark import java_executable

WHOLE_SUITE = os.environ.get("EXTRACTEVAL_WHOLE_SUITE") == "1"


def python_package(module: str, extra: str) -> ModuleType:
    """`module` imported; without it the test skips, saying which extra installs it — or, under
    `make test` (which installs every extra), fails."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as e:
        message = f"the Python package behind `{module}` is not installed ({e}): pip install -e '.[{extra}]' (`make test` installs it)"
        if WHOLE_SUITE:
            pytest.fail(f"{message} — but `make test` should have installed it", pytrace=False)
        pytest.skip(message, allow_module_level=True)
        raise  # unreachable: pytest.skip raises


@dataclass(frozen=True)
class SystemPackage:
    """A program the suite cannot install with pip: what it is, the Debian package that has it,
    and how a test finds it (the path, or None)."""

    what: str
    debian: str
    find: Callable[[], str | None]

    @property
    def install(self) -> str:
        return f"sudo apt-get install -y {self.debian}"

    def skip_reason(self) -> str:
        return f"needs {self.what}, which is not installed: {self.install} (Debian's `{self.debian}`; .ci/run installs it)"

    def require(self) -> str:
        """The program's path; without it the test (or, at module level, the module) skips, naming
        the package and the command that installs it."""
        found = self.find()
        if found is None:
            pytest.skip(self.skip_reason(), allow_module_level=True)
        return found


CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser")


def _chromium() -> str | None:
    for c in (*CHROMIUM_CANDIDATES, shutil.which("chromium") or ""):
        if c and Path(c).is_file():
            return c
    return None


def _initdb() -> str | None:
    """initdb beside pg_ctl: $PATH first, then Debian's versioned folders (newest first)."""
    import re

    found = shutil.which("initdb")
    if found and shutil.which("pg_ctl"):
        return str(Path(found).resolve())
    versioned = sorted(Path("/usr/lib/postgresql").glob("*/bin"),
                       key=lambda p: [int(x) for x in re.findall(r"\d+", p.parent.name)] or [0], reverse=True)
    for d in versioned:
        if (d / "initdb").is_file() and (d / "pg_ctl").is_file():
            return str(d / "initdb")
    return None


JAVA = SystemPackage("a Java 17+ runtime (Spark runs on it; $JAVA_HOME/bin/java when JAVA_HOME is set)", "default-jre-headless", java_executable)
CHROMIUM = SystemPackage("Chromium (the browser test drives it; no browser is ever downloaded)", "chromium", _chromium)
POSTGRESQL = SystemPackage("PostgreSQL (initdb and pg_ctl, for the tracking-server test)", "postgresql", _initdb)
SYSTEM_PACKAGES = (JAVA, CHROMIUM, POSTGRESQL)


def require_spark() -> ModuleType:
    """pyspark, for a test that starts Spark: it and a Java runtime, or the skip (or failure)
    that names what to install."""
    module = python_package("pyspark", "spark")
    JAVA.require()
    return module
