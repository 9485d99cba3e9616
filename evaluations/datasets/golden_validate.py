"""Are a golden file's spans still the code they were written against?

For each expected span, against the repository's current spans (``datasets.code.repo_spans``):

* ``ok``: ``path::symbol`` exists and its sha256 equals ``span_hash``;
* ``changed``: ``path::symbol`` exists with another hash (the code was edited) -> fix: re-check the answer,
  ``--update`` rewrites the hash;
* ``moved``: ``path::symbol`` is gone but a span with the same hash exists elsewhere (renamed or moved, text
  unchanged) -> fix: the new path/symbol, ``--update`` rewrites them when exactly one span matches; or the
  same symbol exists in exactly one other file (moved and edited) -> fix names it (not applied automatically);
* ``missing``: neither -> fix: rewrite the query's spans by hand (close candidates are listed).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from evaluations.datasets.code import Span, repo_spans
from evaluations.datasets.golden_schema import ExpectedSpan, GoldenQuery


@dataclass
class Finding:
    query_id: str
    query: str
    span: ExpectedSpan
    status: str  # ok | changed | moved | missing
    new_hash: str | None = None
    new_path: str | None = None
    new_symbol: str | None = None
    candidates: list[str] = field(default_factory=list)

    @property
    def updatable(self) -> bool:
        """``--update`` applies: a changed hash, or an unambiguous move with the same text."""
        return self.status == "changed" or (self.status == "moved" and self.new_hash == self.span.span_hash)

    def fix(self) -> str:
        if self.status == "changed":
            return f"code changed: check the answer still holds, then --update sets span_hash {self.new_hash[:12]}…"
        if self.status == "moved" and self.updatable:
            return f"moved unchanged to {self.new_path}::{self.new_symbol} (--update rewrites path/symbol)"
        if self.status == "moved":
            return f"now at {self.new_path}::{self.new_symbol} with other text: edit path/symbol, then --update"
        if self.candidates:
            return f"symbol gone; candidates: {', '.join(self.candidates[:3])}"
        return "symbol gone: rewrite this span by hand (or drop it)"

    def to_dict(self) -> dict:
        return {"query_id": self.query_id, "path": self.span.path, "symbol": self.span.symbol, "status": self.status,
                "old_hash": self.span.span_hash, "new_hash": self.new_hash, "new_path": self.new_path,
                "new_symbol": self.new_symbol, "fix": None if self.status == "ok" else self.fix()}


def _candidates(span: ExpectedSpan, spans: list[Span]) -> list[str]:
    name = span.symbol.rsplit(".", 1)[-1]
    same_file = [s.id for s in spans if s.path == span.path and s.symbol.rsplit(".", 1)[-1] == name]
    elsewhere = [s.id for s in spans if s.path != span.path and s.symbol.rsplit(".", 1)[-1] == name]
    return same_file + elsewhere


def validate(queries: list[GoldenQuery], repo: str | Path) -> list[Finding]:
    """One Finding per expected span (module docstring)."""
    spans = repo_spans(repo)
    by_id = {s.id: s for s in spans}
    by_hash: dict[str, list[Span]] = {}
    by_symbol: dict[str, list[Span]] = {}
    for s in spans:
        by_hash.setdefault(s.hash, []).append(s)
        by_symbol.setdefault(s.symbol, []).append(s)
    findings = []
    for query in queries:
        for expected in query.expected_spans:
            finding = Finding(str(query.query_id), query.query, expected, "ok")
            current = by_id.get(expected.id)
            if current is not None:
                if current.hash != expected.span_hash:
                    finding.status, finding.new_hash = "changed", current.hash
            else:
                same_text = by_hash.get(expected.span_hash, [])
                same_name = [s for s in by_symbol.get(expected.symbol, []) if s.path != expected.path]
                target = same_text[0] if len(same_text) == 1 else same_name[0] if len(same_name) == 1 else None
                if target is not None:
                    finding.status, finding.new_hash = "moved", target.hash
                    finding.new_path, finding.new_symbol = target.path, target.symbol
                else:
                    finding.status, finding.candidates = "missing", _candidates(expected, spans)
            findings.append(finding)
    return findings


def apply_updates(queries: list[GoldenQuery], findings: list[Finding]) -> int:
    """Rewrite every updatable span in place (hash, and path/symbol of moves); return how many changed."""
    by_span = {(f.query_id, f.span.path, f.span.symbol): f for f in findings if f.updatable}
    count = 0
    for query in queries:
        for span in query.expected_spans:
            finding = by_span.get((str(query.query_id), span.path, span.symbol))
            if finding is None:
                continue
            span.span_hash = finding.new_hash
            if finding.status == "moved":
                span.path, span.symbol = finding.new_path, finding.new_symbol
            count += 1
    return count
