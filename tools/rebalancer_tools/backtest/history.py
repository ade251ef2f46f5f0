"""A cluster's recorded history as JSON lines: what `rebalancer history export` writes and `backtest` reads.

One object per line, oldest first:
  {"type": "history", "format": 1, "cluster": ..., "since": ..., "exported_at": ...}   first line
  {"type": "run", "execution": ..., "at": ..., "snapshot": {Snapshot}}                  a controller run's snapshot
  {"type": "sample", ...DemandSample}                                                   an observe step's sample
  {"type": "end", "runs": R, "samples": S}                                              last line
The end line tells a complete export from one cut at a line boundary.
"""

from __future__ import annotations

import gzip
import io
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import IO, Any, Literal, TextIO

from pydantic import BaseModel, ConfigDict, ValidationError

from rebalancer.domain.sample import DemandSample, sample_of
from rebalancer.domain.snapshot import ComputeQuota, Snapshot
from rebalancer.errors import InvalidInput
from rebalancer.parsing.validation import invalid_input

GZIP_MAGIC = b"\x1f\x8b"

HISTORY_FORMAT = 1


class Header(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    type: Literal["history"]
    format: Literal[1]
    cluster: str
    since: datetime | None = None
    exported_at: datetime | None = None


class Run(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    type: Literal["run"]
    execution: str
    at: datetime
    snapshot: Snapshot


class End(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    type: Literal["end"]
    runs: int
    samples: int


@dataclass(frozen=True)
class History:
    cluster: str
    runs: tuple[Run, ...]
    samples: tuple[DemandSample, ...]

    def quota_settings(self) -> tuple[ComputeQuota, ...]:
        """The earliest run's quotas: ids and settings (sharing, preemption, weight) the replay starts from."""
        return min(self.runs, key=lambda r: r.at).snapshot.quotas if self.runs else ()

    def states(self) -> list[DemandSample]:
        """Every recorded state, oldest first: the samples and the runs' snapshots as samples (a history from
        before observe recorded samples still replays, on the runs alone)."""
        merged = [*self.samples, *(sample_of(r.snapshot) for r in self.runs)]
        merged.sort(key=lambda s: s.at)
        return merged


def _at(line: dict[str, Any]) -> str:
    return str(line.get("at", ""))


def export_lines(cluster: str, runs: Iterable[Run], samples: Iterable[DemandSample], *,
                 since: datetime | None, exported_at: datetime) -> Iterator[str]:
    """The export, line by line (each one JSON object)."""
    header = Header(type="history", format=HISTORY_FORMAT, cluster=cluster, since=since, exported_at=exported_at)
    body = [r.model_dump(mode="json", exclude_none=True) for r in runs]
    n_runs = len(body)
    body += [{"type": "sample", **s.model_dump(mode="json")} for s in samples]
    body.sort(key=_at)
    yield header.model_dump_json(exclude_none=True)
    for line in body:
        yield json.dumps(line, sort_keys=True, separators=(",", ":"))
    yield End(type="end", runs=n_runs, samples=len(body) - n_runs).model_dump_json()


def parse_lines(lines: Iterable[str], source: str) -> History:
    """Raises InvalidInput naming the line of the first malformed record, or saying where a cut export ends."""
    header: Header | None = None
    end: End | None = None
    runs: list[Run] = []
    samples: list[DemandSample] = []
    number = 0
    for number, text in enumerate(lines, start=1):
        where = f"{source} line {number}"
        if not text.strip():
            continue
        if end is not None:
            raise InvalidInput("a record after the end record", source=where)
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as e:
            raise InvalidInput(f"not valid JSON ({e.msg} at column {e.colno}): the export may be truncated",
                               source=where) from None
        kind = doc.get("type") if isinstance(doc, dict) else None
        if number == 1 and kind != "history":
            raise InvalidInput("the first line must be the history header (type: history); "
                               "write the file with `rebalancer history export`", source=where, field="type",
                               value=kind)
        try:
            if kind == "history":
                if header is not None:
                    raise InvalidInput("a second history header", source=where)
                header = Header.model_validate(doc)
            elif kind == "run":
                runs.append(Run.model_validate(doc))
            elif kind == "sample":
                samples.append(DemandSample.model_validate({k: v for k, v in doc.items() if k != "type"}))
            elif kind == "end":
                end = End.model_validate(doc)
            else:
                raise InvalidInput("expected history, run, sample or end", source=where, field="type", value=kind)
        except ValidationError as e:
            raise invalid_input(e, where) from None
    if header is None:
        raise InvalidInput("empty: no history header", source=source)
    if end is None:
        raise InvalidInput(f"truncated after line {number}: no end record (export again)", source=source)
    if (end.runs, end.samples) != (len(runs), len(samples)):
        raise InvalidInput(f"the end record counts {end.runs} runs and {end.samples} samples, the file holds "
                           f"{len(runs)} and {len(samples)}", source=source)
    for s in samples:
        if s.cluster != header.cluster:
            raise InvalidInput(f"a sample of cluster {s.cluster!r} in the history of {header.cluster!r}",
                               source=source, field="cluster", value=s.cluster)
    return History(cluster=header.cluster, runs=tuple(runs), samples=tuple(samples))


def text_out(raw: IO[bytes], *, gzipped: bool) -> TextIO:
    """Text over a binary stream (a file being written atomically), gzip'd or not."""
    if gzipped:
        return io.TextIOWrapper(gzip.GzipFile(fileobj=raw, mode="wb"), encoding="utf-8")
    return io.TextIOWrapper(raw, encoding="utf-8", write_through=True)


def open_text_out(path: Path) -> TextIO:
    """A history file to write: gzip'd when its name ends in .gz (an export is mostly repeated keys: ~10× smaller)."""
    if path.suffix == ".gz":
        return gzip.open(path, "wt", encoding="utf-8")
    return path.open("w", encoding="utf-8")


def load_history(path: str | Path) -> History:
    """The one place a history file is read, plain or gzip'd (told by its first bytes, not its name)."""
    p = Path(path)
    try:
        with p.open("rb") as raw:
            packed = raw.read(2) == GZIP_MAGIC
        with (gzip.open(p, "rt", encoding="utf-8") if packed else p.open(encoding="utf-8")) as f:
            return parse_lines(f, str(p))
    except OSError as e:  # gzip.BadGzipFile is an OSError without strerror
        raise InvalidInput(f"cannot read file: {e.strerror or e}", source=str(p)) from None
    except EOFError:
        raise InvalidInput("the gzip stream is cut short", source=str(p)) from None
    except UnicodeDecodeError as e:
        raise InvalidInput(f"not UTF-8 text ({e.reason})", source=str(p)) from None
