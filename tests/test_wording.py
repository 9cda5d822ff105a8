"""User-facing text speaks of the product: it states the rules, never cites internal documents.

Users have neither the seed documents ("seed 000" … "seed 004"), nor SPEC.md and its sections,
nor the project's issue tracker. So README.md, the documentation site (docs/), CHANGELOG.md,
the examples' READMEs, the experiment
descriptions the demo prints, and every string literal in `src/extracteval` (`--help` texts,
command descriptions, messages, report text, docstrings — `help(...)` shows those to Python
users) must not contain such a citation. Comments are not string literals, so `ast` leaves them
out: a comment may still explain provenance to maintainers. No docstring is exempted.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "extracteval"

CITATION = re.compile(r"seed[ -]00\d|SPEC\s*§|SPEC\.md|\bissues?\s+#?\d+", re.IGNORECASE)


def _citations(text: str) -> list[str]:
    return [m.group(0) for m in CITATION.finditer(text)]


def _string_literals(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return [(node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)]


def test_pattern_catches_the_citations_it_is_for():
    for text in ("(seed 000)", "Seed 004's rule", "seed-004 decision", "SPEC §2", "see SPEC.md", "issue 12", "issue #40"):
        assert _citations(text), text
    for text in ("--seed 0", "seeded resamples", "the function's spec", "RANKING_SPECS", "issues"):
        assert not _citations(text), text


@pytest.mark.parametrize("path", [ROOT / "README.md", ROOT / "CHANGELOG.md", ROOT / "mkdocs.yml",
                                  *sorted((ROOT / "docs").rglob("*.md")), *sorted((ROOT / "docs").rglob("*.py")),
                                  *sorted((ROOT / "experiments").glob("**/README.md"))],
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_readmes_cite_no_internal_document(path):
    bad = [(n, line) for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if _citations(line)]
    assert not bad, bad


@pytest.mark.parametrize("path", sorted((ROOT / "experiments").glob("*/experiment.yaml")), ids=lambda p: p.parent.name)
def test_experiment_descriptions_cite_no_internal_document(path):
    description = (yaml.safe_load(path.read_text(encoding="utf-8")) or {}).get("description") or ""
    assert not _citations(description), description


def test_source_strings_cite_no_internal_document():
    files = sorted(SRC.rglob("*.py"))
    assert files
    bad = [f"{p.relative_to(ROOT)}:{line}: {_citations(s)}" for p in files for line, s in _string_literals(p) if _citations(s)]
    assert not bad, "\n".join(bad)
