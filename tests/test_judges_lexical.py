"""Lexical and semantic answer judges on hand-checked real EVOUNA rows, and their pydantic-evals evaluators."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic_evals import Case, Dataset

from evaluations.judging.correctness import lexical
from evaluations.judging.labels.data import load_labelled
from evaluations.evaluators.answers import Containment, ExactMatch, JudgeAgreement, KeywordOverlap, TokenF1
from evaluations.judging.basics.text import STOPWORDS, keywords, normalize, split_alternatives, tokens
from evaluations.core.types import Answer, CaseMetadata, CaseOutput, RetrievalInputs

EVOUNA = Path(__file__).resolve().parents[2] / "shared" / "data" / "evouna"


@pytest.fixture(scope="module")
def nq_rows():
    """The first labelled NQ answers, keyed by (line, system)."""
    return {(e.source.rsplit(":", 1)[1], e.system): e for e in load_labelled(EVOUNA / "NQ.jsonl.gz", limit=60)}


@pytest.fixture(scope="module")
def tq_rows():
    return {(e.source.rsplit(":", 1)[1], e.system): e for e in load_labelled(EVOUNA / "TQ.jsonl.gz", limit=60)}


def test_normalisation_is_squad_style_with_accent_folding():
    assert normalize("The  Wilhelm Conrad Röntgen!") == "wilhelm conrad rontgen"
    assert normalize("U.S. and an apple, 1,000") == "us and apple 1000"
    assert normalize("“Sunset Boulevard.”") == "sunset boulevard"
    assert tokens("A Tale of Two Cities") == ["tale", "of", "two", "cities"]
    assert keywords("The man behind The Chipmunks was David Seville") == {
        "man", "behind", "chipmunks", "david", "seville"
    }
    assert {"the", "was", "of", "who"} <= STOPWORDS and "1901" not in STOPWORDS
    assert split_alternatives("Scorpio/Skorpio/Scorpio (disambiguation)/Scorpio") == [
        "Scorpio", "Skorpio", "Scorpio (disambiguation)"
    ]


def test_first_nq_row_partial_name(nq_rows):
    # gold "Wilhelm Conrad Röntgen"; FiD answered "Wilhelm Röntgen" and the human said correct.
    row = nq_rows[("1", "fid")]
    assert row.references == ("Wilhelm Conrad Röntgen",) and row.answer == "Wilhelm Röntgen" and row.label is True
    assert lexical.keyword_overlap(row.references, row.answer) == pytest.approx(2 / 3)
    assert not lexical.keyword_correct(row.references, row.answer)  # 0.667 is not > 0.7: the classic rule misses it
    assert lexical.keyword_correct(row.references, row.answer, threshold=0.6)
    assert lexical.token_f1(row.references, row.answer) == pytest.approx(0.8)  # P = 2/2, R = 2/3
    assert lexical.token_recall(row.references, row.answer) == pytest.approx(2 / 3)
    assert not lexical.exact_match(row.references, row.answer)
    assert not lexical.containment(row.references, row.answer)
    # GPT-4 spelled the full name inside a sentence: contained, F1 low because the answer is long.
    gpt4 = nq_rows[("1", "gpt4")]
    assert lexical.containment(gpt4.references, gpt4.answer) and lexical.keyword_correct(gpt4.references, gpt4.answer)
    assert lexical.token_f1(gpt4.references, gpt4.answer) < 0.3


def test_tq_rows_with_alternatives(tq_rows):
    chipmunks = tq_rows[("1", "gpt35")]  # "... also known as "David Seville", who provided the voices ..."
    assert chipmunks.label and lexical.containment(chipmunks.references, chipmunks.answer)
    # 18 answer tokens after normalisation (the two "the" dropped), 2 in common with the 2-token gold
    assert lexical.token_f1(chipmunks.references, chipmunks.answer) == pytest.approx(2 * (2 / 18) / (2 / 18 + 1))
    wrong = tq_rows[("1", "chatgpt")]  # "created by Ross Bagdasarian Sr. in 1958": human says incorrect
    assert not wrong.label
    assert lexical.keyword_overlap(wrong.references, wrong.answer) == 0.0 and not lexical.containment(
        wrong.references, wrong.answer
    )
    scorpio = tq_rows[("2", "gpt35")]  # gold "Scorpio/Skorpio/Scorpio (disambiguation)", max over alternatives
    assert scorpio.references == ("Scorpio", "Skorpio", "Scorpio (disambiguation)")
    assert lexical.keyword_overlap(scorpio.references, scorpio.answer) == 1.0
    assert lexical.keyword_overlap(["Scorpio (disambiguation)"], scorpio.answer) == 0.5
    sunset = tq_rows[("3", "fid")]  # "Sunset Boulevard" is one of the gold alternatives
    assert lexical.exact_match(sunset.references, sunset.answer)
    assert lexical.token_f1(sunset.references, sunset.answer) == 1
    refusal = tq_rows[("3", "newbing")]  # "I’m sorry, but I couldn’t find any information ..."
    assert not refusal.label and not lexical.containment(refusal.references, refusal.answer)


def test_containment_respects_word_boundaries():
    assert lexical.containment(["US"], "It was the U.S. Army")
    assert not lexical.containment(["US"], "a famous bus driver")
    assert not lexical.containment([], "anything") and not lexical.exact_match(["x"], "")
    assert lexical.keyword_overlap(["The Who"], "The Who played") == 1.0  # all-stopword gold keeps its words


def test_classic_rules_on_the_first_600_labelled_nq_answers():
    """Accuracies of the rules against human labels on a real slice: plausible, and ordered as the literature says."""
    rows = load_labelled(EVOUNA / "NQ.jsonl.gz", limit=600)
    acc = {
        name: sum(rule(e.references, e.answer) == e.label for e in rows) / len(rows)
        for name, rule in {
            "keyword": lexical.keyword_correct,
            "em": lexical.exact_match,
            "containment": lexical.containment,
        }.items()
    }
    assert 0.75 < acc["keyword"] < 0.95
    assert 0.75 < acc["containment"] < 0.95
    assert acc["em"] < 0.5 < acc["keyword"]  # long LLM answers almost never match exactly


def test_semantic_similarity_on_real_rows(tq_rows):
    from evaluations.judging.correctness.semantic import semantic_similarity, semantic_similarity_batch

    right, wrong = tq_rows[("2", "gpt35")], tq_rows[("2", "gpt4")]  # Scorpio vs Sagittarius
    s_right = semantic_similarity(right.references, right.answer)
    s_wrong = semantic_similarity(wrong.references, wrong.answer)
    assert 0 < s_wrong < s_right <= 1
    assert semantic_similarity("Sunset Boulevard", "Sunset Boulevard") == pytest.approx(1.0, abs=1e-5)
    batch = semantic_similarity_batch([right.references, wrong.references, []], [right.answer, wrong.answer, "x"],
                                      cache_path=False)
    assert batch[0] == pytest.approx(s_right, abs=1e-5) and batch[1] == pytest.approx(s_wrong, abs=1e-5)
    assert batch[2] == 0.0


def _run_dataset(rows, with_labels: bool):
    cases = [
        Case(
            name=f"{e.source}:{e.system}",
            inputs=RetrievalInputs(query=e.question),
            metadata=CaseMetadata(
                query_id=e.group, answers=list(e.references), label=e.label if with_labels else None
            ),
        )
        for e in rows
    ]
    cases.append(Case(name="no-gold", inputs=RetrievalInputs(query="q"), metadata=CaseMetadata(query_id="none")))
    answers = {e.question: e.answer for e in rows}

    async def task(inputs: RetrievalInputs) -> CaseOutput:
        if inputs.query not in answers:
            return CaseOutput()  # QA skipped: no answer
        return CaseOutput(answer=Answer(answer=answers[inputs.query]))

    dataset = Dataset(
        name="evouna-nq-fid",
        cases=cases,
        evaluators=[KeywordOverlap(), TokenF1(), ExactMatch(), Containment()],
        report_evaluators=[JudgeAgreement(resamples=200)],
    )
    return dataset.evaluate_sync(task, progress=False)


def test_evaluators_in_a_pydantic_evals_run(nq_rows):
    # one answer per question (the FiD one) so the task can look answers up by question
    rows = [e for (line, system), e in nq_rows.items() if system == "fid"][:8]
    report = _run_dataset(rows, with_labels=True)
    by_name = {c.name: c for c in report.cases}
    assert by_name["no-gold"].scores == {} and by_name["no-gold"].assertions == {}
    first = by_name[f"{rows[0].source}:fid"]  # Wilhelm Röntgen
    assert first.scores["keyword_overlap"].value == pytest.approx(2 / 3)
    assert first.assertions["keyword_correct"].value is False
    assert "0.67 <= 0.7" in first.assertions["keyword_correct"].reason
    assert first.scores["token_f1"].value == pytest.approx(0.8)
    assert set(first.assertions) == {"keyword_correct", "exact_match", "contains_gold"}

    table = next(a for a in report.analyses if a.type == "table")
    assert [r[0] for r in table.rows] == ["keyword_correct", "exact_match", "contains_gold"]
    expected_acc = sum(lexical.keyword_correct(e.references, e.answer) == e.label for e in rows) / len(rows)
    keyword_row = table.rows[0]
    assert keyword_row[1] == len(rows) and keyword_row[2] == 0
    assert keyword_row[3].startswith(f"{expected_acc:.3f}")
    matrices = [a for a in report.analyses if a.type == "confusion_matrix"]
    assert len(matrices) == 3 and sum(map(sum, matrices[0].matrix)) == len(rows)


def test_judge_agreement_reports_pass_rates_without_labels(nq_rows):
    rows = [e for (line, system), e in nq_rows.items() if system == "fid"][:8]
    report = _run_dataset(rows, with_labels=False)
    (table,) = report.analyses
    assert table.title == "Judge pass rates"
    rates = {r[0]: r for r in table.rows}
    expected = sum(lexical.containment(e.references, e.answer) for e in rows) / len(rows)
    assert rates["contains_gold"][1:] == [len(rows), 1, round(expected, 4)]  # the no-gold case is "not judged"


def test_judge_agreement_gives_no_table_when_no_case_has_a_verdict(nq_rows):
    """Questions without gold answers (the rows of a questions-only run) give no verdict to any judge: no table at
    all, not an empty "Judge pass rates" table under the console's answers."""
    rows = [e for (line, system), e in nq_rows.items() if system == "fid"][:3]
    cases = [Case(name=f"q{i}", inputs=RetrievalInputs(query=e.question), metadata=CaseMetadata(query_id=f"q{i}"))
             for i, e in enumerate(rows)]
    answers = {e.question: e.answer for e in rows}

    async def task(inputs: RetrievalInputs) -> CaseOutput:
        return CaseOutput(answer=Answer(answer=answers[inputs.query]))

    dataset = Dataset(name="no-gold", cases=cases, evaluators=[KeywordOverlap(), TokenF1(), ExactMatch(), Containment()],
                      report_evaluators=[JudgeAgreement(resamples=50)])
    report = dataset.evaluate_sync(task, progress=False)
    assert all(c.assertions == {} for c in report.cases) and len(report.cases) == 3
    assert report.analyses == []


