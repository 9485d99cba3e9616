"""A run's warnings quote the user's ids as they are: an id holding rich markup ("[/x]", "app/[slug]/page.md")
was read as markup, so the run ended in rich's MarkupError (exit 1) after writing its folder, or printed the id
mangled."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from test_cli_retrieval import REPO
from inprocess import run_evaluations


def test_an_id_that_looks_like_markup_is_printed_as_it_is(tmp_path):
    (tmp_path / "corpus.jsonl").write_text(
        json.dumps({"id": "d1", "text": "The Eiffel Tower is in Paris. It was completed in 1889."}) + "\n"
        + json.dumps({"id": "d2", "text": "Mount Fuji is the highest mountain in Japan."}) + "\n")
    (tmp_path / "questions.jsonl").write_text(
        json.dumps({"id": "q1", "query": "Where is the Eiffel Tower?", "relevant_doc_ids": ["d1"]}) + "\n"
        + json.dumps({"id": "q2", "query": "Which is the highest mountain in Japan?", "relevant_doc_ids": ["d2"]})
        + "\n")
    (tmp_path / "markup_system.py").write_text(
        "def search(request):\n"
        "    return {'retrieved': [{'id': 'd1', 'text': 'c'}, {'id': '[/x]', 'text': 'a'},\n"
        "                          {'id': 'app/[slug]/page.md', 'text': 'b'}]}\n")
    out = tmp_path / "run"
    (tmp_path / "markup_only.py").write_text("def search(request):\n    return {'retrieved': [{'id': '[/x]'}]}\n")
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}:{REPO}"}

    def run(system: str, out: Path) -> subprocess.CompletedProcess:
        return run_evaluations(["run", str(tmp_path / "questions.jsonl"), "--corpus",
             str(tmp_path / "corpus.jsonl"), "--system", system, "--skip-qa", "--no-reference-free", "--no-progress",
             "--out", str(out)], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=600)

    # every retrieved id unknown: the ids-differ warning, then exit 3 (it was rich's MarkupError, exit 1)
    proc = run("markup_only:search", tmp_path / "only")
    assert proc.returncode == 3 and "Traceback" not in proc.stderr, proc.stderr
    assert any(line.startswith("warning:") and "'[/x]'" in line for line in proc.stderr.splitlines()), proc.stderr
    proc = run("markup_system:search", out)
    assert proc.returncode == 0, proc.stderr
    assert "MarkupError" not in proc.stderr and "Traceback" not in proc.stderr
    warning = next(line for line in proc.stderr.splitlines() if line.startswith("warning:"))
    assert "'[/x]'" in warning and "'app/[slug]/page.md'" in warning, warning
    assert proc.stderr.strip().splitlines()[-1].startswith(f"wrote {out}/")
