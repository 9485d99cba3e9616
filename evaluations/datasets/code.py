"""A code corpus: a repository split into spans, for code-search evaluation (golden code-span queries).

* Python files (``ast``): one span per function, class and method, id ``path::symbol`` with ``symbol`` the
  dotted qualified name (``evaluations/index/store.py::Store.index``). A function or method span is its source
  from the first decorator to the last line, docstring included. A class span is the class's own lines (header,
  docstring, fields, class attributes) without its methods and nested classes, which are spans of their own.
  One ``path::<module>`` span holds the module's lines outside its top-level functions and classes (module
  docstring, imports, constants). Functions nested in functions stay inside their parent's span.
  A repeated name in one file (a redefinition) gets ``symbol@<line>``. Spans are whole source lines (a trailing
  comment on the last line included).
* Other text files (``TEXT_SUFFIXES``): plain chunks of ``CHUNK_TOKENS`` tokens (``datasets.chunking.chunk_text``),
  id ``path#<n>`` (symbol ``#<n>``).

``span_hash`` = sha256 of the span's text (UTF-8). The document indexed for a span is ``"<id>\\n<text>"`` so the
path and name are searchable. Skipped: hidden folders, ``SKIP_DIRS`` (virtualenvs, caches, build outputs, run
folders and the root's ``datasets/``, which holds the golden answers), files over ``MAX_BYTES``, files that do not parse.
"""

from __future__ import annotations

import ast
import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from evaluations.core.errors import EvaluationsError
from evaluations.datasets.chunking import chunk_text
from evaluations.core.types import Document

TEXT_SUFFIXES = (".md", ".txt", ".rst", ".yaml", ".yml", ".toml", ".cfg", ".ini", ".sh")
SKIP_DIRS = frozenset({"__pycache__", "node_modules", "venv", "env", "build", "dist", "runs", "site-packages"})
#: skipped at the repository's root only: ``datasets/`` there holds the golden answers (a package named
#: ``datasets`` deeper down, such as ``evaluations/datasets``, is code)
ROOT_SKIP_DIRS = frozenset({"datasets"})
MAX_BYTES = 1_000_000
CHUNK_TOKENS, CHUNK_OVERLAP = 256, 32
MODULE = "<module>"


@dataclass(frozen=True, slots=True)
class Span:
    path: str  # POSIX path relative to the repository root
    symbol: str  # dotted qualified name, "<module>", or "#<n>" for a plain chunk
    kind: str  # function | method | class | module | chunk
    start_line: int
    end_line: int
    text: str

    @property
    def id(self) -> str:
        return f"{self.path}{self.symbol}" if self.kind == "chunk" else f"{self.path}::{self.symbol}"

    @property
    def hash(self) -> str:
        return span_hash(self.text)

    def document(self) -> Document:
        return Document(id=self.id, text=f"{self.id}\n{self.text}", title=self.id)


def span_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _start(node: ast.AST) -> int:
    decorators = getattr(node, "decorator_list", [])
    return min([node.lineno, *(d.lineno for d in decorators)])


def _text(lines: list[str], start: int, end: int, holes: list[tuple[int, int]] = ()) -> str:
    """Lines start..end (1-based, inclusive); with ``holes`` (class and module spans) those line ranges are left
    out and runs of blank lines become one. Blank edges are trimmed."""
    kept: list[str] = []
    for i in range(start, end + 1):
        if any(a <= i <= b for a, b in holes):
            continue
        line = lines[i - 1]
        if holes and not line.strip() and (not kept or not kept[-1].strip()):
            continue
        kept.append(line)
    return "\n".join(kept).strip("\n")


_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def python_spans(path: str, source: str) -> list[Span]:
    """The spans of one Python file (module docstring rules); a SyntaxError propagates."""
    tree = ast.parse(source)
    lines = source.splitlines()
    spans: list[Span] = []
    seen: set[str] = set()

    def visit(body: list[ast.stmt], prefix: str, in_class: bool) -> None:
        for node in body:
            if not isinstance(node, _DEFS):
                continue
            symbol = f"{prefix}{node.name}"
            if symbol in seen:
                symbol = f"{symbol}@{node.lineno}"
            seen.add(symbol)
            start = _start(node)
            if isinstance(node, ast.ClassDef):
                inner = [n for n in node.body if isinstance(n, _DEFS)]
                holes = [(_start(n), n.end_lineno) for n in inner]
                spans.append(Span(path, symbol, "class", start, node.end_lineno, _text(lines, start, node.end_lineno, holes)))
                visit(node.body, f"{symbol}.", True)
            else:
                spans.append(Span(path, symbol, "method" if in_class else "function", start, node.end_lineno,
                                  _text(lines, start, node.end_lineno)))

    visit(tree.body, "", False)
    holes = [(_start(n), n.end_lineno) for n in tree.body if isinstance(n, _DEFS)]
    module_text = _text(lines, 1, len(lines), holes) if lines else ""
    if module_text.strip():
        spans.insert(0, Span(path, MODULE, "module", 1, len(lines), module_text))
    return spans


def text_spans(path: str, text: str) -> list[Span]:
    return [Span(path, f"#{i}", "chunk", 0, 0, piece)
            for i, piece in enumerate(chunk_text(text, CHUNK_TOKENS, CHUNK_OVERLAP))]


def iter_files(repo: Path) -> Iterator[Path]:
    for path in sorted(repo.rglob("*")):
        parts = path.relative_to(repo).parts
        if any(p.startswith(".") or p in SKIP_DIRS or p.endswith(".egg-info") for p in parts[:-1]) or (
                len(parts) > 1 and parts[0] in ROOT_SKIP_DIRS):
            continue
        if path.is_file() and (path.suffix == ".py" or path.suffix in TEXT_SUFFIXES) and not parts[-1].startswith("."):
            if path.stat().st_size <= MAX_BYTES:
                yield path


def repo_spans(repo: str | Path, *, text_files: bool = True) -> list[Span]:
    """Every span of the repository (Python files that do not parse are skipped, as binary files are)."""
    repo = Path(repo)
    if not repo.is_dir():
        raise EvaluationsError("not a folder", where=str(repo), fix="--repo must be the repository's root folder")
    spans: list[Span] = []
    for path in iter_files(repo):
        rel = path.relative_to(repo).as_posix()
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        if path.suffix == ".py":
            try:
                spans.extend(python_spans(rel, text))
            except SyntaxError:
                continue
        elif text_files:
            spans.extend(text_spans(rel, text))
    if not spans:
        raise EvaluationsError("no Python or text files found", where=str(repo), fix="point --repo at a code repository")
    return spans


def code_documents(repo: str | Path) -> list[Document]:
    """The repository as documents, one per span (ids ``path::symbol`` / ``path#n``)."""
    return [span.document() for span in repo_spans(repo)]
