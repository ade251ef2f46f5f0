"""The built Lambda layer, looked at from this machine: `sam build` it, measure it, and import from it.

The layer's compiled wheels are for aarch64 and this machine may not be, so `importable` lays out a folder with the
layer's top-level entries where every entry that carries a compiled extension is replaced by the same package from
this interpreter's site-packages (same pins: dev.lock agrees with the layer's requirements). Everything pure Python,
including what the build pruned, is the build's own.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import sysconfig
import zipfile
from dataclasses import dataclass
from pathlib import Path

EXTENSIONS = (".so", ".pyd")


def _find_python(root: Path) -> str:
    return subprocess.run([str(root / "scripts" / "find-python"), "13"], capture_output=True, text=True,
                          check=True).stdout.strip()


def sam_env(root: Path) -> dict[str, str]:
    """sam's python3.13 workflow looks the interpreter up on PATH."""
    env = dict(os.environ, SAM_CLI_TELEMETRY="0")
    env["PATH"] = f"{Path(_find_python(root)).parent}{os.pathsep}{env['PATH']}"
    return env


def sam(root: Path) -> Path | None:
    path = root / ".venv-sam" / "bin" / "sam"
    return path if path.exists() else None


def sam_build(root: Path, out: Path, *, sam_bin: Path) -> subprocess.CompletedProcess[str]:
    """`sam build` of root's template into out (no Docker; about a minute)."""
    return subprocess.run([str(sam_bin), "build", "-t", str(root / "template.yaml"), "-b", str(out)],
                          capture_output=True, text=True, check=False, env=sam_env(root), cwd=root)


@dataclass(frozen=True, slots=True)
class Size:
    unzipped: int
    zipped: int
    by_entry: dict[str, int]


def _files(layer: Path) -> list[Path]:
    return [path for path in sorted(layer.rglob("*")) if path.is_file() and not path.is_symlink()]


def unzipped_bytes(layer: Path) -> int:
    """Bytes of the layer's files (layer: the built folder holding `python/`), what its 60 MB target counts: `size`'s
    `unzipped` without the zip `size` makes too (seconds of deflate for the whole layer)."""
    return sum(path.stat().st_size for path in _files(layer))


def size(layer: Path) -> Size:
    """Bytes of the layer's files (layer: the built folder holding `python/`), and of the zip `sam deploy` would
    upload (deflate at zlib's default level); by_entry: bytes per top-level package of python/."""
    by_entry: dict[str, int] = {}
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in _files(layer):
            relative = path.relative_to(layer)
            top = relative.parts[1] if len(relative.parts) > 1 else relative.parts[0]
            by_entry[top] = by_entry.get(top, 0) + path.stat().st_size
            zf.write(path, relative)
    return Size(sum(by_entry.values()), buffer.tell(), by_entry)


def _compiled(entry: Path) -> bool:
    if entry.is_file():
        return entry.name.endswith(EXTENSIONS)
    return any(p.name.endswith(EXTENSIONS) for p in entry.rglob("*"))


def site_packages() -> Path:
    return Path(sysconfig.get_paths()["purelib"])


def importable(layer_python: Path, dest: Path, *, site: Path | None = None) -> Path:
    """A folder to put on sys.path in place of the layer's `python/`: the layer's entries, the compiled ones from
    site (this machine's)."""
    site = site or site_packages()
    dest.mkdir(parents=True, exist_ok=True)
    for entry in sorted(layer_python.iterdir()):
        target = entry
        if _compiled(entry):
            target = site / entry.name
            if not target.exists():
                raise FileNotFoundError(f"{entry.name} is compiled for the layer's platform and absent from {site}")
        (dest / entry.name).symlink_to(target)
    return dest


def python_command(path: list[Path], code: str) -> list[str]:
    """A fresh interpreter that sees only the standard library and path (-S: no site-packages, no editable
    install)."""
    setup = f"import sys; sys.path[:0] = {[str(p) for p in path]!r}; "
    return [sys.executable, "-S", "-c", setup + code]
