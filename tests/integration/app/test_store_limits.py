"""What the store and the steps keep small: an audit record of a huge plan is stored compressed (DynamoDB refuses
items above 400 KB) and read back whole; a run's document too big for one item even compressed is stored in parts and
read back whole; the lists a state carries are summarised (Step Functions: 256 KB)."""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from moto import mock_aws
from support.item_size import ITEM_LIMIT, item_size
from support.template import create_table

from rebalancer.adapters.dynamodb.audit import AUDIT_INLINE_MAX
from rebalancer.adapters.dynamodb.store import Store
from rebalancer.adapters.dynamodb.table import PART_BYTES, pack
from rebalancer.app.workflow.state import MAX_STATE_LINES, summarised
from rebalancer.domain.outlook import DURATIONS_KEPT, Outcome, RunHistory, Seen, Told
from rebalancer.errors import PermanentError, RecordUnreadable
from rebalancer.forecast.durations import MIN_SAMPLES


@pytest.fixture
def store() -> Iterator[Store]:
    with mock_aws():
        create_table(boto3.client("dynamodb"))
        yield Store("t", now=lambda: datetime(2026, 11, 30, 12, tzinfo=UTC))


def test_a_huge_audit_record_is_stored_compressed_and_read_back_whole(store: Store) -> None:
    after = {f"team-{i:04d}": {f"ml.g5.{k}xlarge": float(i % 7) for k in range(15)} for i in range(1000)}
    store.audit.append("c1", "run-1", "plan", outcome="approve", after=after, detail={"note": "small"})
    item = boto3.resource("dynamodb").Table("t").scan()["Items"][0]
    assert "after" not in item
    assert len(item["after_gz"].value) < AUDIT_INLINE_MAX * 4  # ~0.8 MB of JSON, a few dozen KB stored
    assert item["detail"] == '{"note": "small"}'  # small fields stay readable in the console
    [record] = store.audit.records("c1")
    assert record["after"] == after
    assert record["detail"] == {"note": "small"}


def test_state_lists_are_summarised_with_a_count_of_the_rest() -> None:
    lines = [f"team-{i}: loses 100% of ml.g5.xlarge" for i in range(500)]
    short = summarised(lines)
    assert len(short) == MAX_STATE_LINES
    assert short[:-1] == lines[:MAX_STATE_LINES - 1]
    assert short[-1].startswith(f"… and {500 - MAX_STATE_LINES + 1} more")
    assert summarised(lines[:3]) == lines[:3]


def item_sizes() -> list[int]:
    return [item_size(i) for i in boto3.resource("dynamodb").Table("t").scan()["Items"]]


