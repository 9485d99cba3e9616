"""The one error type a user sees: a message naming what is wrong and how to fix it."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any


class EvaluationsError(Exception):
    """A user-facing error. The CLI prints ``message`` and ``fix`` and exits 2, no traceback.

    ``where`` names the file/line/key/URL at fault; ``fix`` says what to do about it.
    """

    def __init__(self, message: str, *, where: str | None = None, fix: str | None = None):
        self.message = message
        self.where = where
        self.fix = fix
        super().__init__(self.render())

    def render(self) -> str:
        text = f"{self.where}: {self.message}" if self.where else self.message
        if self.fix:
            text += f"\n  fix: {self.fix}"
        return text


class JudgeFailed(Exception):
    """One question a judge's checker could not answer (a served checker's error, an input longer than the embedded
    model's window): the row or case is counted as failed, never given a score, and the command goes on."""


def lone_surrogate(value: Any, path: str = "") -> tuple[str, int, str] | None:
    """(dotted path, character index, character) of the first lone surrogate in ``value``'s strings (keys
    included), or None: text that cannot be encoded as UTF-8 (a ``\\ud800`` escape in JSON without its pair, or
    undecodable bytes decoded with ``errors='surrogateescape'``)."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            return path or "(the text)", exc.start, value[exc.start]
        return None
    if isinstance(value, dict):
        items = value.items()
    elif isinstance(value, list | tuple):
        items = enumerate(value)
    else:
        return None
    for key, item in items:
        where = f"{path}.{key}" if path else str(key)
        found = lone_surrogate(key, where) if isinstance(key, str) else None
        found = found or lone_surrogate(item, where)
        if found:
            return found
    return None


def escaped(text: str) -> str:
    """``text`` with any lone surrogate escaped (``\\ud800``): in a form UTF-8 can write."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


#: pydantic's tags of a union member in an error's location: not keys the user wrote
_BRANCH_TAGS = frozenset({"str", "int", "float", "bool", "list", "dict", "none", "tuple", "set"})


def _model_names() -> set[str]:
    """Class names of the loaded pydantic models: pydantic tags a model member of a union with its class name."""
    from pydantic import BaseModel

    names, todo = set(), [BaseModel]
    while todo:
        for sub in todo.pop().__subclasses__():
            if sub.__name__ not in names:
                names.add(sub.__name__)
                todo.append(sub)
    return names


def _is_branch_tag(part: object, models: Callable[[], set[str]]) -> bool:
    """A location part that names a union member (``literal['auto']``, ``list[str]``, ``str``, ``LoggedSpan``), not
    a key or id the user wrote (``graded_relevance.DocA`` keeps ``DocA``). ``models``: the model class names, asked
    only for a part that could be one."""
    if not isinstance(part, str):
        return False
    return "[" in part or part in _BRANCH_TAGS or (part[:1].isupper() and part.isidentifier() and part in models())


def field_errors(errors: list[dict]) -> list[tuple[str, str, object]]:
    """(dotted key, message, input) per pydantic error (``ValidationError.errors()``), in the user's keys: union
    member tags are dropped from the key, and of a union's failed members only the deepest is kept (a value that
    fails as ``'auto'`` and as a list of names is reported where the list failed; members failing at the same key
    are one message)."""
    rows: list[tuple[str, bool, str, object]] = []
    models = functools.cache(_model_names)  # walked once per call, and only when a part could be a class name
    for err in errors:
        parts = [p for p in err["loc"] if not _is_branch_tag(p, models)]
        rows.append((".".join(map(str, parts)), len(parts) < len(err["loc"]), err["msg"], err.get("input")))
    keys = [key for key, *_ in rows]

    def deeper(key: str) -> bool:
        return any(other != key and (not key or other.startswith(f"{key}.")) for other in keys)

    out: dict[str, tuple[list[str], object]] = {}
    for key, tagged, msg, value in rows:
        if tagged and deeper(key):
            continue
        msgs, _ = out.setdefault(key, ([], value))
        if msg not in msgs:
            msgs.append(msg)  # the union's members that failed at the same key: "A, or b"
    return [(key, ", or ".join([msgs[0], *(m[:1].lower() + m[1:] for m in msgs[1:])]) + _what_was_given(msgs, value),
             value) for key, (msgs, value) in out.items()]


def _what_was_given(msgs: list[str], value: object) -> str:
    """What the user wrote where pydantic wanted another type, and how to write it: ``"Brazil"`` where a list is
    wanted is ``["Brazil"]``, ``42`` where a string is wanted is ``"42"`` (pydantic says only what it wanted)."""
    import json

    if len(msgs) != 1:  # a union's members: which one was meant cannot be told
        return ""
    wanted = msgs[0]
    if "valid list" in wanted and isinstance(value, str):
        return f" (got a string: write a list, [{json.dumps(value, ensure_ascii=False)}])"
    if "valid list" in wanted and value is None:
        return " (got null: give a list, [] for none, or leave the field out)"
    if "valid list" in wanted and isinstance(value, dict):
        return " (got an object: give a list)"
    if "valid string" in wanted and isinstance(value, (int, float)) and not isinstance(value, bool):
        return f" (got the number {json.dumps(value)}: quote it, \"{value}\")"
    return ""
