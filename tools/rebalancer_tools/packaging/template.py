"""Reading template.yaml and the state machine definition from a checkout: the template is the source of truth for
names, environment and substitutions (the local stack and the static tests both read it here)."""

from __future__ import annotations

import copy
import functools
import json
import re
from pathlib import Path
from typing import Any

import yaml

PLACEHOLDER = re.compile(r"\$\{([A-Za-z0-9_]+)\}")


def find_root(start: Path | None = None) -> Path:
    """The folder holding template.yaml and statemachines/: the checkout, from `start` (default: this file)
    upwards; installed from a wheel (no checkout above), the package's own copy, `_assets`."""
    here = (start or Path(__file__)).resolve()
    shipped: tuple[Path, ...] = (Path(__file__).parents[1] / "_assets",) if start is None else ()
    for folder in (here, *here.parents, *shipped):
        if (folder / "template.yaml").is_file() and (folder / "statemachines").is_dir():
            return folder
    raise FileNotFoundError(f"no template.yaml above {here}: run from a checkout of hyperpod-rebalancer")


# libyaml's loader when PyYAML has it: the template is read by many tests, and the pure-Python parser takes ~50x longer.
class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    pass


def _tag(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> Any:
    if isinstance(node, yaml.ScalarNode):
        value: Any = loader.construct_scalar(node)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        assert isinstance(node, yaml.MappingNode)
        value = loader.construct_mapping(node, deep=True)
    return {f"!{suffix}": value}


_Loader.add_multi_constructor("!", _tag)


def load_template(root: Path) -> dict[str, Any]:
    """CloudFormation short-form tags are kept as {"!Tag": value}. A fresh copy each call (callers may change it)."""
    return copy.deepcopy(_parsed(root / "template.yaml", (root / "template.yaml").stat().st_mtime_ns))


@functools.cache
def _parsed(path: Path, _mtime: int) -> dict[str, Any]:
    data: dict[str, Any] = yaml.load(path.read_text(), Loader=_Loader)
    return data


def asl_text(root: Path) -> str:
    return (root / "statemachines" / "rebalance.asl.json").read_text()


def substitute(text: str, values: dict[str, str]) -> str:
    """Each ${Name} replaced by values[Name]; a missing one is a KeyError naming it."""
    return PLACEHOLDER.sub(lambda m: values[m.group(1)], text)


def state_machine_properties(tpl: dict[str, Any]) -> dict[str, Any]:
    props: dict[str, Any] = tpl["Resources"]["RebalanceStateMachine"]["Properties"]
    return props


def substitution_functions(tpl: dict[str, Any]) -> dict[str, str]:
    """Substitution name → logical id of the function it points at (CollectFunctionArn → CollectFunction)."""
    out = {}
    for name, value in state_machine_properties(tpl)["DefinitionSubstitutions"].items():
        if isinstance(value, dict) and "!GetAtt" in value:
            out[name] = str(value["!GetAtt"]).split(".")[0]
    return out


def literal_environment(tpl: dict[str, Any], logical_id: str | None = None) -> dict[str, str]:
    """The environment variables the template gives a function as plain strings (Globals, then the function's)."""
    env = dict(tpl["Globals"]["Function"]["Environment"]["Variables"])
    if logical_id:
        env.update(tpl["Resources"][logical_id]["Properties"].get("Environment", {}).get("Variables", {}))
    return {k: v for k, v in env.items() if isinstance(v, str)}


def asl(root: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(asl_text(root))
    return data
