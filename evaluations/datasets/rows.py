"""Reading rows from local files (JSONL[.gz], JSON arrays, parquet, CSV/TSV) with their line numbers.

Every problem becomes one EvaluationsError naming the file, the line and the field. A key given twice in one JSON
object, or a column named twice in a CSV/TSV header, is such a problem: the last one would win silently.
"""

from __future__ import annotations

import csv
import gzip
import json
import re
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from evaluations.core.errors import EvaluationsError, escaped, lone_surrogate

SUFFIXES = (".jsonl", ".jsonl.gz", ".json", ".json.gz", ".parquet", ".csv", ".csv.gz", ".tsv", ".tsv.gz")


_FIX_UTF8 = "save the file as UTF-8 (e.g. iconv -f latin1 -t utf-8 IN > OUT)"


#: a JSON escape of a UTF-16 surrogate (``\\ud800``): only a line holding one can parse to text UTF-8 cannot write
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def check_unicode(value: Any, text: str, where: str, key: str = "") -> None:
    """An error naming ``where`` and the field when a string of ``value`` (parsed from the JSON ``text``; ``key``:
    its own dotted key, if any) holds a lone surrogate (half of a UTF-16 pair escaped as ``\\ud800``): no judge,
    model or output file can take it."""
    found = lone_surrogate(value, key) if _SURROGATE_ESCAPE.search(text) else None
    if found:
        key, index, char = found
        raise EvaluationsError(f"field '{escaped(key)}' is not valid Unicode text: a lone surrogate {char!r} at index "
                               f"{index} (a \\u escape of half a UTF-16 pair)", where=where,
                               fix="write the character itself, or both escapes of its pair (e.g. \\ud83d\\ude00), "
                                   "or remove the escape")


def json_cell(value: Any, where: str, key: str) -> Any:
    """A CSV cell that holds a JSON list (``'["a", "b"]'``), parsed, its escapes checked as a JSON row's are
    (``check_unicode``, naming ``key``); any other value, or text that does not parse, as it is ("[1] Smith et
    al." is a text). A cell that opens a list of quoted texts (``["a", …`` or Python's ``['a', 'b']``) and does
    not parse is an error: read as one text, the brackets and quotes would become part of it."""
    if not (isinstance(value, str) and value.lstrip().startswith("[")):
        return value
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError as exc:
        if re.match(r"\[\s*['\"]", value.lstrip()):
            raise EvaluationsError(f"field {key!r} opens a list of texts but is not valid JSON ({exc.msg})",
                                   where=where, fix='write the list as JSON, in double quotes: ["text 1", "text 2"] '
                                                    "(Python's ['a', 'b'] is not JSON)") from None
        return value
    check_unicode(parsed, value, where, key)
    return parsed


def _open_binary(path: Path) -> BinaryIO:
    return gzip.open(path, "rb") if path.name.lower().endswith(".gz") else path.open("rb")


_GZIP_MAGIC = b"\x1f\x8b"
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")


def _decode(raw: bytes, where: str, first: bool) -> str:
    """One line of bytes -> str; undecodable bytes are an error naming ``where`` (file:line) and the column, or, on
    the first line of gzip bytes, saying the file is compressed."""
    try:
        return raw.decode("utf-8-sig" if first else "utf-8")
    except UnicodeDecodeError as exc:
        if first and raw.startswith(_GZIP_MAGIC):
            name = where.rsplit(":", 1)[0]
            raise EvaluationsError("not text: the file is gzip-compressed", where=name,
                                   fix=f"decompress it first (gzip -dc {Path(name).name} > FILE)") from None
        if first and raw.startswith(_UTF16_BOMS):  # Windows tools' "Unicode" text
            name = where.rsplit(":", 1)[0]
            raise EvaluationsError("not UTF-8: the file is UTF-16 (it starts with a UTF-16 byte order mark)",
                                   where=name, fix=f"save it as UTF-8 (e.g. iconv -f UTF-16 -t UTF-8 "
                                                   f"{Path(name).name} > OUT)") from None
        bad = raw[exc.start:exc.end].hex(" ")
        raise EvaluationsError(f"not valid UTF-8 (byte(s) {bad} at byte {exc.start + 1} of the line)",
                               where=where, fix=_FIX_UTF8) from None


