"""Edits written into a policy file's own text, so its comments, key order and layout survive a `recommend`: each
edit replaces the value's characters where it is written (positions from PyYAML's composer), or inserts the key into
its mapping (flow `{…}` or block) when it is missing. The patched text is read back and compared with the edits
applied to the parsed document; a layout this cannot patch faithfully returns None and the caller rewrites the file.
(ruamel.yaml would round-trip instead; it is not among the pinned dependencies.)"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Sequence
from typing import Any, cast

import yaml

Keys = tuple[str, ...]
Edit = tuple[Keys, Any]  # (keys from the root, new value); None removes the key

PLAIN_KEY = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]*")
# libyaml's composer where PyYAML has it (the same nodes and character positions, about 10 × faster than PyYAML's
# own, which is most of a patch's time); the read-back check stays on PyYAML's safe_load.
_COMPOSER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def apply_edits(doc: dict[str, Any], edits: Sequence[Edit]) -> dict[str, Any]:
    """The parsed document with the edits made (missing mappings created); everything else as it was."""
    out = copy.deepcopy(doc)
    for path, value in edits:
        if value is None:
            _remove(out, path)
            continue
        node = out
        for key in path[:-1]:
            if not isinstance(node.get(key), dict):
                node[key] = {}
            node = node[key]
        node[path[-1]] = value
    return out


def _remove(doc: dict[str, Any], path: Keys) -> None:
    """Removes the key, and the mapping holding it when that is left empty (a `guarantee: {}` says nothing), one
    level only: a team left with nothing is `{}`, still in the policy."""
    parents = [doc]
    for key in path[:-1]:
        child = parents[-1].get(key)
        if not isinstance(child, dict):
            return
        parents.append(child)
    parents[-1].pop(path[-1], None)
    if len(parents) > 1 and not parents[-1]:
        parents[-2].pop(path[-2], None)


def patch(text: str, edits: Sequence[Edit], *, json_style: bool = False) -> str | None:
    """`text` with the edits written in place, or None when the result would not read back as the edits say."""
    try:
        expected = apply_edits(yaml.safe_load(text) or {}, edits)
        for path, value in edits:
            text = _patch_one(text, path, value, json_style)
        if yaml.safe_load(text) != expected:
            return None
    except (yaml.YAMLError, ValueError, AttributeError):
        return None
    return text


def render(value: Any, json_style: bool) -> str:
    if isinstance(value, dict):
        inner = ", ".join(f"{_key(k, json_style)}: {render(v, json_style)}" for k, v in value.items())
        return "{" + inner + "}"
    if isinstance(value, bool) or value is None:
        return str(json.dumps(value))
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, int | float):
        return repr(value)
    return str(json.dumps(str(value)))


def _key(key: str, json_style: bool) -> str:
    return key if not json_style and PLAIN_KEY.fullmatch(key) else str(json.dumps(key))


def _child(node: yaml.Node, key: str) -> yaml.Node | None:
    if not isinstance(node, yaml.MappingNode):
        return None
    for k, v in node.value:
        if isinstance(k, yaml.ScalarNode) and k.value == key:
            return cast(yaml.Node, v)
    return None


def _nest(keys: Keys, value: Any) -> Any:
    for key in reversed(keys):
        value = {key: value}
    return value


def _patch_one(text: str, path: Keys, value: Any, json_style: bool) -> str:
    if value is None:
        return _delete(text, path)
    node: yaml.Node | None = yaml.compose(text, Loader=_COMPOSER)
    if node is None:
        raise ValueError("an empty document")
    key_node: yaml.Node | None = None
    depth = 0
    while depth < len(path) and isinstance(node, yaml.MappingNode):
        child = _child(node, path[depth])
        if child is None:
            return _insert(text, node, path[depth], _nest(path[depth + 1:], value), json_style)
        key_node = next(k for k, v in node.value if v is child)
        node, depth = child, depth + 1
    # node now holds the value at path[:depth]: replace it (a scalar where a mapping is needed included)
    new = render(_nest(path[depth:], value), json_style)
    if node.start_mark.index == node.end_mark.index and text[node.start_mark.index - 1:node.start_mark.index] == ":":
        new = " " + new  # `key:` with no value
    return _replace(text, node, new, after_key=key_node)


def _insert(text: str, mapping: yaml.MappingNode, key: str, value: Any, json_style: bool) -> str:
    entry = f"{_key(key, json_style)}: {render(value, json_style)}"
    if mapping.flow_style:
        close = mapping.end_mark.index - 1
        if text[close] != "}":
            raise ValueError("flow mapping without its closing brace")
        body = text[mapping.start_mark.index + 1:close]
        at = mapping.start_mark.index + 1 + len(body.rstrip())
        return text[:at] + (", " if body.strip() else "") + entry + text[at:]
    if not mapping.value:
        raise ValueError("an empty block mapping")
    column = int(mapping.value[0][0].start_mark.column)
    at = _line_end(text, int(mapping.value[-1][1].end_mark.index))
    if at == len(text) and not text.endswith("\n"):
        return text + "\n" + " " * column + entry
    return text[:at] + " " * column + entry + "\n" + text[at:]


def _delete(text: str, path: Keys) -> str:
    """Removes the key's entry, as `_remove` does; a missing key: nothing to do."""
    chain: list[yaml.MappingNode] = []
    node: yaml.Node | None = yaml.compose(text, Loader=_COMPOSER)
    for key in path[:-1]:
        if not isinstance(node, yaml.MappingNode):
            return text
        chain.append(node)
        node = _child(node, key)
    if not isinstance(node, yaml.MappingNode) or _child(node, path[-1]) is None:
        return text
    chain.append(node)
    mapping, key = chain[-1], path[-1]
    if len(mapping.value) == 1 and len(chain) > 1:  # the mapping would be left empty
        if len(chain[-2].value) == 1 and len(chain) > 2:  # and it is its parent's only entry: the parent is {}
            [parent_key] = [k for k, _ in chain[-3].value if isinstance(k, yaml.ScalarNode) and k.value == path[-3]]
            return _replace(text, chain[-2], "{}", after_key=parent_key)
        mapping, key = chain[-2], path[-2]
    [(k, v)] = [(k, v) for k, v in mapping.value if isinstance(k, yaml.ScalarNode) and k.value == key]
    if mapping.flow_style:
        start, end = k.start_mark.index, v.end_mark.index
        after = re.match(r"\s*,\s*", text[end:])
        if after:
            return text[:start] + text[end + after.end():]
        before = re.search(r",\s*$", text[:start])
        return text[:before.start() if before else start] + text[end:]
    start = text.rfind("\n", 0, k.start_mark.index) + 1
    end = _line_end(text, v.end_mark.index)
    return text[:start] + text[end:]


def _replace(text: str, node: yaml.Node, new: str, *, after_key: yaml.Node | None = None) -> str:
    """The node's characters replaced by `new`; a block collection from just after its key's colon to its last
    line's end, so that `key:` and its indented lines become `key: new`."""
    start, end = node.start_mark.index, node.end_mark.index
    if isinstance(node, yaml.CollectionNode) and not node.flow_style:
        end = _line_end(text, end) - 1
        if after_key is not None:
            start = text.index(":", after_key.end_mark.index) + 1
            new = " " + new
    return text[:start] + new + text[end:]


def _line_end(text: str, index: int) -> int:
    """The start of the line after the one `index` ends: a block node ends where the next token starts, often
    indented on the next line."""
    line_start = text.rfind("\n", 0, index) + 1
    if not text[line_start:index].strip():
        return line_start
    eol = text.find("\n", index)
    return len(text) if eol < 0 else eol + 1