def test_semantic_and_offline_evaluators_reuse_cached_embeddings(tq_rows, tmp_path, monkeypatch):
    """In a pydantic-evals run the semantic and offline judges give what the functions give; a second run of
    the same answers takes every embedding from the on-disk cache (the model is never asked); cache=False
    always asks it."""
    import evaluations.judging.correctness.semantic as semantic
    from evaluations.evaluators.answers import OfflineJudge, SemanticSimilarity
    from evaluations.judging.correctness.offline import load_model

    monkeypatch.setenv("EVALUATIONS_CACHE_DIR", str(tmp_path))
    rows = [e for (line, system), e in tq_rows.items() if system == "gpt35"][:6]
    answers = {e.question: e.answer for e in rows}
    cases = [Case(name=e.source, inputs=RetrievalInputs(query=e.question),
                  metadata=CaseMetadata(query_id=e.group, answers=list(e.references))) for e in rows]

    async def task(inputs: RetrievalInputs) -> CaseOutput:
        return CaseOutput(answer=Answer(answer=answers[inputs.query]))

    embedded: list[int] = []
    real = semantic._get_embedder()

    class Counting:
        def embed(self, texts, **kw):
            embedded.append(len(texts))
            return real.embed(texts, **kw)

    monkeypatch.setattr(semantic, "_get_embedder", lambda: Counting())

    def run(cache: bool):
        judges = [SemanticSimilarity(cache=cache), OfflineJudge(cache=cache)]
        dataset = Dataset(name="tq", cases=cases, evaluators=judges)
        return {c.name: c for c in dataset.evaluate_sync(task, progress=False).cases}

    first = run(cache=True)
    assert sum(embedded) > 0 and semantic.default_cache_path().is_file()
    embedded.clear()
    second = run(cache=True)
    assert embedded == []  # every vector came from the cache
    third = run(cache=False)
    assert sum(embedded) > 0
    judge = load_model()
    for e in rows:
        expected = semantic.semantic_similarity(e.references, e.answer)
        probability, verdict = judge.judge(e.references, e.answer, question=e.question)
        for report in (first, second, third):
            case = report[e.source]
            assert case.scores["semantic_similarity"].value == pytest.approx(expected, abs=1e-6)
            assert case.scores["offline_p_correct"].value == pytest.approx(probability, abs=1e-9)
            assert case.assertions["offline_correct"].value is verdict
