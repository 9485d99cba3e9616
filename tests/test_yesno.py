"""The shared yes/no scorer of the reference-free judges: kept passage states give the logits of a fresh pass."""

from __future__ import annotations

import pytest

pytest.importorskip("llama_cpp", reason="llama-cpp-python is a core dependency; scripts/setup.sh installs it")

from evaluations.judging.correctness.embedded import VerdictCache  # noqa: E402
from evaluations.judging.checkers.yesno import PASSAGE_SYSTEM, YesNoScorer, cached_probability, load_scorer  # noqa: E402

A = "Passage:\nThe Eiffel Tower was completed in 1889 for the World's Fair in Paris.\n\n"
B = "Passage:\nMount Everest is 8,849 metres high and lies on the border of Nepal and China.\n\n"
TAIL = "Statement: {s}\nDoes the passage support the statement?"


def _fresh(scorer) -> None:
    """Nothing of an earlier pass left: no KV cache, no kept passage state."""
    scorer.model.llm.reset()
    scorer.model.states.clear()


def test_reused_states_equal_a_fresh_pass(tmp_path):
    """The first ask is a fresh pass; the others reuse the KV cache in place (ask 1: the system prompt) or a kept
    passage state (asks 2-4: A's, B's, A's), and each way equals a fresh pass of the same prompt: ask 1 and ask 3
    (B's kept state) against fresh passes of their own, ask 4 (A's kept state, the first question again) against
    ask 0. Ask 2 reads A's kept state as ask 4 does, so it gets no fresh pass of its own (each costs ~2 s)."""
    scorer = load_scorer(PASSAGE_SYSTEM)
    asks = [(A, "The tower was completed in 1889."), (B, "Everest is in Nepal."), (A, "The tower is in Rome."),
            (B, "Everest is 5,000 metres high."), (A, "The tower was completed in 1889.")]
    _fresh(scorer)
    got = [scorer.probability(shared, TAIL.format(s=s))[0] for shared, s in asks]
    assert got[0] == pytest.approx(got[4], abs=1e-6)  # the same question after others: state restored
    for (shared, s), p in zip(asks[1:4:2], got[1:4:2]):  # asks 1 and 3
        _fresh(scorer)
        assert scorer.probability(shared, TAIL.format(s=s))[0] == pytest.approx(p, abs=1e-4)
    # the model reads the passage: supported statements above their contradicted twins
    assert got[0] > got[2] and got[1] > got[3]
    # a kept state is the KV cells of the tokens read, not the logits of each position (one row of n_vocab floats
    # a token, 0.6 MB for this model: Llama.save_state's copy made keeping and restoring a prefix take seconds)
    row = scorer.model.llm.n_vocab() * 4
    assert scorer.model.states and all(0 < k.size < row * len(k.tokens) / 4 for k in scorer.model.states.values())


def test_a_kept_state_llama_cpp_cannot_read_is_read_again():
    """A kept passage state cut short (llama.cpp refuses it) is dropped and the passage read again: the same P(yes)
    as the first pass, and the state kept again whole."""
    from evaluations.models.llamacpp import KeptSequence

    scorer = load_scorer(PASSAGE_SYSTEM)
    _fresh(scorer)
    tail = TAIL.format(s="The tower was completed in 1889.")
    first = scorer.probability(A, tail)[0]
    scorer.probability(B, tail)  # B's passage now in the KV cache: A's must come from its kept state
    for key, kept in list(scorer.model.states.items()):
        scorer.model.states[key] = KeptSequence(kept.cells, 16, kept.tokens)
    assert scorer.probability(A, tail)[0] == pytest.approx(first, abs=1e-6)
    assert any(k.size > 16 for k in scorer.model.states.values())


def test_cached_probability_makes_no_second_call(tmp_path):
    scorer = load_scorer(PASSAGE_SYSTEM)
    cache = VerdictCache(tmp_path / "v.sqlite")
    p1, called1 = cached_probability(scorer, A, TAIL.format(s="It is in Paris."), cache)
    before = scorer.calls
    p2, called2 = cached_probability(scorer, A, TAIL.format(s="It is in Paris."), cache)
    assert (called1, called2) == (True, False) and scorer.calls == before and p1 == p2


SMALL_WINDOW = 128  # tokens: the cut passage is read in one short pass (the default 2,048-token one is ~20-40 s)


