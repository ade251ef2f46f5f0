"""What a user reads, for the tests that check what it says: the README (the first hour, and the docs site's home
page) and every page of the docs site under docs/ (mkdocs.yml's nav lists them)."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
MKDOCS = ROOT / "mkdocs.yml"
# docs/index.md is a placeholder: the site's home page is the README (docs/_hooks/readme.py).
PLACEHOLDER = DOCS / "index.md"


def pages() -> list[Path]:
    """Every Markdown page of the site, the README included (as the home page), placeholder excluded."""
    return [README, *(p for p in sorted(DOCS.rglob("*.md")) if p != PLACEHOLDER)]


def page(name: str) -> str:
    """One page by its path under docs/ (`policy/budgets.md`), or `README.md`."""
    return (README if name == "README.md" else DOCS / name).read_text(encoding="utf-8")


def text() -> str:
    """All of it, one page after the other."""
    return "\n".join(p.read_text(encoding="utf-8") for p in pages())


def flat(s: str) -> str:
    """Line breaks and runs of spaces as one space, for phrases the text wraps."""
    return " ".join(s.split())


def yaml_blocks() -> list[str]:
    """Every ```yaml block of every page."""
    return [block for p in pages() for block in re.findall(r"```yaml\n(.*?)```", p.read_text(encoding="utf-8"), re.S)]


def policies() -> list[str]:
    """The YAML blocks that are policies (they have teams); a block of several documents is none."""
    return [b for b in yaml_blocks()
            if len(docs := list(yaml.safe_load_all(b))) == 1 and isinstance(docs[0], dict) and "teams" in docs[0]]


def nav_pages() -> list[str]:
    """The pages mkdocs.yml's nav lists, in its order (paths under docs/)."""
    def walk(node: object) -> list[str]:
        if isinstance(node, str):
            return [node]
        if isinstance(node, list):
            return [p for item in node for p in walk(item)]
        if isinstance(node, dict):
            return [p for value in node.values() for p in walk(value)]
        return []
    return walk(yaml.safe_load(MKDOCS.read_text(encoding="utf-8"))["nav"])
