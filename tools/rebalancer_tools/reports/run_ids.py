"""Run ids a person can type: `history` prints each run's execution name without its cluster's prefix, and every
option that takes a run (`history --snapshot-of`, `rollback --run`) accepts that id, the full execution name, or
any unique prefix of either; a prefix that names two runs is refused with both."""

from __future__ import annotations

from collections.abc import Iterable

from rebalancer.errors import InvalidInput

SHOWN_CANDIDATES = 5  # how many of the runs an ambiguous prefix names are listed in the error


def short_run(execution: str, cluster: str) -> str:
    """The id `history` shows: the execution name without `<cluster>-` (the window start, `cli…` for a CLI run,
    and a follow-up's digest), which tells the runs of one cluster apart."""
    prefix = f"{cluster}-"
    short = execution.removeprefix(prefix)
    return short or execution


def resolve_run(given: str, executions: Iterable[str], cluster: str, *, option: str) -> str:
    """The one execution `given` names among the cluster's runs. An exact full or short id wins over prefixes;
    no match is returned as given (the caller's own "not stored" message then applies)."""
    text = given.strip()
    runs = list(dict.fromkeys(executions))
    for execution in runs:
        if text in (execution, short_run(execution, cluster)):
            return execution
    matches = [e for e in runs if e.startswith(text) or short_run(e, cluster).startswith(text)]
    if len(matches) == 1:
        return matches[0]
    if len(matches) > 1:
        listed = ", ".join(short_run(e, cluster) for e in matches[:SHOWN_CANDIDATES])
        more = f" and {len(matches) - SHOWN_CANDIDATES} more" if len(matches) > SHOWN_CANDIDATES else ""
        raise InvalidInput(f"{text!r} names {len(matches)} runs of {cluster} ({listed}{more}): type more of the id",
                           field=option, value=text)
    return text