def test_long_passage_is_cut_to_the_window():
    """The judges' scorer (a 2,048-token window) cuts a long passage to the room its window leaves beside the tail;
    the same model loaded with a 128-token window (the same code, another ``n_ctx``) cuts it to its own room and
    reads the cut passage in one pass."""
    scorer = load_scorer(PASSAGE_SYSTEM)
    tail = TAIL.format(s="The tower was completed in 1889.")
    long = "Passage:\n" + "The tower is made of iron. " * 800 + "\n\n"
    cut = scorer.fit(long, tail)
    assert len(scorer.text_tokens(cut)) <= scorer.room(tail) < len(scorer.text_tokens(long)) and cut.endswith(" ...")
    assert isinstance(scorer, YesNoScorer) and scorer.n_ctx == 2048
    small = load_scorer(PASSAGE_SYSTEM, n_ctx=SMALL_WINDOW)
    assert small.model is not scorer.model and small.room(tail) < scorer.room(tail)
    small_cut = small.fit(long, tail)
    assert len(small.text_tokens(small_cut)) <= small.room(tail) and small_cut.endswith(" ...")
    assert small.room(tail) - len(small.text_tokens(small_cut)) < 8  # cut to the room, not far below it
    assert 0.0 <= small.probability(long, tail)[0] <= 1.0


def test_each_text_is_tokenized_once_per_question(monkeypatch):
    """probability() tokenizes the tail and the passage once each (it tokenized the tail three times and the passage
    twice); a passage cut to the window is tokenized once more, as it is read (the 128-token window's scorer: a
    short pass)."""
    scorer = load_scorer(PASSAGE_SYSTEM, n_ctx=SMALL_WINDOW)
    tail = TAIL.format(s="The tower was completed in 1889.")
    texts: list[bytes] = []
    tokenize = scorer.model.llm.tokenize
    monkeypatch.setattr(scorer.model.llm, "tokenize",
                        lambda text, *a, **k: texts.append(text) or tokenize(text, *a, **k))
    scorer.probability(A, tail)
    assert sorted(texts) == sorted([A.encode(), tail.encode()])
    long = "Passage:\n" + "The tower is made of iron. " * 800 + "\n\n"
    texts.clear()
    scorer.probability(long, tail)
    assert len(texts) == 3 and texts.count(long.encode()) == 1 and texts[-1].endswith(b" ...")


def test_inner_layers_are_read_at_each_prompts_last_token():
    """``next_logits(..., layers=...)`` reads layers' outputs (``models.llamacpp.LayerTap``) at each prompt's last
    token. The oracle for the last layer is llama.cpp's own embeddings output there, which is that layer's output
    through the model's final RMS norm: ``hidden = l / rms(l) * w`` with one weight vector ``w`` for every prompt.
    ``w`` is taken from one prompt and must give the others' hidden states from their tapped rows, read side by side
    and one prompt at a time (llama.cpp's arithmetic differs a little with the batch: 0.1 in a logit); tapping
    changes no logit or hidden state of the same batch."""
    import numpy as np

    from evaluations.models.llamacpp import require_llama_cpp

    scorer = load_scorer(PASSAGE_SYSTEM)
    last = require_llama_cpp().llama_cpp.llama_model_n_layer(scorer.model.llm.model) - 1
    layers = (8, last)
    asks = [(A, TAIL.format(s=s)) for s in ("The tower was completed in 1889.", "The tower is in Rome.")]
    together = scorer.next_logits(asks, hidden=True, layers=layers)
    alone = scorer.next_logits(asks[1:], hidden=True, layers=layers)
    plain = scorer.next_logits(asks, hidden=True)
    for (logits, hidden, rows), (logits0, hidden0) in zip(together, plain):
        assert np.array_equal(logits, logits0) and np.array_equal(hidden, hidden0)  # the tap changes nothing
        assert set(rows) == set(layers) and all(rows[k].shape == hidden.shape for k in layers)

    def normed(row):
        return row / np.sqrt(np.mean(row ** 2) + 1e-6)

    weight = together[0][1] / normed(together[0][2][last])
    for _, hidden, rows in together[1:] + alone:
        assert np.linalg.norm(normed(rows[last]) * weight - hidden) < 0.02 * np.linalg.norm(hidden)
    # another prompt's row does not fit: the rows are each prompt's own
    assert np.linalg.norm(normed(together[0][2][last]) * weight - together[1][1]) > 0.1 * np.linalg.norm(
        together[1][1])
    assert not np.allclose(together[0][2][8], together[1][2][8], atol=1e-3)
