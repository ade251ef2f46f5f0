"""The click parameter types every command's options use, so a bad value is refused at parse time with one line
naming the option, the value and the bound, before any work is done:

- `Number(lo, hi)`: a finite decimal number (ASCII digits, no NaN, no inf, no hex) within [lo, hi];
- `Whole(lo, hi)`: an integer written in ASCII digits (`²` and `10**30` are refused) within [lo, hi];
- `InputFile()`: a file name to read (the loader says whether it can be read);
- `OutputFile()` / `OutputDir()`: a path to write, checked now (its folder exists and is a folder, the target is
  writable), so a command never fails after its work on a missing folder;
- `atomic_output(path)`: write through a temporary file beside the target and rename it into place, so a failed
  write leaves nothing behind (nor a half-written file).
"""

from __future__ import annotations

import math
import os
import re
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, TypeVar

import click

from rebalancer.parsing.go_duration import go_duration

_DECIMAL = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]{1,4})?")
_INTEGER = re.compile(r"[+-]?[0-9]{1,18}")
MAX_TEXT = 64  # characters of a refused value shown back


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= MAX_TEXT else f"{text[:MAX_TEXT - 1]}…"


class Number(click.ParamType[float, Any]):
    """A finite float in [lo, hi] (`lo_open`: lo itself refused)."""

    name = "number"

    def __init__(self, lo: float, hi: float, *, lo_open: bool = False) -> None:
        self.lo, self.hi, self.lo_open = lo, hi, lo_open

    def bound(self) -> str:
        return f"{'above' if self.lo_open else 'from'} {self.lo:g} {'up ' if self.lo_open else ''}to {self.hi:g}"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        if isinstance(value, bool):
            self.fail(f"{_shown(value)} is not a number", param, ctx)
        if isinstance(value, int | float):
            number = float(value)
        elif isinstance(value, str) and _DECIMAL.fullmatch(value.strip()):
            number = float(value.strip())
        else:
            self.fail(f"{_shown(value)} is not a decimal number (must be {self.bound()})", param, ctx)
        if not math.isfinite(number) or number > self.hi or number < self.lo or (self.lo_open and number == self.lo):
            self.fail(f"{_shown(value)} is out of range: must be {self.bound()}", param, ctx)
        return number

    def get_metavar(self, param: click.Parameter, ctx: click.Context | None = None) -> str:
        return f"[{self.lo:g}-{self.hi:g}]"


class Whole(click.ParamType[int, Any]):
    """An integer in [lo, hi], written in ASCII digits."""

    name = "integer"

    def __init__(self, lo: int, hi: int) -> None:
        self.lo, self.hi = lo, hi

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int) and not isinstance(value, bool):
            number = value
        elif isinstance(value, str) and _INTEGER.fullmatch(value.strip()):
            number = int(value.strip())
        else:
            self.fail(f"{_shown(value)} is not a whole number in ASCII digits (must be {self.lo:,} to "
                      f"{self.hi:,})", param, ctx)
        if not self.lo <= number <= self.hi:
            self.fail(f"{_shown(value)} is out of range: must be {self.lo:,} to {self.hi:,}", param, ctx)
        return number

    def get_metavar(self, param: click.Parameter, ctx: click.Context | None = None) -> str:
        return f"[{self.lo}-{self.hi}]"


def whole(text: str, lo: int, hi: int) -> int | None:
    """`text` as an integer in [lo, hi] when it is one in ASCII digits, else None (for values inside an option,
    like the NODES of `--pool TYPE=NODES`)."""
    text = text.strip()
    if not _INTEGER.fullmatch(text):
        return None
    number = int(text)
    return number if lo <= number <= hi else None


class StorageUrl(click.ParamType[str, Any]):
    """A database URL for optuna (`recommend --storage`): it parses, and its dialect and driver are installed. The
    password is never shown back."""

    name = "url"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        from rebalancer.errors import InvalidInput
        from rebalancer_tools.backtest.search import check_storage

        try:
            return check_storage(str(value))
        except InvalidInput as e:
            self.fail(str(e).removeprefix("--storage: "), param, ctx)


