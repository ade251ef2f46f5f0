"""The site's home page is the repository's README.md, so the first hour is written once: its links to `docs/X.md`
become links to the site's page X.md. docs/index.md holds only a note saying so."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

README = Path(__file__).resolve().parents[2] / "README.md"
DOCS_LINK = re.compile(r"\]\(docs/")


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    if page.file.src_uri != "index.md":
        return markdown
    return DOCS_LINK.sub("](", README.read_text(encoding="utf-8"))
