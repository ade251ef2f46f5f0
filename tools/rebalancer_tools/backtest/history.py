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
from typing import IO, Annotated, Any, Literal, TextIO, TypeVar

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from rebalancer.domain.quotas import ComputeQuota
from rebalancer.domain.sample import DemandSample, sample_of
from rebalancer.domain.snapshot import Snapshot
from rebalancer.errors import InvalidInput
from rebalancer.parsing.loading import MAX_LINES, json_lines, parse_line
from rebalancer.parsing.text import short
from rebalancer.parsing.validation import load_model

GZIP_MAGIC = b"\x1f\x8b"

HISTORY_FORMAT = 1


class Header(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    type: Literal["history"]
    format: Literal[1]
    cluster: str = Field(max_length=256)
    since: AwareDatetime | None = None
    exported_at: AwareDatetime | None = None


class Run(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    type: Literal["run"]
    execution: str = Field(max_length=256)
    at: AwareDatetime
    snapshot: Snapshot


class End(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    type: Literal["end"]
    runs: Annotated[int, Field(ge=0, le=MAX_LINES)]
    samples: Annotated[int, Field(ge=0, le=MAX_LINES)]


@dataclass(frozen=True, slots=True)
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


def parse_lines(lines: Iterable[str | tuple[int, str]], source: str) -> History:
    """Every line through the one loader's limits (strict JSON, finite numbers in range, depth) and the models
    (zoned times, pools of the catalog, counts bounded); the runs and samples of one cluster only. Raises
    InvalidInput naming the line of the first malformed record, or saying where a cut export ends."""
    header: Header | None = None
    end: End | None = None
    runs: list[Run] = []
    samples: list[DemandSample] = []
    arn: list[str] = []  # the cluster's ARN, from the first record that names it
    number = 0
    for item in lines:
        number, text = item if isinstance(item, tuple) else (number + 1, item)
        where = f"{source} line {number}"
        if not text.strip():
            continue
        if end is not None:
            raise InvalidInput("a record after the end record", source=where)
        if number > MAX_LINES:
            raise InvalidInput(f"more than {MAX_LINES:,} lines", source=source)
        try:
            doc = parse_line(text, where)
        except InvalidInput as e:
            raise InvalidInput(f"{str(e).removeprefix(where + ': ')}: the export may be truncated", source=where) \
                if "not valid JSON (" in str(e) else e from None
        kind = doc.get("type") if isinstance(doc, dict) else None
        if number == 1 and kind != "history":
            raise InvalidInput("the first line must be the history header (type: history); "
                               "write the file with `rebalancer history export`", source=where, field="type",
                               value=kind)
        if kind == "history":
            if header is not None:
                raise InvalidInput("a second history header", source=where)
            header = load_model(Header, doc, where)
        elif kind == "run":
            runs.append(_of_cluster(load_model(Run, doc, where), header, arn, where))
        elif kind == "sample":
            sample = load_model(DemandSample, {k: v for k, v in doc.items() if k != "type"}, where)
            samples.append(_of_cluster(sample, header, arn, where))
        elif kind == "end":
            end = load_model(End, doc, where)
        else:
            raise InvalidInput("expected history, run, sample or end", source=where, field="type", value=kind)
    return _whole(header, end, runs, samples, number, source)


def _whole(header: Header | None, end: End | None, runs: list[Run], samples: list[DemandSample], lines: int,
           source: str) -> History:
    """The history the file holds once it is read to its last line: refused if its header or end record is
    missing, if the end record counts other than what came before it, or if nothing is left to replay."""
    if header is None:
        raise InvalidInput("empty: no history header", source=source)
    if end is None:
        raise InvalidInput(f"truncated after line {lines}: no end record (export again)", source=source)
    if (end.runs, end.samples) != (len(runs), len(samples)):
        raise InvalidInput(f"the end record counts {end.runs} runs and {end.samples} samples, the file holds "
                           f"{len(runs)} and {len(samples)}", source=source)
    if not runs and not samples:
        raise InvalidInput(f"no runs and no samples of {header.cluster}: nothing to replay (export a longer "
                           "period with `rebalancer history export --since`)", source=source)
    return History(cluster=header.cluster, runs=tuple(runs), samples=tuple(samples))


R = TypeVar("R", Run, DemandSample)


def _of_cluster(record: R, header: Header | None, arns: list[str], where: str) -> R:
    """`record` when it is of the header's cluster: its name, and the ARN of the first record (`arns`)."""
    assert header is not None  # line 1 is the header
    name = record.snapshot.cluster.ClusterName if isinstance(record, Run) else record.cluster
    arn = record.snapshot.cluster.ClusterArn if isinstance(record, Run) else record.cluster_arn
    if name != header.cluster:
        raise InvalidInput(f"a {'run' if isinstance(record, Run) else 'sample'} of cluster {short(name)} in the "
                           f"history of {short(header.cluster)}", source=where, field="cluster", value=name)
    if not arns:
        arns.append(arn)
    known = arns[0]
    if arn != known:
        raise InvalidInput(f"cluster ARN {short(arn, 120)} differs from the history's {short(known, 120)}",
                           source=where, field="cluster_arn", value=arn)
    return record


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
        with gzip.open(p, "rb") if packed else p.open("rb") as f:
            return parse_lines(json_lines(f, str(p)), str(p))
    except OSError as e:  # gzip.BadGzipFile is an OSError without strerror
        raise InvalidInput(f"cannot read file: {e.strerror or e}", source=str(p)) from None
    except EOFError:
        raise InvalidInput("the gzip stream is cut short", source=str(p)) from None
    except UnicodeDecodeError as e:
        raise InvalidInput(f"not UTF-8 text ({e.reason})", source=str(p)) from None
