"""YAML as the user wrote it: a key given twice in one mapping is an error, never the last one silently winning.

``load(text)`` is ``yaml.safe_load`` with that one check. The error is a ``yaml.YAMLError`` with the line of the
second key (``problem_mark``), so every caller's existing "not valid YAML at FILE:LINE" handling names it.
"""

from __future__ import annotations

from typing import Any

import yaml

__all__ = ["load"]


class _UniqueKeys(yaml.SafeLoader):
    """``SafeLoader`` refusing a mapping that repeats a key."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"key {key!r} is given twice in one mapping (first on line {seen[key] + 1}), so "
                                "one of them would be ignored", key_node.start_mark)
            seen[key] = key_node.start_mark.line
        return super().construct_mapping(node, deep=deep)


def load(text: str) -> Any:
    """``yaml.safe_load(text)``, refusing a key given twice in one mapping (module docstring)."""
    return yaml.load(text, Loader=_UniqueKeys)  # noqa: S506 - a SafeLoader subclass
