"""Reading a job trace: CSV with columns job_id,team,submit_s,duration_s,gpus (extra columns ignored)."""

from __future__ import annotations

import csv
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from rebalancer.errors import InvalidInput
from rebalancer.loading import MAX_NUMBER, read_text, short
from rebalancer.policy import TEAM_NAME, TEAM_NAME_MAX
from rebalancer_tools.simulator.csv_rows import TRACE_MAX_BYTES, csv_reader_rows

COLUMNS = ("job_id", "team", "submit_s", "duration_s", "gpus")


@dataclass(frozen=True, slots=True)
class TraceJob:
    job_id: str
    team: str
    submit_s: float
    duration_s: float
    gpus: int
    priority: int = 0


def _number(raw: str, column: str, where: str, *, integer: bool) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise InvalidInput(f"must be a number, got {short(raw)}", source=where, field=column, value=raw) from None
    if not 0 <= value <= MAX_NUMBER:
        raise InvalidInput(f"must be a finite number >= 0, got {short(raw)}", source=where, field=column,
                           value=raw)
    if integer and value != int(value):
        raise InvalidInput(f"must be a whole number, got {short(raw)}", source=where, field=column, value=raw)
    return value


def parse_rows(lines: Iterable[str], source: str) -> list[TraceJob]:
    """Jobs sorted by submit time (stable). A malformed row raises InvalidInput naming `source:line`."""
    reader = csv.reader(lines)
    rows = csv_reader_rows(reader, source)
    header = next(rows, None)
    if header is None:
        raise InvalidInput("empty trace: expected a header " + ",".join(COLUMNS), source=source)
    names = [h.strip() for h in header]
    missing = [c for c in COLUMNS if c not in names]
    if missing:
        raise InvalidInput(f"header lacks column(s) {', '.join(missing)} (got {','.join(names)})",
                           source=f"{source}:1", field="header", value=header)
    idx = {c: names.index(c) for c in COLUMNS}
    jobs: list[TraceJob] = []
    seen: set[str] = set()
    for row in rows:
        where = f"{source}:{reader.line_num}"
        if not row or all(not c.strip() for c in row):
            continue
        if len(row) < len(names):
            raise InvalidInput(f"expected {len(names)} columns, got {len(row)}", source=where, value=row)
        job_id = row[idx["job_id"]].strip()
        team = row[idx["team"]].strip()
        if not job_id:
            raise InvalidInput("is empty", source=where, field="job_id", value=job_id)
        if job_id in seen:
            raise InvalidInput(f"duplicate {short(job_id)}", source=where, field="job_id", value=job_id)
        seen.add(job_id)
        if len(team) > TEAM_NAME_MAX or not TEAM_NAME.fullmatch(team):
            raise InvalidInput(f"{short(team)} is not a valid HyperPod team name (lowercase letters, digits, '-')",
                               source=where, field="team", value=team)
        submit = _number(row[idx["submit_s"]].strip(), "submit_s", where, integer=False)
        duration = _number(row[idx["duration_s"]].strip(), "duration_s", where, integer=False)
        gpus = _number(row[idx["gpus"]].strip(), "gpus", where, integer=True)
        if gpus < 1:
            raise InvalidInput(f"must be at least 1, got {row[idx['gpus']]!r}", source=where, field="gpus",
                               value=row[idx["gpus"]])
        if duration <= 0:
            raise InvalidInput(f"must be above 0, got {row[idx['duration_s']]!r}", source=where,
                               field="duration_s", value=row[idx["duration_s"]])
        jobs.append(TraceJob(job_id, team, submit, duration, int(gpus)))
    if not jobs:
        raise InvalidInput("the trace has no jobs", source=source)
    jobs.sort(key=lambda j: j.submit_s)
    return jobs


def load_trace(path: str | Path) -> list[TraceJob]:
    p = Path(path)
    return parse_rows(read_text(p, what="trace", max_bytes=TRACE_MAX_BYTES).splitlines(), str(p))