def _text_lines(handle: BinaryIO, path: Path, progress: list[int]) -> Iterator[str]:
    """Decoded lines of a binary handle; ``progress[0]`` is the number of the last line read."""
    for number, raw in enumerate(handle, 1):
        progress[0] = number
        yield _decode(raw, f"{path}:{number}", number == 1)


def _read_error(exc: BaseException, path: Path, last_line: int) -> EvaluationsError:
    """A low-level read failure (truncated/corrupt gzip, I/O error) as one EvaluationsError."""
    after = f" (after line {last_line})" if last_line else ""
    if isinstance(exc, EOFError):
        return EvaluationsError(f"the compressed file ends too early: it is truncated{after}", where=str(path),
                                fix="copy or download the file again; check it with gzip -t")
    if isinstance(exc, (gzip.BadGzipFile, zlib.error)):
        with path.open("rb") as handle:
            if handle.read(2) != _GZIP_MAGIC:
                return EvaluationsError("not a gzip file, though its name ends in .gz", where=str(path),
                                        fix="compress it with gzip, or drop .gz from its name")
        return EvaluationsError(f"not a valid gzip file ({exc}){after}", where=str(path),
                                fix="copy or download the file again; check it with gzip -t")
    return EvaluationsError(f"cannot read the file: {getattr(exc, 'strerror', None) or exc}{after}",
                            where=str(path), fix="check the file exists and is readable")


def utf8_lines(path: Path, *, gunzip: bool = True) -> Iterator[tuple[int, str]]:
    """(line number from 1, text) of every line of ``path``, gunzipped when ``gunzip`` and its name ends in .gz.
    Checked: each line is UTF-8, the gzip stream is whole and valid, the file is readable; a failure is one
    EvaluationsError naming the file (and line) and the fix (``_decode``, ``_read_error``)."""
    progress = [0]
    try:
        with _open_binary(path) if gunzip else path.open("rb") as handle:
            for line in _text_lines(handle, path, progress):
                yield progress[0], line
    except (OSError, EOFError, zlib.error) as exc:
        raise _read_error(exc, path, progress[0]) from None


def tab_cells(line: str, fields: int = 3) -> list[str]:
    """The stripped cells of a tab-separated line (a BEIR qrels TSV, whose ids may hold spaces), trailing empty
    cells beyond ``fields`` dropped (a line ending in a tab)."""
    cells = [c.strip() for c in line.rstrip("\r\n").split("\t")]
    while len(cells) > fields and not cells[-1]:
        cells.pop()
    return cells


def is_number(text: str) -> bool:
    """``text`` reads as a number (``2``, ``2.0``, ``-1``): a qrels line's grade column, not a header's name."""
    try:
        float(text)
    except ValueError:
        return False
    return True


def read_utf8(path: Path) -> str:
    """The text of ``path`` (never gunzipped), checked as ``utf8_lines`` checks it."""
    return "".join(line for _, line in utf8_lines(path, gunzip=False))


def find_file(folder: Path, stem: str) -> Path | None:
    """``folder/stem`` with any supported suffix, or None."""
    for suffix in SUFFIXES:
        candidate = folder / f"{stem}{suffix}"
        if candidate.is_file():
            return candidate
    return None


