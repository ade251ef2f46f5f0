"""The policy's YAML: PyYAML's safe loader without aliases (no expansion bombs, no shared mutable nodes), without
duplicate keys, and reading numbers in exponent form as YAML 1.2 does. Only `rebalancer.parsing.loading.parse` calls
it, when a document is not JSON."""

from __future__ import annotations

import re
from typing import Any

import yaml

from rebalancer.errors import InvalidInput
from rebalancer.parsing.text import short


class _SafeLoader(yaml.SafeLoader):
    """The safe loader without aliases (no expansion bombs, no shared mutable nodes) and without duplicate keys."""

    source = "(yaml)"
    depth = 0
    max_depth = 64

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()  # type: ignore[no-untyped-call]
            mark = event.start_mark
            raise InvalidInput(f"line {mark.line + 1}, column {mark.column + 1}: YAML aliases (*{event.anchor}) "
                               "are not accepted; write the value out", source=self.source)
        self.depth += 1
        if self.depth > self.max_depth:
            mark = self.peek_event().start_mark  # type: ignore[no-untyped-call]
            raise InvalidInput(f"line {mark.line + 1}, column {mark.column + 1}: nested more than {self.max_depth} "
                               "levels deep", source=self.source)
        try:
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            try:
                duplicate = key in seen
                seen.add(key)
            except TypeError:
                mark = key_node.start_mark
                raise InvalidInput(f"line {mark.line + 1}, column {mark.column + 1}: a mapping key must be a plain "
                                   "value", source=self.source) from None
            if duplicate:
                mark = key_node.start_mark
                raise InvalidInput(f"line {mark.line + 1}, column {mark.column + 1}: duplicate key {short(key)} "
                                   "(each key may appear once)", source=self.source, value=key)
        return super().construct_mapping(node, deep=deep)


# YAML 1.1 (PyYAML) reads `1e9` and `1.5e3` as strings: its floats need a dot and a signed exponent. The policy's
# models are strict (a string is no number), so numbers in exponent form are read as YAML 1.2 reads them.
_SafeLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+$"),
    list("-+0123456789."))


def parse_yaml(text: str, source: str, *, max_depth: int) -> Any:
    loader: _SafeLoader | None = None
    try:
        loader = _SafeLoader(text)  # the reader refuses control characters here already
        loader.source = source
        loader.max_depth = max_depth
        return loader.get_single_data()
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise InvalidInput(f"{where}not valid YAML/JSON: {short(problem, 120)}", source=source) from None
    except InvalidInput:  # an alias or a duplicate key, said by the loader (an InvalidInput is a ValueError too)
        raise
    except ValueError as e:  # an integer of more digits than Python converts, a bad date
        raise InvalidInput(f"not a valid YAML value: {short(str(e), 120)}", source=source) from None
    except RecursionError:
        raise InvalidInput(f"nested more than {max_depth} levels deep", source=source) from None
    finally:
        if loader is not None:
            loader.dispose()
