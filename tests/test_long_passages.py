"""A retrieved passage longer than the checker's window is read in pieces (context relevance), so an answer at its
end is not cut away: real SQuAD 2.0 paragraphs of one article joined into one long chunk."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

from conftest import DATA
from fake_llm_server import FakeLLMServer

from evaluations.core.config import Config, LLMModel
from evaluations.judging.grounded import context_relevance as cr
from evaluations.judging.grounded.claims import sentences
from evaluations.judging.checkers.served_checker import checker_for
from evaluations.judging.checkers.yesno import passage_shared

PARAGRAPHS = DATA / "squad2_dev_cs224n" / "paragraphs.jsonl.gz"


def _article(title: str) -> list[str]:
    with gzip.open(PARAGRAPHS, "rt", encoding="utf-8") as f:
        return [row["text"] for row in map(json.loads, f) if row["title"] == title]


def _config(tmp_path: Path) -> Config:
    return Config.model_validate({"cache": {"path": str(tmp_path / "calls.sqlite")},
                                  "requests": {"retries": 0, "timeout": 60}, "judge": {"retries": 0}})


def test_a_long_passage_is_asked_in_pieces_and_its_last_part_counts(tmp_path):
    paragraphs = _article("Normans")
    last = paragraphs[-1]
    needle = sentences(last)[-1]  # the long chunk's very last sentence
    long_text = " ".join(paragraphs)
    question = "What does the last paragraph of the Normans article say?"
    seen: list[str] = []

    def responder(body: dict) -> str:
        prompt = body["messages"][-1]["content"]
        if not body.get("stream"):  # a new model's first question is streamed, then asked plainly (models.streamed)
            seen.append(prompt)
        return "Yes." if needle in prompt else "No."

    with FakeLLMServer(models=("judge",), responder=responder) as server:
        model = LLMModel(provider="openai", name="judge", base_url=server.openai_url)
        checker = checker_for(model, _config(tmp_path), judge="context_relevance", modes=("text",), max_chars=3000)
        wording = cr.params().wording
        tail = wording.format(question=question)
        parts = cr.pieces(long_text, tail, checker)
        # every piece fits the window whole, and together they are the passage's sentences in order
        assert len(parts) >= len(long_text) // 3000
        assert all(checker.fit(passage_shared(p), tail) == passage_shared(p) for p in parts)
        assert " ".join(parts).split() == " ".join(sentences(long_text)).split()
        # cut to the window, the passage loses its end; read in pieces, the piece holding it says yes
        assert needle not in checker.fit(passage_shared(long_text), tail)
        p, called = cr.ask(question, long_text, wording, scorer=checker)
        assert called and p > 0.5
        assert len(seen) == len(parts) and sum(needle in s for s in seen) == 1
        # a passage that fits is asked once, whole, as before
        seen.clear()
        p_short, _ = cr.ask(question, paragraphs[0], wording, scorer=checker)
        assert len(seen) == 1 and paragraphs[0] in seen[0] and p_short < 0.5


def test_pieces_fit_the_embedded_models_window():
    """The embedded scorer's window is in tokens, the pieces' budget in characters: each piece still fits."""
    from evaluations.judging.checkers.yesno import PASSAGE_SYSTEM, load_scorer

    scorer = load_scorer(PASSAGE_SYSTEM)
    long_text = " ".join(_article("Normans") + _article("Steam_engine"))
    tail = cr.params().wording.format(question="Who was the leader of the Norse raiders?")
    parts = cr.pieces(long_text, tail, scorer)
    assert len(parts) >= 2
    assert all(scorer.fit(passage_shared(p), tail) == passage_shared(p) for p in parts)
    assert " ".join(parts).split() == " ".join(sentences(long_text)).split()


def _without_sentence_ends(title: str) -> str:
    """The article's paragraphs joined, every sentence end (. ! ? before a space) written as a comma: one sentence
    of real text, far longer than the model's window."""
    return re.sub(r"[.!?](?=[\"')\]]*\s)", ",", " ".join(_article(title)))


QUESTION = "What did the monks of Saint-Evroul establish in southern Italy?"
CLAIM = "The monks of Saint-Evroul established a Latin monastery at Sant'Eufemia."


def test_a_long_passage_without_sentence_ends_is_read_to_its_end_in_windows_and_pieces():
    """The Normans article with its sentence ends made commas: one 25k-character sentence whose last part (the
    monks of Saint-Evroul, from character ~22k on) the window cut away, for both reference-free judges. Cut into
    runs of words within the characters the window holds, every part is read whole: the windows and the pieces
    each fit the model's window, and together hold every word of the passage, the last ones included."""
    from evaluations.judging.grounded.faithfulness import ASKS, load_params, windows
    from evaluations.judging.checkers.yesno import PASSAGE_SYSTEM, char_budget, load_scorer

    scorer = load_scorer(PASSAGE_SYSTEM)
    text = _without_sentence_ends("Normans")
    assert len(sentences(text)) == 1 and len(text) > 25_000 and text.index("Saint-Evroul") > 22_000
    tail = ASKS[load_params().ask].format(question=QUESTION, claim=CLAIM)
    assert "Saint-Evroul" not in scorer.fit(passage_shared(text), tail)  # read whole, the end is cut away
    assert windows(text) == [text]  # without a budget: one window, as before

    read = windows(text, budget=char_budget(scorer, text, tail))
    assert len(read) >= len(text) // 6000
    assert all(scorer.fit(passage_shared(w), tail) == passage_shared(w) for w in read)
    assert set(" ".join(read).split()) == set(text.split())
    assert read[-1].split()[-30:] == text.split()[-30:] and "Sant'Eufemia" in read[-1]

    ctail = cr.params().wording.format(question=QUESTION)
    parts = cr.pieces(text, ctail, scorer)
    assert len(parts) >= 2 and all(scorer.fit(passage_shared(p), ctail) == passage_shared(p) for p in parts)
    assert " ".join(parts).split() == text.split()


def test_the_faithfulness_judge_supports_a_claim_from_the_end_of_a_long_sentence_less_passage():
    """One real-model check: a claim stated only at the end of that passage is supported, and the text the model
    read holds it (it read the cut start of the passage before)."""
    from evaluations.judging.grounded.faithfulness import judge_faithfulness
    from evaluations.judging.checkers.yesno import PASSAGE_SYSTEM, load_scorer

    scorer = load_scorer(PASSAGE_SYSTEM)
    read: list[str] = []

    class Recording:  # the embedded scorer, recording the passage text each question is asked about
        id, fit = scorer.id, scorer.fit

        def probability(self, shared: str, tail: str) -> tuple[float, float]:
            read.append(scorer.fit(shared, tail))
            return scorer.probability(shared, tail)

    text = _without_sentence_ends("Normans")
    result = judge_faithfulness(QUESTION, CLAIM, [text], scorer=Recording(), cache=None)
    assert result.applicable and len(result.claims) == 1 and len(read) == 1
    assert "established a Latin monastery at Sant'Eufemia" in read[0] and not read[0].endswith(" ...")
    assert result.claims[0].supported, result.claims[0]