def iter_rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (line_number, row) for every row of ``path``; line numbers start at 1.

    For JSON arrays and parquet, the "line" is the 1-based row index.
    """
    if not path.is_file():
        what = "is a folder, expected a file" if path.is_dir() else "file not found"
        raise EvaluationsError(what, where=str(path), fix="check the path of the file the command reads")
    name = path.name.lower()  # Q1.JSONL is a JSONL file
    progress = [0]  # last physical line read, for messages about the file as a whole
    try:
        if name.endswith((".jsonl", ".jsonl.gz")):
            with _open_binary(path) as handle:
                for number, line in enumerate(_text_lines(handle, path, progress), 1):
                    if not line.strip():
                        continue
                    try:
                        row = _UNIQUE_KEYS.decode(line.rstrip("\r\n"))  # a column on this line, not "column 1"
                    except json.JSONDecodeError as exc:
                        raise EvaluationsError(f"not valid JSON ({exc.msg}, column {exc.colno})",
                                               where=f"{path}:{number}", fix="fix or remove that line") from None
                    except _RepeatedKey as exc:
                        raise repeated_key(exc.key, f"{path}:{number}") from None
                    if not isinstance(row, dict):
                        raise EvaluationsError(f"a row must be a JSON object, got {json_type(row)}",
                                               where=f"{path}:{number}", fix="write one JSON object per line")
                    check_unicode(row, line, f"{path}:{number}")
                    yield number, row
        elif name.endswith((".json", ".json.gz")):
            yield from _json_array(path)
        elif name.endswith(".parquet"):
            yield from _parquet(path)
        elif name.endswith((".csv", ".csv.gz", ".tsv", ".tsv.gz")):
            delimiter = "\t" if ".tsv" in name else ","
            with _open_binary(path) as handle:
                reader = csv.DictReader(_text_lines(handle, path, progress), delimiter=delimiter)
                try:
                    names = reader.fieldnames or []
                    repeated = next((n for i, n in enumerate(names) if n.strip() and n in names[:i]), None)
                    if repeated is not None:  # DictReader would keep the last column of that name silently
                        raise EvaluationsError(f"column {escaped(repeated)!r} is given twice in the header, so one "
                                               "of them would be ignored", where=f"{path}:{reader.line_num}",
                                               fix="rename or remove one of the two columns")
                    for row in reader:
                        if None in row:
                            raise EvaluationsError(
                                f"{len(reader.fieldnames or []) + len(row[None])} fields, but the header has "
                                f"{len(reader.fieldnames or [])}", where=f"{path}:{reader.line_num}",
                                fix="quote values that contain the delimiter, or remove the extra fields")
                        yield reader.line_num, dict(row)
                except csv.Error as exc:
                    raise EvaluationsError(f"not valid {'TSV' if delimiter == chr(9) else 'CSV'} ({exc})",
                                           where=f"{path}:{reader.line_num}", fix="fix or remove that line") from None
        else:
            raise EvaluationsError(
                "unsupported file type", where=str(path), fix=f"use one of {', '.join(SUFFIXES)}"
            )
    except (OSError, EOFError, zlib.error) as exc:
        raise _read_error(exc, path, progress[0]) from None


def json_type(value: Any) -> str:
    """The JSON name of a parsed value's type, for messages ("an array", "a string", "a boolean", "null", ...)."""
    return {list: "an array", dict: "an object", str: "a string", bool: "a boolean",
            type(None): "null"}.get(type(value), "a number")


class _RepeatedKey(Exception):
    """A key given twice in one JSON object (``_unique_pairs``); the reader turns it into an EvaluationsError."""

    def __init__(self, key: str):
        super().__init__(key)
        self.key = key


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object as a dict, refusing a key given twice (``json.loads`` would keep the last one silently)."""
    obj = dict(pairs)
    if len(obj) < len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _RepeatedKey(key)
            seen.add(key)
    return obj


#: ``json.loads`` refusing a key given twice in one object (one decoder: as fast as ``json.loads``)
_UNIQUE_KEYS = json.JSONDecoder(object_pairs_hook=_unique_pairs)
_SPACE = " \t\r\n"


def repeated_key(key: str, where: str) -> EvaluationsError:
    """The error of a key given twice in one JSON object, at ``where`` (file:line)."""
    return EvaluationsError(f"key {escaped(key)!r} is given twice in one object, so one of them would be ignored",
                            where=where, fix="keep one of them (merge their values if both are meant)")


def _skip(text: str, pos: int, chars: str = _SPACE) -> int:
    while text[pos] in chars:
        pos += 1
    return pos


def json_members(text: str, path: Path) -> dict[str, int]:
    """{key: offset of its value} of the members of the top-level object of ``text`` (valid JSON, already parsed):
    where a member's value starts, to number its lines. A key given twice there is an error naming its line."""
    decoder, members, pos = json.JSONDecoder(), {}, _skip(text, 0) + 1
    while True:
        pos = _skip(text, pos, _SPACE + ",")
        if text[pos] == "}":
            return members
        key, pos = decoder.raw_decode(text, pos)
        if key in members:
            line = text.count("\n", 0, pos) + 1
            raise repeated_key(key, f"{path}:{line}")
        members[key] = pos = _skip(text, pos, _SPACE + ":")
        _, pos = decoder.raw_decode(text, pos)


