"""What the store and the steps keep small: an audit record of a huge plan is stored compressed (DynamoDB refuses
items above 400 KB) and read back whole; the lists a state carries are summarised (Step Functions: 256 KB)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import boto3
import pytest
from moto import mock_aws
from support.template import create_table

from rebalancer.adapters.dynamodb.audit import AUDIT_INLINE_MAX
from rebalancer.adapters.dynamodb.store import Store
from rebalancer.app.workflow.state import MAX_STATE_LINES, summarised


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
