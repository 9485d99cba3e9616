"""A retrieved passage longer than the checker's window is read in pieces (context relevance), so an answer at its
end is not cut away: real SQuAD 2.0 paragraphs of one article joined into one long chunk."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from conftest import DATA
from fake_llm_server import FakeLLMServer

from evaluations.core.config import Config, LLMModel
from evaluations.judging import context_relevance as cr
from evaluations.judging.claims import sentences
from evaluations.judging.served_checker import checker_for
from evaluations.judging.yesno import passage_shared

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
    from evaluations.judging.yesno import PASSAGE_SYSTEM, load_scorer

    scorer = load_scorer(PASSAGE_SYSTEM)
    long_text = " ".join(_article("Normans") + _article("Steam_engine"))
    tail = cr.params().wording.format(question="Who was the leader of the Norse raiders?")
    parts = cr.pieces(long_text, tail, scorer)
    assert len(parts) >= 2
    assert all(scorer.fit(passage_shared(p), tail) == passage_shared(p) for p in parts)
    assert " ".join(parts).split() == " ".join(sentences(long_text)).split()
