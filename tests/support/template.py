"""template.yaml and the ASL of this checkout, through the package's reader (rebalancer_tools.packaging.template)."""

from __future__ import annotations

from typing import Any

from rebalancer_tools.packaging import template as _t

ROOT = _t.find_root()
TEMPLATE = ROOT / "template.yaml"
ASL = ROOT / "statemachines" / "rebalance.asl.json"


def template() -> dict[str, Any]:
    return _t.load_template(ROOT)


def resources(kind: str | None = None) -> dict[str, dict[str, Any]]:
    res: dict[str, dict[str, Any]] = template()["Resources"]
    return {k: v for k, v in res.items() if kind is None or v["Type"] == kind}


def asl_text() -> str:
    return _t.asl_text(ROOT)


def placeholders() -> set[str]:
    return set(_t.PLACEHOLDER.findall(asl_text()))


def substituted_asl(values: dict[str, str]) -> str:
    return _t.substitute(asl_text(), values)


def function_of_substitution() -> dict[str, str]:
    return _t.substitution_functions(template())


def asl() -> dict[str, Any]:
    return _t.asl(ROOT)


def create_table(dynamodb: Any, name: str = "t") -> str:
    """The template's DynamoDB table (keys, billing) under `name`, through a real (moto) client."""
    props = resources("AWS::DynamoDB::Table")["Table"]["Properties"]
    dynamodb.create_table(TableName=name, KeySchema=props["KeySchema"],
                          AttributeDefinitions=props["AttributeDefinitions"], BillingMode=props["BillingMode"])
    return name