def incompressible(size: int, seed: int = 7) -> dict[str, Any]:
    """A document whose gzip'd form is about `size` bytes: random hex text does not compress below half."""
    rnd = random.Random(seed)
    return {"teams": [f"{rnd.getrandbits(128):032x}" for _ in range(size // 16)]}


def test_a_document_too_big_for_one_item_is_stored_in_parts_and_read_back_whole(store: Store) -> None:
    doc = incompressible(3 * PART_BYTES)
    store.artifacts.put("run-1", "SNAPSHOT", doc)
    sizes = item_sizes()
    assert len(sizes) >= 4  # the item and its parts
    assert max(sizes) < ITEM_LIMIT * 0.75
    assert store.artifacts.get("run-1", "SNAPSHOT") == doc


def test_a_small_document_stays_in_its_one_item(store: Store) -> None:
    store.artifacts.put("run-1", "PLAN", {"changes": []})
    assert len(item_sizes()) == 1
    assert store.artifacts.get("run-1", "PLAN") == {"changes": []}


def test_a_rewrite_with_fewer_parts_reads_only_its_own(store: Store) -> None:
    """A retried Collect rewrites its snapshot: the parts of the longer first write are not read with the second."""
    store.artifacts.put("run-1", "SNAPSHOT", incompressible(4 * PART_BYTES, seed=1))
    second = incompressible(2 * PART_BYTES, seed=2)
    store.artifacts.put("run-1", "SNAPSHOT", second)
    assert store.artifacts.get("run-1", "SNAPSHOT") == second


def test_a_document_missing_a_part_is_one_permanent_line(store: Store) -> None:
    store.artifacts.put("run-1", "SNAPSHOT", incompressible(2 * PART_BYTES))
    boto3.resource("dynamodb").Table("t").delete_item(Key={"pk": "PART#RUN#run-1#SNAPSHOT", "sk": "00001"})
    with pytest.raises(PermanentError, match=r"^stored document RUN#run-1/SNAPSHOT is incomplete: 2 of its 3 "
                                             r"parts read") as e:
        store.artifacts.get("run-1", "SNAPSHOT")
    assert "\n" not in str(e.value)


def test_a_part_of_another_write_is_not_taken_for_this_ones(store: Store) -> None:
    store.artifacts.put("run-1", "SNAPSHOT", incompressible(2 * PART_BYTES, seed=1))
    table = boto3.resource("dynamodb").Table("t")
    stale = table.get_item(Key={"pk": "PART#RUN#run-1#SNAPSHOT", "sk": "00000"})["Item"]
    store.artifacts.put("run-1", "SNAPSHOT", incompressible(2 * PART_BYTES, seed=2))
    table.put_item(Item=stale)  # a part of the first write where the second's should be
    with pytest.raises(PermanentError, match="not the parts it was written with"):
        store.artifacts.get("run-1", "SNAPSHOT")


def test_an_audit_record_of_a_plan_too_big_even_compressed_keeps_each_item_within_the_limit(store: Store) -> None:
    """A plan of 10,000 teams compresses to about 1 MB: its audit fields go in parts, and read back whole."""
    rnd = random.Random(3)
    detail = {"changes": [{"team": f"{rnd.getrandbits(64):016x}", "after": rnd.random()} for _ in range(40_000)]}
    store.audit.append("c1", "run-1", "plan", outcome="approve", after={"a": 1}, detail=detail)
    assert max(item_sizes()) < ITEM_LIMIT * 0.75
    [record] = store.audit.records("c1")
    assert record["detail"] == detail
    assert record["after"] == {"a": 1}
    [newest] = list(store.audit.newest("c1"))
    assert newest["detail"] == detail


def test_the_run_history_of_a_cluster_at_1000_teams_fits_one_item_keeping_each_teams_newest_runs(
        store: Store) -> None:
    """1,000 teams with 50 runs seen to finish each (and as many declared ratios), 10,000 workloads running, 1,000
    first estimates (each with its likely range) and 200 outcomes: about 440 KB gzip'd whole, above the 400 KB
    DynamoDB takes; the plan step must not fail on it. Kept smaller: each team's newest runs."""
    rnd = random.Random(3)
    now = datetime(2026, 11, 30, 12, 0, 3, 123456, tzinfo=UTC)
    teams = [f"team-{t:04d}" for t in range(1000)]
    history = RunHistory(
        finished={t: tuple(float(round(rnd.lognormvariate(9, 2))) for _ in range(DURATIONS_KEPT)) for t in teams},
        declared={t: tuple(float(f"{rnd.lognormvariate(0, 0.7):.3g}") for _ in range(DURATIONS_KEPT)) for t in teams},
        running={f"job-{rnd.getrandbits(48):012x}-{i}@ml.p5.48xlarge": Seen(
            team=teams[i % 1000], started=now - timedelta(seconds=rnd.randrange(10**6)), last_seen=now,
            declared_s=3600.0) for i in range(10_000)},
        told={f"wait-{rnd.getrandbits(48):012x}@ml.p5.48xlarge": Told(
            queued=now, start=now + timedelta(hours=2), earliest=now + timedelta(minutes=rnd.randrange(120)),
            latest=now + timedelta(minutes=rnd.randrange(120, 10**5))) for _ in range(1000)},
        outcomes=tuple(Outcome(waited_s=rnd.random() * 1e5, estimated_s=rnd.random() * 1e5,
                               in_range=rnd.random() < 0.8) for _ in range(200)),
        levels=(rnd.uniform(-1, 0.25), rnd.uniform(0.75, 2)))
    assert len(pack(history.model_dump(mode="json"))) > ITEM_LIMIT  # what would have failed the plan step
    store.durations.record("c1", history)
    assert max(item_sizes()) < ITEM_LIMIT * 0.75
    kept = store.durations.history("c1")
    assert kept.running == history.running
    assert (kept.told, kept.outcomes, kept.levels) == (history.told, history.outcomes, history.levels)
    for t in teams:  # each team's newest runs, the same number for every team, enough to draw from
        assert kept.finished[t] == history.finished[t][-len(kept.finished[t]):]
        assert kept.declared[t] == history.declared[t][-len(kept.declared[t]):]
    assert len({len(d) for d in kept.finished.values()}) == 1
    assert len(kept.finished[teams[0]]) >= MIN_SAMPLES


def flooded_history(teams: int, rnd: random.Random) -> RunHistory:
    """`teams` teams of 40 random characters (the longest name a policy takes), each with 50 runs seen to finish and
    50 declared ratios, one tenant flooding 10,000 running workloads and the 1,000 first estimates with
    253-character names, and 200 outcomes: random text gzip cannot bring below half."""
    now = datetime(2026, 11, 30, 12, tzinfo=UTC)

    def text(n: int) -> str:
        return rnd.randbytes(n // 2 + 1).hex()[:n]

    names = sorted({text(40) for _ in range(teams)})
    return RunHistory(
        finished={t: tuple(float(rnd.randrange(10**7)) for _ in range(DURATIONS_KEPT)) for t in names},
        declared={t: tuple(float(f"{rnd.random() * 10:.3g}") for _ in range(DURATIONS_KEPT)) for t in names},
        running={f"{names[0]}/w{text(252)}@ml.p5.48xlarge": Seen(team=names[0], started=now, last_seen=now,
                                                                  declared_s=float(rnd.randrange(1, 10**9)))
                 for _ in range(10_000)},
        told={f"{names[0]}/w{text(252)}@ml.p5.48xlarge": Told(
            queued=now, start=now, earliest=now - timedelta(microseconds=rnd.randrange(10**12)),
            latest=now + timedelta(microseconds=rnd.randrange(10**12))) for _ in range(1000)},
        outcomes=tuple(Outcome(waited_s=rnd.random() * 1e5, estimated_s=rnd.random() * 1e5,
                               in_range=rnd.random() < 0.8) for _ in range(200)),
        levels=(rnd.uniform(-1, 0.25), rnd.uniform(0.75, 2)))


@pytest.mark.slow
def test_the_run_history_at_10000_teams_with_a_flooding_tenant_is_written_within_an_item(store: Store) -> None:
    """Kept at one run per team, with every declaration, it is still above the 400 KB DynamoDB takes (which moto
    checks): it is cut on, declarations, the tenant's running workloads and first estimates included, and never
    written larger than an item."""
    history = flooded_history(10_000, random.Random(5))
    one_each = RunHistory(finished={t: d[-1:] for t, d in history.finished.items()},
                          declared={t: d[-1:] for t, d in history.declared.items()})
    assert len(pack(one_each.model_dump(mode="json"))) > ITEM_LIMIT  # what the cuts stopped at, refused
    store.durations.record("c1", history)
    assert max(item_sizes()) < ITEM_LIMIT * 0.75
    kept = store.durations.history("c1")
    assert kept.finished, "teams keep their newest runs as long as some fit"
    assert kept.finished.keys() <= history.finished.keys()
    assert all(d == history.finished[t][-len(d):] for t, d in kept.finished.items())
    assert kept.running.keys() <= history.running.keys()
    assert kept.told.keys() <= history.told.keys()
    assert kept.declared.keys() <= history.declared.keys()


def test_nodes_unavailable_at_once_on_a_cluster_of_10000_teams_are_kept_within_an_item(store: Store) -> None:
    """10,000 of the 222,500 nodes of a cluster of 10,000 teams unavailable at once (a zone lost): at about 80
    bytes a node the record is 0.8 MB, kept gzip'd (in parts), every item within the limit, and read back whole."""
    since = datetime(2026, 11, 30, 12, tzinfo=UTC)
    rnd = random.Random(11)
    nodes = {f"i-{rnd.getrandbits(68):017x}": ("labelled UnschedulablePendingReplacement", since)
             for _ in range(10_000)}
    store.sightings.record_unavailable("c1", nodes)
    assert max(item_sizes()) < ITEM_LIMIT * 0.75
    assert store.sightings.unavailable("c1") == nodes


def test_nodes_unavailable_as_the_previous_version_stored_them_are_read(store: Store) -> None:
    since = datetime(2026, 11, 30, 12, tzinfo=UTC)
    boto3.resource("dynamodb").Table("t").put_item(Item={"pk": "CLUSTER#c1", "sk": "UNAVAILABLE", "nodes": {
        "i-1": {"state": "SystemUpdating", "since": since.isoformat()}}})
    assert store.sightings.unavailable("c1") == {"i-1": ("SystemUpdating", since)}


def test_a_run_history_this_version_cannot_read_is_one_line(store: Store) -> None:
    boto3.resource("dynamodb").Table("t").put_item(Item={"pk": "CLUSTER#c1", "sk": "RUN-HISTORY",
                                                         "body": pack({"finished": {"a": "soon"}})})
    with pytest.raises(RecordUnreadable, match=r"^the run history of cluster c1 was recorded by an older version; "
                                               r".*the next plan step replaces it$") as e:
        store.durations.history("c1")
    assert "\n" not in str(e.value)
