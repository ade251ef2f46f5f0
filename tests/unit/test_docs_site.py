"""The README is the first hour and the docs site the rest: the README stays short, every page is in the site's
navigation once (adding a page is one nav line), the README's links reach the site's pages, what the pages name in
the repository exists, and no text a user reads names an issue. `make docs` (strict) checks links and anchors too;
these run offline in the unit suite."""

from __future__ import annotations

import importlib
import importlib.util
import re
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from support import docs

from rebalancer_tools.cli import cli
from rebalancer_tools.simulator import autoscale_bench, bench

ROOT = docs.ROOT
README_LINES = 250
ISSUE = re.compile(r"\bissues? ?#?\d+|#\d+\b", re.I)
# A path a page names: it starts with one of the repository's top-level folders (or is a module of a package).
TOP = tuple(sorted(p.name + "/" for p in ROOT.iterdir() if p.is_dir() and not p.name.startswith(".")))
PACKAGE_ROOTS = (ROOT, ROOT / "layers/core/rebalancer", ROOT / "tools/rebalancer_tools", ROOT / "layers/core",
                 ROOT / "tools")
NOT_A_PATH = re.compile(r"[<>*…{}|]")


def test_the_readme_is_the_first_hour() -> None:
    readme = docs.page("README.md")
    assert len(readme.splitlines()) <= README_LINES
    for heading in ("## Quick start: two commands", "## Install on a laptop", "## The first hour with your own cluster",
                    "## Documentation"):
        assert heading in readme
    assert "make demo" in readme
    assert "make test" in readme


def test_every_page_is_in_the_nav_once_and_every_nav_entry_is_a_page() -> None:
    nav = docs.nav_pages()
    on_disk = sorted(str(p.relative_to(docs.DOCS)) for p in docs.DOCS.rglob("*.md"))
    assert len(nav) == len(set(nav)), [p for p in nav if nav.count(p) > 1]
    assert sorted(nav) == on_disk
    assert nav[0] == "index.md"


def test_the_home_page_is_the_readme_with_its_links_pointed_at_the_site() -> None:
    spec = importlib.util.spec_from_file_location("readme_hook", docs.DOCS / "_hooks" / "readme.py")
    assert spec is not None
    assert spec.loader is not None
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)

    class Page:
        class file:  # noqa: N801 - the shape of mkdocs' Page.file
            src_uri = "index.md"

    class Other:
        class file:  # noqa: N801
            src_uri = "policy/budgets.md"

    home = hook.on_page_markdown("placeholder", Page())
    assert home.startswith("# hyperpod-rebalancer")
    assert "](docs/" not in home
    assert "](policy/reference.md)" in home
    assert hook.on_page_markdown("unchanged", Other()) == "unchanged"


def test_the_readmes_links_are_to_pages_of_the_site_or_to_the_web() -> None:
    links = re.findall(r"\]\(([^)\s]+)\)", docs.page("README.md"))
    assert links
    for link in links:
        if link.startswith("https://"):
            continue
        target = link.split("#")[0]
        assert target.startswith("docs/"), f"{link}: on the site only links into docs/ resolve"
        assert (ROOT / target).is_file(), link


def _exists(path: str) -> bool:
    return any((base / path.rstrip("/")).exists() for base in PACKAGE_ROOTS)


def _resolves(dotted: str) -> bool:
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj: object = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        try:
            for attr in parts[i:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return False
        return True
    return False


@pytest.mark.parametrize("page", docs.pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_what_a_page_names_in_the_repository_exists(page: Path) -> None:
    names = {n.rstrip(",.;:") for n in re.findall(r"`([^`\s]+)`", page.read_text(encoding="utf-8"))}
    paths = [n for n in names if "/" in n and not NOT_A_PATH.search(n)
             and (n.startswith(TOP) or (n.endswith(".py") and not n.startswith(("/", ".", "~"))))]
    modules = [n for n in names if re.fullmatch(r"(rebalancer|rebalancer_tools)(\.\w+)+", n)]
    assert [p for p in paths if not _exists(p)] == []
    assert [m for m in modules if not _resolves(m)] == []


def _commands(group: click.Group, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out = [path]
    for name, command in sorted(group.commands.items()):
        out += _commands(command, (*path, name)) if isinstance(command, click.Group) else [(*path, name)]
    return out


def test_no_text_a_user_reads_names_an_issue() -> None:
    for page in docs.pages():
        found = ISSUE.findall(page.read_text(encoding="utf-8"))
        assert found == [], (page.name, found)
    assert ISSUE.findall(docs.MKDOCS.read_text(encoding="utf-8")) == []
    assert isinstance(cli, click.Group)
    for command in _commands(cli):
        out = CliRunner().invoke(cli, [*command, "--help"], terminal_width=200).output
        assert ISSUE.findall(out) == [], command


@pytest.mark.parametrize("writer", [bench, autoscale_bench], ids=["bench-sim", "bench-autoscale"])
def test_the_benches_rewrite_only_their_block_of_the_simulation_page(writer: object, tmp_path: Path) -> None:
    begin, end = writer.BEGIN, writer.END  # type: ignore[attr-defined]
    page = docs.DOCS / "simulation.md"
    assert "simulation.md" in docs.nav_pages()
    copy = tmp_path / "simulation.md"
    copy.write_text(page.read_text(encoding="utf-8"), encoding="utf-8")
    writer.write_doc(copy, f"{begin}\nnew figures\n{end}")  # type: ignore[attr-defined]
    old, new = page.read_text(encoding="utf-8"), copy.read_text(encoding="utf-8")
    assert new.count(begin) == new.count(end) == 1
    assert new[:new.index(begin)] == old[:old.index(begin)]
    assert new[new.index(end):] == old[old.index(end):]
    assert new[new.index(begin):new.index(end)] == f"{begin}\nnew figures\n"