SEED = Whole(0, 2**32 - 1)  # what numpy's and optuna's generators take


def _writable_folder(folder: Path) -> str | None:
    """Why `folder` cannot hold a new file, or None."""
    if not folder.exists():
        return f"its folder {folder} does not exist"
    if not folder.is_dir():
        return f"{folder} is not a folder"
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"its folder {folder} is not writable"
    return None


class InputFile(click.ParamType[str, Any]):
    """A file to read: a name (not empty, no NUL byte, not a folder). Whether it exists and what it holds is the
    loader's to say, in its one line (`cannot read file: …`)."""

    name = "file"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        if not isinstance(value, str | os.PathLike) or not str(value).strip() or "\x00" in str(value):
            self.fail(f"{_shown(value)} is not a file name", param, ctx)
        if Path(value).is_dir():
            self.fail(f"{_shown(str(value))} is a folder, not a file", param, ctx)
        return str(value)


class OutputFile(click.ParamType[str, Any]):
    """A file to write: its folder exists and is writable; the target, if it exists, is a writable file."""

    name = "file"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        if not isinstance(value, str | os.PathLike) or not str(value).strip() or "\x00" in str(value):
            self.fail(f"{_shown(value)} is not a file name", param, ctx)
        path = Path(value)
        if path.is_dir():
            self.fail(f"{_shown(str(value))} is a folder, not a file", param, ctx)
        why = _writable_folder(path.absolute().parent)
        if why is None and path.exists() and not os.access(path, os.W_OK):
            why = "it is not writable"
        if why:
            self.fail(f"cannot write {_shown(str(value))}: {why}", param, ctx)
        return str(value)


class OutputDir(click.ParamType[str, Any]):
    """A folder to write into: an existing writable folder, or a new one whose parent folder exists."""

    name = "folder"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        if not isinstance(value, str | os.PathLike) or not str(value).strip() or "\x00" in str(value):
            self.fail(f"{_shown(value)} is not a folder name", param, ctx)
        path = Path(value)
        if path.exists() and not path.is_dir():
            self.fail(f"cannot write into {_shown(str(value))}: it is a file, not a folder", param, ctx)
        why = _writable_folder(path if path.exists() else path.absolute().parent)
        if why:
            self.fail(f"cannot write into {_shown(str(value))}: {why}", param, ctx)
        return str(value)


@contextmanager
def atomic_output(path: str | Path, *, binary: bool = False) -> Iterator[IO[Any]]:
    """A file object on a temporary file beside `path`, renamed onto `path` when the block ends without an
    error, removed otherwise. The file gets the permissions a plain open() would give it (mkstemp's are 0600)."""
    target = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.absolute().parent)
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)
        with os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", encoding="utf-8") as f:
            yield f
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_atomically(path: str | Path, content: str | bytes) -> None:
    with atomic_output(path, binary=isinstance(content, bytes)) as f:
        f.write(content)


# --- the AWS configuration a command runs with -------------------------------------------------------------------
FC = TypeVar("FC", bound=Callable[..., Any])
AWS_PROFILE_KEY = "aws_profile"  # where the root context keeps --profile, for the one-line credentials error


def _remember_profile(ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    root = ctx.find_root()
    if value and isinstance(root.obj, dict):
        root.obj[AWS_PROFILE_KEY] = value
    return value


def profile_option(name: str = "profile") -> Callable[[FC], FC]:
    """--profile; the command receives it as `name`. Kept on the root context too, so that a credentials error
    anywhere in the command names the profile (rebalancer_tools.cli.Rebalancer)."""
    return click.option("--profile", name, callback=_remember_profile, expose_value=True, help="AWS profile.")


class RunTime(click.ParamType[str, Any]):
    """A run time as the Workload's estimated-duration annotation takes it: a Go duration above 0 (`6h`, `1h30m`)."""

    name = "duration"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        try:
            go_duration(str(value))
        except ValueError:
            self.fail(f"{_shown(value)} is not a Go duration above 0 (such as 6h, 90m or 1h30m)", param, ctx)
        return str(value)
