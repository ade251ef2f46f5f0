"""What a reservation request or a stored reservation can put in front of `rebalancer reserve` / `reservations`,
through click against the table in moto: one line naming the option, nothing stored, never a traceback.

- `--snapshot` of another cluster is refused (capacity is checked on the cluster reserved on);
- dates are bounded (366 days ahead; the ends of the calendar); any --until is one line or a reservation;
- stored text (rich markup like `[/bold]`, escape sequences, newlines) is data wherever it is printed, and an
  unknown id is echoed escaped;
- windows that come back: checked over every window, listed with the next one, one window cancelled."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import boto3
import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st
from moto import mock_aws
from support.clock import T0, ticking
from support.clusters import snapshot
from support.props import properties
from support.template import create_table

from rebalancer.adapters.dynamodb.store import Store
from rebalancer.domain.reservation import Reservation
from rebalancer_tools.cli import cli, reservations_cmd

P5 = "ml.p5.48xlarge"
POLICY = """
teams:
  research: {cap: {ml.p5.48xlarge: 48}}
  inference: {guarantee: {ml.p5.48xlarge: 16}}
  nightly: {}
approval: {moved_accelerators: 64}
"""
ESC = "\x1b"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Store, Path]]:
    """One table for the module (examples use their own cluster names), the policy and snapshots on disk."""
    with pytest.MonkeyPatch.context() as env:
        for name, value in (("AWS_ACCESS_KEY_ID", "testing"), ("AWS_SECRET_ACCESS_KEY", "testing"),
                            ("AWS_DEFAULT_REGION", "us-east-1")):
            env.setenv(name, value)
        with mock_aws():
            create_table(boto3.client("dynamodb", region_name="us-east-1"))
            store = Store("t", resource=boto3.resource("dynamodb", region_name="us-east-1"), now=ticking())
            env.setattr(reservations_cmd, "open_store", lambda *_: store)
            here = tmp_path_factory.mktemp("reservations")
            (here / "policy.yaml").write_text(POLICY)
            other = snapshot({P5: 64}).model_dump(mode="json")
            other["cluster"]["ClusterName"] = "elsewhere"
            (here / "other.json").write_text(json.dumps(other))
            yield store, here


def run(*args: str) -> tuple[int, str]:
    got = CliRunner().invoke(cli, list(args), env={"AWS_DEFAULT_REGION": "us-east-1"})
    return got.exit_code, got.output


def reserve(here: Path, n: int, *more: str, cluster: str = "test", until: str = "2026-12-04T18:00Z",
            snap: str | None = None, team: str = "research") -> tuple[int, str]:
    """`snap`: a snapshot file in `here`; by default 8 p5 nodes (64 accelerators) of `cluster`."""
    if snap is None:
        snap = f"snap-{cluster}.json"
        doc = snapshot({P5: 8}).model_dump(mode="json")
        doc["cluster"]["ClusterName"] = cluster
        (here / snap).write_text(json.dumps(doc))
    return run("reserve", "--cluster", cluster, "--table", "t", "--team", team, "--pool", P5,
               "--accelerators", str(n), "--until", until, "--reason", "launch", "--policy",
               str(here / "policy.yaml"), "--snapshot", str(here / snap), *more)


def one_line(code: int, out: str) -> str:
    assert code == 2, out
    assert out.startswith("error: ")
    assert out.count("\n") == 1, out
    assert "Traceback" not in out
    return out


def test_a_snapshot_of_another_cluster_is_refused_and_stores_nothing(world: tuple[Store, Path]) -> None:
    store, here = world
    out = one_line(*reserve(here, 8, cluster="snapcheck", snap="other.json"))
    assert out == "error: --snapshot: the snapshot is of cluster 'elsewhere', not snapcheck: capacity is checked on " \
                  "the cluster reserved on\n"
    assert store.reservations.of_cluster("snapcheck") == []


@pytest.mark.parametrize(("until", "says"), [
    ("9999-12-31T23:59:59Z", "--until: --until 9999-12-31T23:59:59+00:00 is more than 366 days ahead"),
    ("2028-01-01T00:00Z", "is more than 366 days ahead"),
    ("0001-01-01T00:00+01:00", "--until: '0001-01-01T00:00+01:00' is outside the calendar"),
    ("0001-01-01T00:00Z", "--until: --until 0001-01-01T00:00:00+00:00 is not after --from"),
    ("2026-13-01T00:00Z", "not an ISO-8601 time"),
])
def test_dates_beyond_what_the_table_and_the_planner_hold_are_one_line(world: tuple[Store, Path], until: str,
                                                                       says: str) -> None:
    store, here = world
    assert says in one_line(*reserve(here, 8, cluster="dates", until=until))
    assert store.reservations.of_cluster("dates") == []


@properties(40)
@given(until=st.one_of(st.datetimes(timezones=st.timezones()).map(lambda d: d.isoformat()),
                       st.text(max_size=40)))
def test_any_until_is_a_reservation_or_one_line(world: tuple[Store, Path], until: str) -> None:
    _store, here = world
    code, out = reserve(here, 1, cluster="fuzz", until=until)
    assert code in (0, 2), out
    if code == 2:
        one_line(code, out)


def _stored(store: Store, cluster: str, reason: str, rid: str = "r-text") -> Reservation:
    """A reservation as an older version, another writer or a hand edit might have left it (not through `reserve`,
    which cleans the reason)."""
    rec = Reservation.model_validate({
        "reservation_id": rid, "cluster": cluster, "team": "research", "pool": P5, "accelerators": 8,
        "start": T0 + timedelta(hours=1), "until": T0 + timedelta(hours=5), "reason": reason, "status": "approved",
        "requested_by": f"arn:aws:sts::1:assumed-role/x/{reason[:20]}", "requested_at": T0})
    assert store.reservations.put(rec)
    return rec


@pytest.mark.parametrize("reason", ["[/bold] for launch", "[link=https://x]click[/link] [red]", "a\nb\r\nc",
                                    f"{ESC}[31mred{ESC}[0m{ESC}]8;;https://evil{ESC}\\", "\u202eevil", "[bold"])
def test_stored_text_is_data_in_the_listing_the_json_and_the_decisions(world: tuple[Store, Path],
                                                                       reason: str) -> None:
    store, _here = world
    cluster = f"text{abs(hash(reason)) % 10**8}"
    _stored(store, cluster, reason)
    code, table = run("reservations", "--cluster", cluster, "--table", "t")
    assert code == 0, table
    assert ESC not in table
    assert "\u202e" not in table
    assert "r-text" in table
    code, listed = run("reservations", "--cluster", cluster, "--table", "t", "--format", "json")
    assert code == 0
    assert json.loads(listed)[0]["reason"] == reason  # the JSON keeps it exactly, escaped by JSON
    code, out = run("reservations", "cancel", "r-text", "--cluster", cluster, "--table", "t")
    assert code == 0, out
    assert ESC not in out
    assert "\u202e" not in out
    assert out.count("\n") == 1


@properties(30)
@given(reason=st.text(min_size=1, max_size=80))
def test_any_stored_reason_lists_without_acting_on_it(world: tuple[Store, Path], reason: str) -> None:
    store, _here = world
    cluster = "anytext"
    for r in store.reservations.of_cluster(cluster):
        store.table.table.delete_item(Key={"pk": f"RESERVATION#{cluster}", "sk": r.reservation_id})
    _stored(store, cluster, reason)
    code, table = run("reservations", "--cluster", cluster, "--table", "t")
    assert code == 0, table
    assert not any(ch in table for ch in (ESC, "\x07", "\x9b", "\u202e", "\u2066"))


@pytest.mark.parametrize("rid", [f"r-{ESC}[31mx", "r-1\nforged line", "r-1 ; rm", "x" * 5000, ""])
def test_an_id_that_is_no_reservation_id_is_echoed_escaped_in_one_line(world: tuple[Store, Path], rid: str) -> None:
    for command in ("approve", "cancel"):
        out = one_line(*run("reservations", command, rid, "--cluster", "test", "--table", "t"))
        assert out.startswith("error: reservation id: not a reservation id")
        assert ESC not in out
        assert len(out) < 700


def test_an_unknown_id_of_the_right_shape_is_one_line(world: tuple[Store, Path]) -> None:
    code, out = run("reservations", "cancel", "r-nope", "--cluster", "test", "--table", "t")
    assert (code, out) == (1, "error: no reservation r-nope on test\n")


# --- windows that come back ----------------------------------------------------------------------------------
def test_a_recurring_reservation_is_checked_over_every_window_listed_with_its_next_and_cancelled_by_day(
        world: tuple[Store, Path]) -> None:
    store, here = world
    code, out = reserve(here, 32, "--every", "Mon-Fri 18:00-08:00", "--tz", "Europe/Berlin", cluster="nights",
                        until="2027-01-31T00:00+01:00", team="nightly")
    assert code == 0, out
    assert "nightly 32 x ml.p5.48xlarge Mon-Fri 18:00-08:00 Europe/Berlin from 2026-11-30 13:00 until " \
           "2027-01-31 00:00 (launch): approved; next window Mon 30 Nov 18:00 → Tue 01 Dec 08:00 Europe/Berlin" in out
    assert "its quota is raised 30 minutes before each window opens" in out
    # One window of the same nights, weeks ahead, would hold 16 + 32 + 32 > 64: refused, naming when.
    out = one_line(*reserve(here, 32, "--from", "2027-01-12T20:00+01:00", cluster="nights",
                            until="2027-01-12T22:00+01:00"))
    assert "from 2027-01-12T18:30:00+00:00 reservations and guarantees on ml.p5.48xlarge would hold 80 of its 64" \
           in out
    # ... and the same window on a Saturday night fits.
    code, out = reserve(here, 32, "--from", "2027-01-16T20:00+01:00", "--lead", "0", cluster="nights",
                        until="2027-01-16T22:00+01:00")
    assert code == 0, out
    code, listed = run("reservations", "--cluster", "nights", "--table", "t", "--format", "json")
    series = next(r for r in json.loads(listed) if r["every"])
    assert series["next"] == {"start": "2026-11-30T17:00:00+00:00", "end": "2026-12-01T07:00:00+00:00"}
    rid = series["reservation_id"]
    code, out = run("reservations", "cancel", rid, "--occurrence", "2026-12-02", "--cluster", "nights", "--table", "t")
    assert code == 0, out
    assert "the window Wed 02 Dec 18:00 → Thu 03 Dec 08:00 Europe/Berlin" in out
    kept = store.reservations.get("nights", rid)
    assert kept is not None
    assert kept.skipped == ("2026-12-02T17:00:00+00:00",)
    assert kept.status == "approved"
    out = one_line(*run("reservations", "cancel", rid, "--occurrence", "2026-12-05", "--cluster", "nights",
                        "--table", "t"))
    assert "no window of reservation" in out
    assert "opens on Sat 2026-12-05" in out
    outcomes = [r["outcome"] for r in store.audit.records("nights") if r["kind"] == "reservation"]
    assert outcomes == ["requested:approved", "requested:approved", "cancelled-occurrence:approved"]


@pytest.mark.parametrize(("more", "says"), [
    (("--every", "Mon-Fri 18:00"), "--every: 'Mon-Fri 18:00': '' is not a time HH:MM"),
    (("--every", "Mon-Fry 18:00-08:00"), "'Fry' is not a day"),
    (("--every", "Mon 18:00-18:00"), "write 00:00-24:00 for whole days"),
    (("--every", "Sat 10:00-12:00", "--tz", "Mars/Olympus"), "--tz: 'Mars/Olympus' is not a time zone name"),
    (("--tz", "Europe/Berlin"), "--tz: names the time zone of --every's windows: give --every too"),
])
def test_a_recurrence_that_cannot_be_read_is_one_line(world: tuple[Store, Path], more: tuple[str, ...],
                                                      says: str) -> None:
    store, here = world
    assert says in one_line(*reserve(here, 8, *more, cluster="badrule"))
    assert store.reservations.of_cluster("badrule") == []




def test_a_lead_beyond_a_day_is_refused_by_the_option(world: tuple[Store, Path]) -> None:
    store, here = world
    code, out = reserve(here, 8, "--every", "Sat 10:00-12:00", "--lead", "5000", cluster="badlead")
    assert code == 2
    assert "Invalid value for '--lead': '5000' is out of range: must be 0 to 1,440" in out
    assert store.reservations.of_cluster("badlead") == []
