"""MkDocs hook: what the pages say for the tests, removed for the reader.

- A fenced block's info string carries a marker for tests/test_readme.py (`bash runnable`,
  `bash setup`, `python illustrative`); Markdown would not see such a fence as code, so the
  marker is dropped and the block highlighted as its language.
- `<!-- include: experiments/NAME/README.md -->` on a line of its own is replaced by that file of
  the repository (the example pages show the examples' own READMEs, which
  tests/test_experiments.py runs); a missing file or one outside the repository stops the build.
"""

from __future__ import annotations

import re
from pathlib import Path

from mkdocs.exceptions import PluginError

FENCE = re.compile(r"^(\s*`{3,})([\w+-]+)(?:[ \t]+(?:runnable|setup|illustrative))+[ \t]*$", re.M)
INCLUDE = re.compile(r"^<!-- include: (\S+) -->[ \t]*$", re.M)


def on_page_markdown(markdown: str, page, config, files) -> str:  # noqa: ANN001 - MkDocs' hook signature
    root = Path(config.config_file_path).resolve().parent

    def include(m: re.Match[str]) -> str:
        path = (root / m.group(1)).resolve()
        if root not in path.parents or not path.is_file():
            raise PluginError(f"{page.file.src_path}: cannot include {m.group(1)}: no such file in the repository")
        return path.read_text(encoding="utf-8")

    markdown = INCLUDE.sub(include, markdown)
    return FENCE.sub(lambda m: m.group(1) + m.group(2), markdown)