def json_items(text: str, start: int, path: Path) -> Iterator[tuple[int, Any]]:
    """(line it starts on, value) of each element of the JSON array at ``text[start]`` (``text`` is valid JSON,
    already parsed), each decoded refusing a key given twice in one object (the error names that line)."""
    pos, counted, line = start + 1, start, text.count("\n", 0, start) + 1
    while True:
        pos = _skip(text, pos, _SPACE + ",")
        if text[pos] == "]":
            return
        line, counted = line + text.count("\n", counted, pos), pos
        try:
            value, pos = _UNIQUE_KEYS.raw_decode(text, pos)
        except _RepeatedKey as exc:
            raise repeated_key(exc.key, f"{path}:{line}") from None
        yield line, value


def _rows_member(data: dict[str, Any], path: Path) -> str:
    """The member of a top-level object that holds the rows: its one member that is an array of objects
    (``{"data": [...]}``, as some exports wrap them; empty arrays beside a non-empty one do not count); any other
    object is an error saying so (one row is not a file of rows)."""
    arrays = [k for k, v in data.items() if isinstance(v, list) and all(isinstance(r, dict) for r in v)]
    if len(arrays) > 1:
        arrays = [k for k in arrays if data[k]] or arrays[:1]  # an empty array beside the rows is not a choice
    if len(arrays) == 1:
        return arrays[0]
    fix = ("make the file a JSON array of row objects ([{...}, {...}]), or write JSONL (one object per line); an "
           "object is read only when exactly one of its members is the array of rows")
    if arrays:
        raise EvaluationsError(f"the file is a JSON object with several arrays of objects ({', '.join(arrays)}): "
                               "which one holds the rows is not clear", where=str(path), fix=fix)
    raise EvaluationsError("the file is one JSON object, not an array of rows (no member of it is an array of "
                           "objects)", where=str(path), fix=fix)


def _json_array(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Rows of a JSON array file, or of the one array of objects inside a top-level object (``_rows_member``);
    "line" = 1-based row index (a key given twice in a row is named by its line in the file, ``json_items``)."""
    with _open_binary(path) as handle:
        raw = handle.read()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        raise EvaluationsError(f"not valid UTF-8 (byte(s) {raw[exc.start:exc.end].hex(' ')})",
                               where=f"{path}:{line}", fix=_FIX_UTF8) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise EvaluationsError(f"not valid JSON ({exc.msg}, column {exc.colno})", where=f"{path}:{exc.lineno}",
                               fix="fix the JSON at that line") from None
    if isinstance(data, dict):
        start = json_members(text, path)[_rows_member(data, path)]
    elif isinstance(data, list):
        start = _skip(text, 0)
    else:
        raise EvaluationsError(f"expected an array of objects, got {json_type(data)}", where=str(path),
                               fix="make the file an array of objects")
    for number, (_, row) in enumerate(json_items(text, start, path), 1):
        if not isinstance(row, dict):
            raise EvaluationsError(f"a row must be a JSON object, got {json_type(row)}", where=f"{path}:{number}",
                                   fix="make the file an array of objects")
        check_unicode(row, text, f"{path}:{number}")
        yield number, row


def _parquet(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Rows of a parquet file; "line" = 1-based row index. A corrupt file is one EvaluationsError."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path)
    except pa.ArrowException as exc:
        reason = str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__
        raise EvaluationsError(f"not a readable parquet file ({reason})", where=str(path),
                               fix="copy or export the file again (a truncated copy loses the parquet footer)") from None
    yield from enumerate(table.to_pylist(), 1)


def field(row: dict[str, Any], name: str, where: str, *, kind: type | tuple[type, ...] = str,
          required: bool = True, default: Any = None) -> Any:
    """``row[name]`` checked for presence and type; errors name ``where`` (file:line) and the field."""
    value = row.get(name)
    if value is None or (kind is str and isinstance(value, str) and not value.strip() and required):
        if required:
            raise EvaluationsError(f"missing or empty field '{name}'", where=where,
                                   fix=f"every row needs a non-empty '{name}'")
        return default
    if kind is str and isinstance(value, (int, float)) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, kind):
        expected = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise EvaluationsError(f"field '{name}' must be {expected}, got {type(value).__name__}", where=where,
                               fix=f"correct '{name}' on that line")
    return value
