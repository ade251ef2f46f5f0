import pytest

from rebalancer.domain.policy import Policy
from rebalancer.errors import InvalidInput
from rebalancer.parsing.loading import parse_document
from rebalancer.parsing.validation import load_model

EXAMPLE = """
mode: auto
surplus: idle
stability: {min_step: 1, cooldown_minutes: 30, max_move: 64}
approval: {moved_accelerators: 16, max_decrease_percent: 50}
teams:
  research:
    weight: 3
    guarantee: {ml.p5.48xlarge: 8}
    cap: {ml.p5.48xlarge: 24}
    protected_in_use: true
  inference: {weight: 1, guarantee: {ml.p5.48xlarge: "25%"}}
"""


def test_example_policy_loads_and_round_trips() -> None:
    policy = load_model(Policy, parse_document(EXAMPLE, "p.yaml"), "p.yaml")
    assert policy.teams["research"].guarantee_for("ml.p5.48xlarge", 32) == 8
    assert policy.teams["inference"].guarantee_for("ml.p5.48xlarge", 32) == 8
    assert policy.teams["research"].cap_for("ml.p5.48xlarge", 32) == 24
    assert policy.teams["inference"].cap_for("ml.p5.48xlarge", 32) == float("inf")
    assert Policy.model_validate_json(policy.model_dump_json()) == policy
    assert policy.model_dump(mode="json")["teams"]["inference"]["guarantee"] == {"ml.p5.48xlarge": "25%"}


@pytest.mark.parametrize(
    ("doc", "field", "words"),
    [
        ({"teams": {"Bad_Name": {}}}, "teams", "Bad_Name"),
        ({"teams": {"a" * 41: {}}}, "teams", "at most 40"),
        ({"teams": {"a": {"guarantee": {"ml.p9.huge": 3}}}}, "teams.a.guarantee", "ml.p9.huge"),
        ({"teams": {"a": {"guarantee": {"ml.p5.48xlarge": -3}}}}, "teams.a.guarantee.ml.p5.48xlarge", "-3"),
        ({"teams": {"a": {"cap": {"ml.p5.48xlarge": "150%"}}}}, "teams.a.cap.ml.p5.48xlarge", "150%"),
        ({"mode": "yolo", "teams": {}}, "mode", "yolo"),
        ({"teams": {"a": {"guarantee": {"ml.p5.48xlarge": "60%"}}, "b": {"guarantee": {"ml.p5.48xlarge": "50%"}}}},
         None, "110%"),
        ({"teams": {"a": {"guarantee": {"ml.p5.48xlarge": 9}, "cap": {"ml.p5.48xlarge": 8}}}}, "teams.a", "above cap"),
        ({"teams": {"a": {"guarantee": {"ml.p5.48xlarge:mig-1g.5gb": 2}}}}, "teams.a.guarantee", "mig-1g.5gb"),
        ({"teams": {"a": {"weight": -1}}}, "teams.a.weight", "-1"),
    ],
)
def test_invalid_policy_names_field_and_value(doc: dict[str, object], field: str | None, words: str) -> None:
    with pytest.raises(InvalidInput) as e:
        load_model(Policy, doc, "policy.yaml")
    assert "policy.yaml" in str(e.value)
    assert words in str(e.value)
    if field:
        assert e.value.field == field


def test_yaml_syntax_error_names_line() -> None:
    with pytest.raises(InvalidInput, match="line 3"):
        parse_document("teams:\n  a: [1,\n", "p.yaml")
