"""template.yaml as data (CloudFormation's short-form tags kept as {"!Tag": value}) and the ASL with its
substitutions: tests read names from the template instead of repeating them."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "template.yaml"
ASL = ROOT / "statemachines" / "rebalance.asl.json"
PLACEHOLDER = re.compile(r"\$\{([A-Za-z0-9_]+)\}")


class _Loader(yaml.SafeLoader):
    pass


def _tag(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> Any:
    if isinstance(node, yaml.ScalarNode):
        value: Any = loader.construct_scalar(node)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)  # type: ignore[arg-type]
    return {f"!{suffix}": value}


_Loader.add_multi_constructor("!", _tag)


def template() -> dict[str, Any]:
    data: dict[str, Any] = yaml.load(TEMPLATE.read_text(), Loader=_Loader)
    return data


def resources(kind: str | None = None) -> dict[str, dict[str, Any]]:
    res: dict[str, dict[str, Any]] = template()["Resources"]
    return {k: v for k, v in res.items() if kind is None or v["Type"] == kind}


def asl_text() -> str:
    return ASL.read_text()


def placeholders() -> set[str]:
    return set(PLACEHOLDER.findall(asl_text()))


def substituted_asl(values: dict[str, str]) -> str:
    """The ASL with each ${Name} replaced by values[Name] (KeyError for a missing one)."""
    return PLACEHOLDER.sub(lambda m: values[m.group(1)], asl_text())


def function_of_substitution() -> dict[str, str]:
    """Substitution name → logical id of the function it points at (e.g. CollectFunctionArn → CollectFunction)."""
    sm = resources("AWS::Serverless::StateMachine")["RebalanceStateMachine"]["Properties"]
    out = {}
    for name, value in sm["DefinitionSubstitutions"].items():
        if isinstance(value, dict) and "!GetAtt" in value:
            out[name] = str(value["!GetAtt"]).split(".")[0]
    return out


def asl() -> dict[str, Any]:
    return json.loads(asl_text())  # type: ignore[no-any-return]
