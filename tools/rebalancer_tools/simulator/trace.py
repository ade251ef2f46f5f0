"""Reading a job trace: CSV with columns job_id,team,submit_s,duration_s,gpus and optionally instance_type and
declared_s (extra columns ignored).

`team` may be any label: labels are mapped to valid HyperPod team names (`labels.team_names`). `instance_type` is
an instance type (`ml.trn1.32xlarge`), an accelerator kind (`trainium`, `nvidia-gpu`) or model (`H100`); blank or
absent: the cluster's first pool. `gpus` counts the job's accelerators of that kind (GPUs, Trainium chips).
`declared_s`: the run time the job declares (a Workload's `kueue.x-k8s.io/estimated-duration`), seconds; blank or
absent: none. The estimated starts read it; how long the job runs is `duration_s` whatever it declares.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

from rebalancer.catalog import specs as catalog
from rebalancer.errors import InvalidInput
from rebalancer.parsing.loading import MAX_NUMBER, read_text
from rebalancer.parsing.text import short
from rebalancer_tools.simulator.csv_rows import TRACE_MAX_BYTES, csv_reader_rows
from rebalancer_tools.simulator.labels import fold, is_team_name, team_names

COLUMNS = ("job_id", "team", "submit_s", "duration_s", "gpus")
# The simulated run's bounds: its length is the last submit plus that job's duration, and each controller interval,
# failure and repair within it is an event; beyond these a run does not end in useful time.
MAX_SUBMIT_S = 10 * 365 * 86400.0  # ten years of trace
MAX_DURATION_S = 365 * 86400.0  # a job of a year
HORIZON_S = MAX_SUBMIT_S + MAX_DURATION_S  # the latest instant of a run: no event (a node's repair) lies beyond it
MAX_TEAMS = 1000  # team labels of one trace
MAX_GPUS = 100_000  # of one job
TYPE_COLUMN = "instance_type"
DECLARED_COLUMN = "declared_s"


@dataclass(frozen=True, slots=True)
class TraceJob:
    job_id: str
    team: str
    submit_s: float
    duration_s: float
    gpus: int
    priority: int = 0
    instance_type: str = ""  # as the trace gives it ('' = the cluster's first pool); run.py resolves it to a pool
    # the run time the job declares (a Workload's estimated-duration annotation), which the estimated starts read;
    # None: it declares none. Never read as how long it runs: that is `duration_s`.
    declared_s: float | None = None


@dataclass(frozen=True, slots=True)
class Trace:
    jobs: list[TraceJob]
    labels: dict[str, str] = field(default_factory=dict)  # the trace's team label → the team name it runs as


def accelerator_names() -> dict[str, str]:
    """Lowercased accelerator kinds and models of the catalog → how they are spelled."""
    out: dict[str, str] = {}
    for t in catalog.known_types():
        s = catalog.spec(t)
        for name in (s.accelerator_kind.value if s.accelerator_kind else None, s.accelerator_model):
            if name:
                out.setdefault(name.lower(), name)  # a kind before a model of the same spelling
    return out


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


def _team_label(team: str, where: str, checked: set[str]) -> None:
    if team in checked:
        return
    if not team:
        raise InvalidInput("is empty", source=where, field="team", value=team)
    if not is_team_name(team) and not fold(team):
        raise InvalidInput(f"{short(team)} has no letter or digit to make a HyperPod team name from", source=where,
                           field="team", value=team)
    checked.add(team)


def _instance_type(raw: str, where: str, kinds: dict[str, str]) -> str:
    if not raw or (raw in catalog.known_types() and catalog.spec(raw).accelerators):
        return raw
    if raw.lower() in kinds:
        return kinds[raw.lower()]
    raise InvalidInput(f"{short(raw)} is neither an accelerated HyperPod instance type nor an accelerator kind or "
                       f"model (e.g. ml.p5.48xlarge, trainium, H100)", source=where, field=TYPE_COLUMN, value=raw)


def _amounts(row: list[str], idx: dict[str, int], where: str) -> tuple[float, float, float]:
    """A row's submit time, duration and accelerators, each a number within its bounds."""
    submit = _number(row[idx["submit_s"]].strip(), "submit_s", where, integer=False)
    duration = _number(row[idx["duration_s"]].strip(), "duration_s", where, integer=False)
    gpus = _number(row[idx["gpus"]].strip(), "gpus", where, integer=True)
    if not 1 <= gpus <= MAX_GPUS:
        raise InvalidInput(f"must be from 1 to {MAX_GPUS:,}, got {short(row[idx['gpus']])}", source=where,
                           field="gpus", value=row[idx["gpus"]])
    if submit > MAX_SUBMIT_S:
        raise InvalidInput(f"at most {MAX_SUBMIT_S:.0f} s (ten years) after the trace's start, got "
                           f"{short(row[idx['submit_s']])}", source=where, field="submit_s",
                           value=row[idx["submit_s"]])
    if duration > MAX_DURATION_S:
        raise InvalidInput(f"at most {MAX_DURATION_S:.0f} s (a year), got {short(row[idx['duration_s']])}",
                           source=where, field="duration_s", value=row[idx["duration_s"]])
    if duration <= 0:
        raise InvalidInput(f"must be above 0, got {row[idx['duration_s']]!r}", source=where,
                           field="duration_s", value=row[idx["duration_s"]])
    return submit, duration, gpus


def _declared(text: str, where: str) -> float | None:
    if not text:
        return None
    declared = _number(text, DECLARED_COLUMN, where, integer=False)
    if not 0 < declared <= MAX_DURATION_S:
        raise InvalidInput(f"must be above 0 and at most {MAX_DURATION_S:.0f} s (a year), or blank, got "
                           f"{short(text)}", source=where, field=DECLARED_COLUMN, value=text)
    return declared


def parse_trace(lines: Iterable[str], source: str) -> Trace:
    """Jobs sorted by submit time (stable), their teams renamed to valid team names. A malformed row raises
    InvalidInput naming `source:line` and the column."""
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
    type_at = names.index(TYPE_COLUMN) if TYPE_COLUMN in names else None
    declared_at = names.index(DECLARED_COLUMN) if DECLARED_COLUMN in names else None
    kinds = accelerator_names() if type_at is not None else {}
    jobs: list[TraceJob] = []
    seen: set[str] = set()
    checked: set[str] = set()
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
        _team_label(team, where, checked)
        if len(checked) > MAX_TEAMS:
            raise InvalidInput(f"more than {MAX_TEAMS:,} teams in the trace", source=where, field="team",
                               value=team)
        submit, duration, gpus = _amounts(row, idx, where)
        itype = _instance_type(row[type_at].strip(), where, kinds) if type_at is not None else ""
        declared = _declared(row[declared_at].strip(), where) if declared_at is not None else None
        jobs.append(TraceJob(job_id, team, submit, duration, int(gpus), 0, itype, declared))
    if not jobs:
        raise InvalidInput("the trace has no jobs", source=source)
    mapping = team_names(checked)
    if any(label != name for label, name in mapping.items()):
        jobs = [replace(j, team=mapping[j.team]) for j in jobs]
    jobs.sort(key=lambda j: j.submit_s)
    return Trace(jobs, mapping)


def parse_rows(lines: Iterable[str], source: str) -> list[TraceJob]:
    return parse_trace(lines, source).jobs


def read_trace(path: str | Path) -> Trace:
    p = Path(path)
    return parse_trace(read_text(p, what="trace", max_bytes=TRACE_MAX_BYTES).splitlines(), str(p))


def load_trace(path: str | Path) -> list[TraceJob]:
    return read_trace(path).jobs
