"""The run report's drill-down shows the answers the reference-free judges reject or cannot judge: a refusal and an
echoed question (faithfulness not applicable, answer relevance rejecting them) are listed with those labels, and an
unsupported claim names its closest passage as such, never as support.

The run is real: SQuAD 2.0 questions with their own paragraph as the retrieved context, answered by a refusal, by
the question itself, and by a sentence of another article's paragraph, judged by the reference-free evaluators
(embedded judge model) through pydantic-evals and written as a run folder by the run's own record/summary code.
Which answer is a refusal, an echo or unrelated is decided here, from the data.
"""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest

from conftest import DATA
from evaluations.reports import write_reports

SQUAD = DATA / "squad2_dev_cs224n" / "questions.jsonl.gz"
REFUSAL = "I don't know."


def squad_articles(count: int) -> list[dict]:
    """The first answerable SQuAD questions of ``count`` distinct articles, each with the sentence of its paragraph
    that holds its gold answer (``sentence``: 8 to 30 words)."""
    rows, seen = [], set()
    with gzip.open(SQUAD, "rt", encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            if row["is_impossible"] or row["title"] in seen:
                continue
            gold = row["answers"]["text"][0]
            sentence = next((s for s in re.split(r"(?<=[.!?])\s+", row["context"])
                             if gold in s and 8 <= len(s.split()) <= 30), None)
            if sentence:
                rows.append({**row, "sentence": sentence})
                seen.add(row["title"])
            if len(rows) == count:
                return rows
    raise AssertionError(f"SQuAD has {count} articles with such a sentence")


@pytest.fixture(scope="module")
def refusal_run(tmp_path_factory) -> dict:
    from pydantic_evals import Case, Dataset

    from evaluations.core.types import Answer, CaseMetadata, CaseOutput, RetrievalInputs, RetrievedChunk
    from evaluations.evaluators.reference_free import Faithfulness
    from evaluations.evaluators.relevance import AnswerRelevance
    from evaluations.results.records import record_from_case
    from evaluations.results.summary import summarize

    mp = pytest.MonkeyPatch()
    mp.setenv("EVALUATIONS_CACHE_DIR", str(tmp_path_factory.mktemp("judge_cache")))  # verdicts judged afresh
    first, other = squad_articles(2)
    answers = {"refusal": REFUSAL, "echo": first["question"], "unrelated": other["sentence"]}
    cases = [Case(name=name, inputs=RetrievalInputs(query=first["question"], case_id=name),
                  metadata=CaseMetadata(query_id=first["id"])) for name in answers]

    async def system(inputs: RetrievalInputs) -> CaseOutput:
        chunk = RetrievedChunk(chunk_id=first["paragraph_id"], doc_id=first["paragraph_id"], text=first["context"],
                               score=1.0)
        return CaseOutput(documents=[chunk.doc_id], scores=[1.0], chunks=[chunk], qa_status="ok", qa_mode="system",
                          answer=Answer(answer=answers[inputs.case_id], confidence=None))

    dataset = Dataset(name="squad-refusals", cases=cases, evaluators=[Faithfulness(), AnswerRelevance()])
    report = dataset.evaluate_sync(system, progress=False)
    mp.undo()
    records = [record_from_case(c) for c in [*report.cases, *report.failures]]
    summary = summarize(records, name="squad-refusals", ks=[], scored=False,
                        extra={"dataset": {"name": "squad2", "queries": len(records)}})
    folder = tmp_path_factory.mktemp("refusal_run")
    (folder / "cases.jsonl").write_text("".join(r.dump_line() for r in records))
    (folder / "summary.json").write_text(summary.dump_json())
    write_reports(folder)
    return {"folder": folder, "records": {r.name: r for r in records}, "answers": answers, "paragraph": first}


def _card(markdown: str, name: str) -> str:
    """The Markdown ``<details>`` block of case ``name`` in the worst cases."""
    worst = markdown[markdown.index("## Worst cases"):]
    start = worst.index(f"<summary><b>{name}</b>")
    return worst[start:worst.index("</details>", start)]


def test_a_refusal_and_an_echo_are_listed_with_their_labels(refusal_run):
    records = refusal_run["records"]
    # what the judges recorded (not the report): neither answer has a claim to check, both answers are rejected
    for name in ("refusal", "echo"):
        assert "faithfulness" not in records[name].judges and records[name].judges["answer_relevance"] == 0.0
    md = (refusal_run["folder"] / "report.md").read_text()
    for name, kind in (("refusal", "refusal"), ("echo", "echo")):
        card = _card(md, name)
        assert f"faithfulness not applicable ({kind})" in card.splitlines()[0]  # why it is listed
        assert f"- **faithfulness**: not applicable ({kind}) — the answer states nothing to check" in card
        assert f"- **answer_relevance**: rejected: {kind} — {kind}:" in card
        assert f"- **answer**: {refusal_run['answers'][name]}" in card
    # counted: the note says how many cases are listed for answers that do not answer (rejected by answer relevance
    # or without a claim to check), counted here from the records
    unanswered = sum(r.judges.get("answer_relevance") == 0.0 or "faithfulness" not in r.judges
                     for r in records.values())
    assert f"the answer does not answer {unanswered}" in md
    # answer relevance is a 1/0 verdict per case, listed as one in the answers table (not as a score)
    answers = md[md.index("## Answers and judges"):]
    row = next(line for line in answers.splitlines() if line.startswith("| answer_relevance |"))
    assert row.split("|")[2].strip() == "verdict", row
    assert "Accuracy per judge: answer_relevance" not in md  # a reference-free verdict is no accuracy


def test_an_unsupported_claim_names_its_closest_passage_not_a_support(refusal_run):
    record = refusal_run["records"]["unrelated"]
    paragraph = refusal_run["paragraph"]["paragraph_id"]
    assert record.claims and not any(c.supported for c in record.claims)  # another article's sentence
    card = _card((refusal_run["folder"] / "report.md").read_text(), "unrelated")
    for i, claim in enumerate(record.claims, 1):
        assert (f"- **claim {i}**: not supported — p {claim.p:.2f} · closest passage {paragraph} (does not support "
                f"it) · {claim.claim}") in card
    assert "supported by passage" not in card


def test_the_page_shows_the_labels_in_chromium(refusal_run, tmp_path):
    from test_reports_browser import CHROMIUM, open_report
    from playwright.sync_api import sync_playwright

    assert Path(CHROMIUM).is_file(), "Debian's chromium is missing: run scripts/setup.sh (apt-get install chromium)"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page, errors, requests = open_report(browser, refusal_run["folder"] / "report.html")
        assert errors == [] and requests == []
        worst = page.locator("#section-worst-cases")
        for name in ("refusal", "echo"):
            card = worst.locator("details.case").filter(has=page.locator(".case-name", has_text=name))
            card.locator("summary").click()
            rows = card.locator("table.judges tbody tr").evaluate_all(
                "rows => rows.map(r => Array.from(r.cells).map(c => c.innerText))")
            assert ["faithfulness", f"not applicable ({name})",
                    "the answer states nothing to check against the context"] in rows
            assert [row[:2] for row in rows if row[0] == "answer_relevance"] == [["answer_relevance",
                                                                                  f"rejected: {name}"]]
        browser.close()


def test_the_report_names_the_judge_model_and_parameters_fitted_on_another(refusal_run, tmp_path):
    """A served judge model gives other figures than the embedded one the shipped parameters were fitted through:
    the report names the model the judges asked and says when its parameters were fitted through another (the
    console and summary.json said it; the report did not). Through the embedded model, no such warning."""
    import shutil

    for checker, warned in (("openai:qwen-coder", True), ("embedded:qwen2.5-coder-1.5b", False)):
        folder = tmp_path / checker.replace(":", "_")
        shutil.copytree(refusal_run["folder"], folder)
        summary = json.loads((folder / "summary.json").read_text())
        summary["run"] = {**summary.get("run", {}), "reference_free_judge": checker, "judge_parameters": {
            "faithfulness": {"file": "judges/faithfulness.json", "fitted_through": "embedded"}}}
        (folder / "summary.json").write_text(json.dumps(summary))
        write_reports(folder)
        for page in ("report.md", "report.html"):
            text = " ".join((folder / page).read_text().split())
            assert f"Judge model: {checker}." in text
            said = f"faithfulness: its parameters were fitted through embedded, not {checker}"
            assert (said in text) == warned, page
