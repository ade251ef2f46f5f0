"""Names we create are valid EntityNames (botocore's pattern and length) for any cluster and team name."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.props import properties

from rebalancer.domain.names import entity_name, quota_name, scheduler_config_name
from rebalancer.domain.policy import TEAM_NAME, TEAM_NAME_MAX
from rebalancer_tools.packaging.sdk_model import sagemaker_model


def _string_rule(shape: str) -> tuple[re.Pattern[str], int, int]:
    meta = sagemaker_model().shape_for(shape).metadata
    return re.compile(meta["pattern"]), int(meta.get("min", 0)), int(meta["max"])


ENTITY, ENTITY_MIN, ENTITY_MAX = _string_rule("EntityName")
CLUSTER, _, CLUSTER_MAX = _string_rule("ClusterName")


def valid_entity_name(name: str) -> bool:
    return bool(ENTITY.fullmatch(name)) and ENTITY_MIN <= len(name) <= ENTITY_MAX


cluster_names = st.from_regex(CLUSTER, fullmatch=True).filter(lambda n: len(n) <= CLUSTER_MAX)
team_names = st.from_regex(TEAM_NAME, fullmatch=True).filter(lambda n: len(n) <= TEAM_NAME_MAX)


@properties(100)
@given(cluster_names)
def test_the_scheduler_config_name_is_an_entity_name_for_any_cluster(cluster: str) -> None:
    name = scheduler_config_name(cluster)
    assert valid_entity_name(name), name
    assert name.endswith("-scheduler")


@properties(100)
@given(team_names)
def test_the_quota_name_is_an_entity_name_for_any_team(team: str) -> None:
    assert valid_entity_name(quota_name(team))
    assert quota_name(team) == f"{team}-quota"  # teams are short enough to keep the plain name


@properties(100)
@given(cluster_names, cluster_names)
def test_different_clusters_get_different_scheduler_config_names(a: str, b: str) -> None:
    if a != b:
        assert scheduler_config_name(a) != scheduler_config_name(b)


@pytest.mark.parametrize(("cluster", "expected"), [
    ("ml-cluster", "ml-cluster-scheduler"),
    ("a" * 53, "a" * 53 + "-scheduler"),  # exactly 63
])
def test_short_names_keep_the_plain_form(cluster: str, expected: str) -> None:
    assert scheduler_config_name(cluster) == expected


def test_the_cut_that_used_to_end_in_a_hyphen() -> None:
    cluster = "c" * 62
    assert f"{cluster}-scheduler"[:63].endswith("-")  # what the old name was
    name = scheduler_config_name(cluster)
    assert valid_entity_name(name)
    assert len(name) == 63


def test_material_that_cannot_make_a_name_is_refused() -> None:
    with pytest.raises(ValueError, match="cannot make an EntityName"):
        entity_name("arn:aws:sagemaker:us-east-1:123456789012:cluster/a1b2c3d4e5f6", "scheduler")
