"""Context relevance: is each retrieved passage needed to answer the question? (reference-free, per chunk)

Per passage, one question to the embedded chat model through the shared yes/no scorer (``judging.checkers.yesno``, system
prompt ``PASSAGE_SYSTEM``, ``shared = "Passage:\\n{text}\\n\\n"`` so faithfulness and context relevance share the
passage's evaluation; a wording listed in ``SYSTEMS`` is asked under its own system prompt, on the same loaded
model: ``system_for``, ``yesno.for_system``), ``tail`` = the fitted wording with the question, and lexical signals
of the pair:

* ``llm_logit``: log(p / (1 − p)) of the model's P(yes), p clipped to [1e-4, 1 − 1e-4];
* ``term_coverage``: share of the question's informative terms (non-stopwords, stemmed) that occur in the passage;
* ``phrase_coverage``: share of the question's adjacent informative-term pairs that occur adjacent (in order, at
  most one word between) in the passage: the same words in the same relation, not merely the same topic;
* ``tf_saturation``: BM25's saturated term frequency, averaged over the question's informative terms,
  Σ_t tf_t (k1 + 1) / (tf_t + k1 (1 − b + b · len / AVG_LEN)) / (k1 + 1) / |terms| (k1 = 1.2, b = 0.75);
* ``answer_type``: for who / when / how many / how much / what year questions, +1 when a value of the asked type
  (a name, a year or date, a number) occurs within WINDOW words of a question term in the passage, −1 when none
  does; 0 for other questions.

No signal is normalised within the case (e.g. a passage's BM25 score over the case's best): a case whose
passages are all off-topic (a random retriever) would still get a "best" passage, and the labelled pairs, one
needed passage beside one distractor per question, would reward exactly that comparison. Every feature reads
one (question, passage) pair, so the model's verdict does not depend on the other passages retrieved with it (the
set stage, last below, is what reads the set).

Across passages (``sole_sources``): a question that names two or more names (a comparison, "Which magazine was
started first, Arthur's Magazine or First for Women?"; a yes/no question about several, "Are Tollan Water and Loch
Brae both reservoirs?") needs a passage about each, and a passage about one of them cannot answer alone, so the
model calls it not needed. A passage the model did not call relevant is relevant (``sole_source``) when it is the
only one of the list naming one of the question's names while another passage names another. On the multi-hop
probe (``benchmarks/faithfulness_multihop.py``) comparison passages went from 13 to 26 of 30 relevant and yes/no
questions' from 2 to 16 of 20; over SQuAD 2.0's answerable questions with two other paragraphs of the same article
beside their own, 5 of 5,820 other paragraphs are marked (13 of 26,190 with nine; one seeded draw, 12 and 16
before a name of only nationality words, ``claims.DEMONYMS``, stopped counting). A bridge's second passage (about
an entity the question does not name) is not reached by this rule: joining passages through a shared name marked
64 of 120 same-article distractors.

Then p(relevant) = σ(b + Σ_j w_j (x_j − μ_j) / s_j) and the verdict is p ≥ threshold, with (wording, μ, s, w, b,
threshold) read from ``judges/context_relevance.json`` (``judging.basics.shipped``; fitted by ``fit`` in
``benchmarks/context_relevance.py --write-params`` on hand-labelled pairs, never at run time). A case's score is
context precision@k = relevant passages / passages judged; ``first_relevant_rank`` is the 1-based rank of the first
relevant one. No passage: not applicable. A passage with no text is not relevant without a model call. A passage
longer than the model's window is asked in pieces of consecutive sentences that fit, P(yes) the highest piece's
(``pieces``); the lexical signals read the whole passage. On the embedded model a case's passages (and pieces) not
in the verdict store are read in one batched pass (``ask_set``, ``yesno.cached_probabilities``): each prompt is the
one it is alone, in a sequence of its own beside the others, so the P(yes) are the same up to batched rounding
(``judging.checkers.yesno``). Tried and dropped (``benchmarks/NOTES.md``): the question first, read once for the
set, each passage after it; on 120 labelled pairs the ROC AUC of its P(yes) was 0.81 against 0.90 for the shipped
wording, with the question after the passage.

A served checker asks in the *conversation form* (``ContextParams.form``, ``judges/context_relevance_served.json``,
``params_for``): the question continues the QA conversation, the QA agent's own system prompt and first user turn
(``core.context``: the retrieved passages as ``[id] text`` blocks, then the question) followed by the user turn
"Is passage [{id}] needed …" (``ask_in_conversation``). Its P(yes) takes the place of the passage form's in
``llm_logit``; the lexical signals are the same. A server that keeps the last prompt's prefix (llama.cpp's,
Ollama) has just read that opening for the answer, so each passage costs its question's few tokens instead of a
reading of its own (``benchmarks/served_judging.py``). The passages are the whole retrieved set, so the model reads
each beside the others. The passages that do not fit the checker's ``conversation_chars`` (9,000 characters) beside
the question, in rank order, are each asked in a conversation of their own (the context that one passage). The
embedded model keeps the passage form: its parameters and figures are unchanged. Through Qwen2.5-Coder-1.5B behind
llama.cpp's server, the conversation form agrees with the 360 labelled pairs on 0.797 with the passage form's weights
(a refit: 0.789 held out; the passage form through the same server 0.786, refitted 0.806), so its file keeps them.

The cross-passage rules (``sole_sources`` above and the set stage below) are for a query that asks something
(``question_forms.asks``: a "?", "what", or a wh-word, an auxiliary or a request first). A claim to check or a
keyword query is judged passage by passage: each passage is evidence or not on its own. On SciFact's held-out claims
the two rules had joined 19 of 300 top-5 abstracts, 3 of them in the qrels. Such a query is also held to its own
threshold when the file has one (``ContextParams.claim_threshold``, fitted on read SciFact design pairs by
``benchmarks/relevance_outside.py fit_claim_threshold``): the passage model over-accepts abstracts on a claim's
subject that report another relation.

The set stage (``set_features``, ``SetParams``, ``judges/context_sets.json``): a passage needed only together with
another is judged beside the set. For each passage, with p1 its probability above, and its *subject* the name it
opens by defining (at most ``SUBJECT_WORDS`` words, then "(", ",", is / was / are / were / has / had: "Robert
Zemeckis (born 1952) is ...", ``_SUBJECT``), less the question's words:

* ``p1_logit``: log(p1 / (1 − p1)), clipped as ``llm_logit``;
* ``name_share``: over the question's names (``claims.name_words``) that at most half of the set has, the highest
  share of a name's words (of three letters or more) the passage has ("Kenneth Charles Loach" holds one of the two
  of "Ken Loach"); a one-word name that is only the question's capitalised first word, written in lower case by the
  passages ("Cells undergoing ..."), is no name;
* ``only_holder``: 1 when the passage is the only one of the set with a word of one of those names;
* ``linked``: over the other passages called relevant, the highest p1 × the share of this passage's subject words
  that passage has: the bridge of a multi-hop question, a passage about the entity a relevant passage names ("...
  directed by Robert Zemeckis" then "Robert Zemeckis (born 1952) is ...");
* ``mentions``: the same the other way round: p1 of a relevant passage × the share of its subject words this
  passage has;
* ``pair_gain``: over the other passages tied to this one by a subject (all of one's subject words are in the
  other), the largest gain in ``term_coverage`` of the question by the two read together over the better of the two
  alone: the two hops of a bridge question when neither is called relevant ("The music for the game was composed
  by Nobuo Uematsu." and "Nobuo Uematsu (born 1959) is a Japanese video game composer, best known for ... Final
  Fantasy");
* ``pronoun_cover``: the passage's ``term_coverage`` when it opens with a pronoun (he, she, it, they or their
  possessives, after at most an opening phrase and a comma: "In 2016, she also appeared ..."), else 0: a sentence
  cut from a paragraph about someone it does not name, whom the question may name ("He then joined The Dillards in
  1974." for "... the band that Billy Ray Latham joined in 1974");
* ``gain_over_relevant``: the ``term_coverage`` of the question by the other passages called relevant and this
  one together, less theirs without it: what is still asked that this passage holds (a passage adding nothing to
  what the relevant ones already cover is not needed).

The first and the last weigh a joining; the other six are the set signals (``SET_SIGNALS``), which tie a passage
to the question or to a relevant passage.

p_set = σ(b + Σ w_j (x_j − μ_j) / s_j); a passage not already relevant becomes relevant (``joined``) when one of
the set signals (``SET_SIGNALS``) is above 0 and p_set ≥ the set threshold (a list of two passages or more; one
passage alone has nothing to be read beside). The set stage only adds: it makes no model call, and a passage tied
to no name of the question and to no relevant passage keeps its verdict. In a set of two passages or more, a
question's passage is relevant from the stage's own passage threshold on (``SetStage.passage_threshold``, when lower than the passage
model's: that one was fitted on single pairs for accuracy, this one with the stage for balanced accuracy over whole
sets, where 2 passages of 10 are needed). Fitted by ``scripts/fit_context_sets.py`` on the first 200 sets of the
design split of ``datasets/multihop`` (HotpotQA retrieved sets: 2 needed passages, 8 hard distractors): on
question-grouped 5-fold cross-validation, balanced accuracy 0.885 at the passage model's threshold 0.52 and 0.896 at
0.43 (fitted on sets 0-99 and read on 100-199, and the other way round, 0.889 / 0.891; before
``gain_over_relevant`` 0.881 at 0.42 and 0.881 / 0.883; before ``pair_gain`` and ``pronoun_cover`` 0.870 at 0.44
and 0.871 / 0.874); the held-out splits are for reporting only.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel

from evaluations.judging.correctness.embedded import VerdictCache
from evaluations.judging.basics.fitted import LogisticParams, llm_logit
from evaluations.judging.basics.passages import Passage
from evaluations.judging.basics.question_forms import asks
from evaluations.judging.basics.text import STOPWORDS, normalize

__all__ = [
    "FEATURES", "WORDINGS", "ChunkVerdict", "ContextRelevance", "ContextParams", "judge_context_relevance",
    "params", "params_for", "fit", "features", "feature_matrix", "ask", "ask_set", "ask_in_conversation", "pieces",
    "PARAMS_FILE", "SERVED_PARAMS_FILE", "sole_sources", "RELEVANCE_SYSTEM", "SYSTEMS", "system_for",
    "SET_FEATURES", "SET_SIGNALS", "SET_PARAMS_FILE", "SetParams", "SetStage", "set_features", "set_signal",
    "set_params", "fit_set",
]

PARAMS_FILE = "context_relevance.json"
SERVED_PARAMS_FILE = "context_relevance_served.json"  # the conversation form, for served checkers
SET_PARAMS_FILE = "context_sets.json"
SUBJECT_WORDS = 4  # a passage's subject is a name of at most this many words
#: a passage that opens by defining a name ("Kenneth Charles Loach (born 17 June 1936) is ...", "Batwoman is a ...",
#: "The Southern Baptist Theological Seminary (SBTS), in Louisville, ...") is about that name: its subject
_SUBJECT = re.compile(r"^(?:The\s+)?((?:[A-Z][\w'’.&-]*\s+){0,5}?[A-Z][\w'’.&-]*)"
                      r"\s*(?:\(|,|\s(?:is|was|are|were|has|had)\b)")
SET_FEATURES: tuple[str, ...] = ("p1_logit", "name_share", "only_holder", "linked", "mentions", "pair_gain",
                                 "pronoun_cover", "gain_over_relevant")
#: the set signals: a passage may be joined only when one of these is above 0 (``set_signal``); ``p1_logit`` and
#: ``gain_over_relevant`` weigh a joining, they tie a passage to nothing
SET_SIGNALS: tuple[str, ...] = ("name_share", "only_holder", "linked", "mentions", "pair_gain", "pronoun_cover")
#: a passage that opens with a pronoun, after at most a short opening phrase and a comma ("In 2016, she ...")
_PRONOUN_FIRST = re.compile(r"^(?:[A-Z][^,]{0,40},\s+)?(?:he|she|it|they|his|her|its|their)\b", re.IGNORECASE)
FEATURES: tuple[str, ...] = ("llm_logit", "term_coverage", "phrase_coverage", "tf_saturation", "answer_type")
#: the yes/no questions tried (the fitted one is ``ContextParams.wording``); ``{question}`` is the user's question
WORDINGS: dict[str, str] = {
    "needed": "Question: {question}\nDoes the passage contain the information needed to answer the question? "
              "Answer yes or no.",
    "evidence": "Question: {question}\nIs this passage relevant to the question: does it give the answer, or "
                "evidence for or against it? Answer yes or no.",
    # the instruction in the system prompt (``RELEVANCE_SYSTEM``), only the question after the passage: 23 fewer tokens
    # a check than "evidence", about the same ROC AUC of P(yes) on the labelled pairs (0.872 vs 0.874); fitted, its
    # judge agreed less held out (0.817 vs 0.828), so "evidence" stays the shipped wording
    "short": "Question: {question}\nAnswer yes or no.",
    # the conversation form's (``ask_in_conversation``): ``{id}`` is the passage's id as the context shows it
    "conversation": "Is passage [{id}] needed to answer the question: does it give the answer, or evidence for or "
                    "against it? Being about the same topic is not enough. Answer yes or no.",
}
#: the system prompt of the "short" wording: the question the judge asks, said once for every passage
RELEVANCE_SYSTEM = ("You read a passage, then a question. Say whether the passage is relevant to the question: whether "
                    "it gives the answer, or evidence for or against it. Use only what the passage says, not what you "
                    "know. Answer yes or no.")
#: wording -> the system prompt it is asked under (every other wording: ``yesno.PASSAGE_SYSTEM``, shared with
#: faithfulness, so a text both judges ask about is read once)
SYSTEMS: dict[str, str] = {WORDINGS["short"]: RELEVANCE_SYSTEM}
K1, B, AVG_LEN = 1.2, 0.75, 200.0
WINDOW = 12  # words between a question term and a value of the asked type
_WORD = re.compile(r"\w+", re.UNICODE)
_YEAR_OR_DATE = re.compile(
    r"^(1\d{3}|20\d{2}|january|february|march|april|may|june|july|august|september|october|november|december|"
    r"century|centuries|\d{1,2}(st|nd|rd|th)|\d{3,4}s)$")
_NUMBER = re.compile(r"^\d+([.,]\d+)?$|^(one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|dozen|"
                     r"hundred|thousand|million|billion|percent)$")


class ChunkVerdict(BaseModel):
    """One retrieved passage's verdict."""

    rank: int  # 1-based
    id: str
    relevant: bool
    p: float  # P(relevant), the fitted model's
    sole_source: bool = False  # relevant as the only passage naming one of the question's names (``sole_sources``)
    joined: bool = False  # relevant through the set stage (module docstring): tied to a name or to the anchor
    p_set: float | None = None  # the set stage's P(relevant), when a set signal is above 0


class ContextRelevance(BaseModel):
    """A case's verdict: precision@k of the retrieved passages and the rank of the first relevant one."""

    applicable: bool  # False when no passage was retrieved
    score: float | None  # relevant passages / passages judged
    first_relevant_rank: int | None  # 1-based, None if none is relevant
    chunks: list[ChunkVerdict]
    model_calls: int  # forward passes made for this verdict (0 when all cached)


class SetParams(LogisticParams):
    """A fitted logistic model (``fitted.LogisticParams``; the set stage's features are ``SET_FEATURES``)."""


class ContextParams(SetParams):
    """The fitted judge of a passage: the form and wording of the model's question, then the logistic model."""

    wording: str  # a WORDINGS value: the tail, with {question} (passage form) or {id} (conversation form)
    #: "passage": the passage alone with the question (``ask``); "conversation": the next turn of the QA
    #: conversation over the retrieved set (``ask_in_conversation``; a served checker's)
    form: Literal["passage", "conversation"] = "passage"
    #: the threshold for a query that asks nothing (a claim to check, keywords: ``question_forms.asks``), when
    #: fitted apart (``benchmarks/relevance_outside.py fit_claim_threshold``); None: ``threshold``
    claim_threshold: float | None = None

    def threshold_for(self, question: str) -> float:
        """``claim_threshold`` for a query that asks nothing, when there is one, else ``threshold``."""
        return self.claim_threshold if self.claim_threshold is not None and not asks(question) else self.threshold


class SetStage(SetParams):
    """The fitted set stage: its logistic model over ``SET_FEATURES``, and the passage threshold it was fitted with."""

    #: a question's passage judged in a set of two or more is relevant from this P(relevant) on, when it is lower
    #: than ``ContextParams.threshold`` (fitted on single pairs for accuracy): the set stage reads each passage
    #: beside the others, and the two were fitted together for balanced accuracy on whole sets (module docstring,
    #: "The set stage"); None: the passage model's threshold
    passage_threshold: float | None = None


# -- lexical signals ----------------------------------------------------------------------------------------
_SUFFIX = re.compile(r"(ing|ed|es|s|ly)$")


def _stem(word: str) -> str:
    """A light stemmer: an alphabetic word loses one suffix (-ing, -ed, -es, -s, -ly; at least 3 letters stay),
    then keeps its first 5 letters (opened/open, tumours/tumour, regulates/regulation)."""
    if not word.isalpha():
        return word
    cut = _SUFFIX.sub("", word)
    return (cut if len(cut) >= 3 else word)[:5]


def _terms(text: str) -> list[str]:
    """The stemmed informative words of ``text`` in order (normalised, stopwords dropped)."""
    return [_stem(w) for w in normalize(text).split() if w not in STOPWORDS]


def _asked_type(question: str) -> str | None:
    q = normalize(question)
    if re.search(r"\b(how many|how much|how long|how old|how far|how large|how big|what percentage|what number)\b", q):
        return "number"
    if re.search(r"\b(when|what year|which year|what date|what century|which century)\b", q):
        return "date"
    if re.search(r"\b(who|whom|whose)\b", q):
        return "name"
    return None


def _is_value(raw: str, kind: str, sentence_start: bool) -> bool:
    low = raw.lower()
    if kind == "number":
        return bool(_NUMBER.match(low))
    if kind == "date":
        return bool(_YEAR_OR_DATE.match(low))
    return raw[:1].isupper() and not sentence_start and low not in STOPWORDS


def _answer_type(question: str, passage: str) -> float:
    kind = _asked_type(question)
    if kind is None:
        return 0.0
    asked = set(_terms(question))
    words = [(m.group(), passage[max(m.start() - 2, 0):m.start()].strip() in {"", ".", "!", "?"})
             for m in _WORD.finditer(passage)]
    anchors = [i for i, (w, _) in enumerate(words) if _stem(normalize(w)) in asked]
    for i, (w, start) in enumerate(words):
        if _stem(normalize(w)) in asked or not _is_value(w, kind, start):
            continue
        if any(abs(i - a) <= WINDOW for a in anchors):
            return 1.0
    return -1.0


def features(question: str, passage: str, p_yes: float) -> list[float]:
    """The FEATURES of one (question, passage) pair given the model's P(yes)."""
    asked, seen = _terms(question), _terms(passage)
    unique = list(dict.fromkeys(asked))
    coverage = _share(unique, set(seen))
    pairs = {(a, b) for a, b in zip(asked, asked[1:]) if a != b}
    near = {(a, b) for a, b in zip(seen, seen[1:])} | {(a, c) for a, c in zip(seen, seen[2:])}
    phrase = len(pairs & near) / len(pairs) if pairs else coverage
    norm = K1 * (1 - B + B * len(seen) / AVG_LEN)
    counts = {t: seen.count(t) for t in unique}
    saturation = (sum(tf * (K1 + 1) / (tf + norm) for tf in counts.values()) / (K1 + 1) / len(unique)
                  if unique else 0.0)
    return [float(llm_logit(p_yes)), coverage, phrase, saturation, _answer_type(question, passage)]


def _share(unique: Sequence[str], present: set[str]) -> float:
    """``term_coverage``: the share of the question's informative terms (``unique``) among a text's (``present``)."""
    return sum(t in present for t in unique) / len(unique) if unique else 0.0


def feature_matrix(questions: Sequence[str], passages: Sequence[str], p_yes: Sequence[float]) -> np.ndarray:
    return np.array([features(q, t, p) for q, t, p in zip(questions, passages, p_yes)], dtype=np.float64
                    ).reshape(len(questions), len(FEATURES))


# -- the model's question ------------------------------------------------------------------------------------
def pieces(text: str, tail: str, scorer: Any) -> list[str]:
    """``text`` itself when it fits the scorer's window beside ``tail``; else runs of its consecutive sentences,
    each within the characters the window held of it (``yesno.char_budget``; a sentence longer than that is cut
    into runs of its words, ``claims.bounded``), so no part of a long passage goes unread."""
    from evaluations.judging.grounded.claims import bounded, sentences
    from evaluations.judging.checkers.yesno import char_budget

    budget = char_budget(scorer, text, tail)
    if budget is None:
        return [text]
    out: list[str] = []
    for sentence in bounded(sentences(text), budget) or (text,):
        if out and len(out[-1]) + 1 + len(sentence) <= budget:
            out[-1] = f"{out[-1]} {sentence}"
        else:
            out.append(sentence)
    return out


def system_for(wording: str) -> str:
    """The system prompt ``wording`` is asked under on the embedded model (``SYSTEMS``)."""
    from evaluations.judging.checkers.yesno import PASSAGE_SYSTEM

    return SYSTEMS.get(wording, PASSAGE_SYSTEM)


def _scorer_for(wording: str, scorer: Any) -> Any:
    """The scorer ``wording`` is asked through: the embedded model under the wording's own system prompt
    (``system_for``; ``scorer`` None: the shared one), or ``scorer`` itself when it asks under its own rubric."""
    from evaluations.judging.checkers.yesno import for_system, load_scorer

    system = system_for(wording)
    return load_scorer(system) if scorer is None else for_system(scorer, system)


def ask(question: str, text: str, wording: str, *, cache: VerdictCache | None = None,
        scorer: Any = None) -> tuple[float, bool]:
    """(P(yes), whether the model ran) of ``wording`` about one passage, through the shared scorer (or ``scorer``:
    the same duck type, e.g. ``served_checker.ServedChecker``). A passage longer than the model's window is read
    in ``pieces`` and P(yes) is the highest piece's: the passage is needed when some part of it is."""
    from evaluations.judging.checkers.yesno import cached_probability, passage_shared

    scorer = _scorer_for(wording, scorer)
    tail = wording.format(question=question)
    asked = [cached_probability(scorer, passage_shared(piece), tail, cache) for piece in pieces(text, tail, scorer)]
    return max(p for p, _ in asked), any(called for _, called in asked)


def ask_set(question: str, texts: Sequence[str], wording: str, *, cache: VerdictCache | None = None,
            scorer: Any = None) -> list[tuple[float, bool] | None]:
    """``ask`` of each passage of ``texts`` (None for one with no text: not asked). On the embedded model the
    questions not in the verdict store are read side by side in one batched pass (``yesno.cached_probabilities``:
    the system prompt once, as few decodes as the batch holds; the P(yes) of each prompt read alone, up to the
    rounding of batched arithmetic); a served checker is asked at once up to its width (``yesno.fan_out``)."""
    from evaluations.judging.checkers.yesno import cached_probabilities, fan_out, passage_shared

    scorer = _scorer_for(wording, scorer)
    if not hasattr(scorer, "probabilities"):
        return fan_out(scorer, lambda text: ask(question, text, wording, cache=cache, scorer=scorer)
                       if text.strip() else None, texts)
    tail = wording.format(question=question)
    owner, asks = [], []
    for i, text in enumerate(texts):
        if text.strip():
            for piece in pieces(text, tail, scorer):
                owner.append(i)
                asks.append((passage_shared(piece), tail))
    out: list[tuple[float, bool] | None] = [None] * len(texts)
    for i, (p, called) in zip(owner, cached_probabilities(scorer, asks, cache)):
        held = out[i]
        out[i] = (p, called) if held is None else (max(held[0], p), held[1] or called)
    return out


def ask_in_conversation(question: str, passages: Sequence[Passage], wording: str, *,
                        cache: VerdictCache | None = None, scorer: Any) -> list[tuple[float, bool] | None]:
    """(P(yes), whether the model ran) of ``wording`` about each passage (None for a passage with no text: not
    asked), each asked as the next user turn of the QA conversation over the passages (module docstring). The
    passages that fit ``scorer.conversation_chars`` beside the question, in rank order, share one opening; each
    other one has its own (its text alone, cut to the budget). Asked at once up to the checker's width
    (``yesno.fan_out``)."""
    from evaluations.core.context import QA_INSTRUCTIONS
    from evaluations.judging.basics.passages import opening
    from evaluations.judging.checkers.yesno import cached_conversation, fan_out

    def one(i: int) -> tuple[float, bool] | None:
        if not passages[i].text.strip():
            return None
        tail = wording.format(id=passages[i].id)
        prompt = opening(question, passages, i, int(scorer.conversation_chars))
        return cached_conversation(scorer, QA_INSTRUCTIONS, prompt, tail, cache)

    return fan_out(scorer, one, range(len(passages)))


# -- parameters ------------------------------------------------------------------------------------------------
def set_signal(x: np.ndarray) -> np.ndarray:
    """Rows of ``set_features`` with a set signal (``SET_SIGNALS``) above 0: the passages the set stage may join."""
    return np.any(x[:, [SET_FEATURES.index(f) for f in SET_SIGNALS]] > 0, axis=1)


_loaded: dict[tuple[str, str, int], BaseModel] = {}


def _read_once(path: str | Path | None, name: str, read: Any) -> Any:
    """``read(path)`` of ``path`` (default: the shipped ``judges/<name>``), once per file version."""
    from evaluations.judging.basics.fitted import default_params_path

    path = Path(path) if path else default_params_path(name)
    try:
        key = (name, str(path), path.stat().st_mtime_ns)
    except OSError:
        key = (name, str(path), 0)
    if key not in _loaded:
        _loaded[key] = read(path)
    return _loaded[key]


def _wording_problem(fitted: ContextParams) -> str | None:
    if fitted.form == "passage":
        return None if "{question}" in fitted.wording else "the wording has no {question} placeholder"
    return None if "{id}" in fitted.wording else "the conversation form's wording has no {id} placeholder"


def params(path: str | Path | None = None, *, served: bool = False) -> ContextParams:
    """The fitted parameters (default: the shipped ``judges/context_relevance.json``; ``served``:
    ``judges/context_relevance_served.json``, the conversation form), read once per file version."""
    from evaluations.judging.basics.fitted import read_params

    def refit(p: Path) -> str:  # a served checker's file is refitted through that checker
        return "evaluations calibrate-judge FILE --judges context_relevance" + (
            " --judge PROVIDER:MODEL" if p.name == SERVED_PARAMS_FILE else "")

    return _read_once(path, SERVED_PARAMS_FILE if served else PARAMS_FILE, lambda p: read_params(
        p, ContextParams, what="context relevance", known=FEATURES, unwrap=lambda doc: doc.get("params", doc),
        extra=_wording_problem, refit=refit(p)))


def params_for(scorer: Any) -> ContextParams:
    """The parameters a run asking ``scorer`` reads: ``params(served=is_served(scorer))``."""
    from evaluations.judging.checkers.yesno import is_served

    return params(served=is_served(scorer))


def fit(x: np.ndarray, y: np.ndarray, wording: str, *, c: float = 1.0, form: str = "passage") -> ContextParams:
    """Standardise, L2 logistic regression (scikit-learn, C = ``c``); threshold = argmax of training accuracy."""
    from sklearn.linear_model import LogisticRegression

    from evaluations.judging.basics.fitted import best_threshold

    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale == 0] = 1.0
    model = LogisticRegression(C=c, max_iter=2000).fit((x - mean) / scale, y.astype(int))
    fitted = ContextParams(wording=wording, form=form, features=list(FEATURES), mean=mean.tolist(),
                           scale=scale.tolist(),
                           coef=model.coef_[0].tolist(), intercept=float(model.intercept_[0]), threshold=0.5)
    fitted.threshold = best_threshold(fitted.probability(x), y.astype(bool))
    return fitted


# -- the judge -----------------------------------------------------------------------------------------------
def judge_context_relevance(question: str, passages: Sequence[Passage], *, cache: VerdictCache | None = None,
                            params: ContextParams | None = None, scorer: Any = None,
                            set_stage: SetParams | None | bool = True) -> ContextRelevance:
    """Every passage's verdict, precision@k over all given passages and the first relevant rank. ``scorer``: see
    ``ask`` (default: the embedded judge model). ``set_stage``: True the shipped set stage, False none (the
    passages judged one by one at the passage model's threshold, as its fit reads them), or a fitted ``SetStage``
    (or ``SetParams``: no passage threshold of its own)."""
    if not passages:
        return ContextRelevance(applicable=False, score=None, first_relevant_rank=None, chunks=[], model_calls=0)
    fitted = params if params is not None else params_for(scorer)
    from evaluations.judging.checkers.yesno import is_served

    if fitted.form == "conversation":
        from evaluations.judging.basics.passages import check_conversation_form

        check_conversation_form("context relevance", is_served(scorer), "passage", "context_relevance.json")
        asked = ask_in_conversation(question, passages, fitted.wording, cache=cache, scorer=scorer)
    else:
        asked = ask_set(question, [p.text for p in passages], fitted.wording, cache=cache, scorer=scorer)
    stage = set_params() if set_stage is True else (set_stage or None)
    if not asks(question) or sum(a is not None for a in asked) < 2:  # one passage with text (beside items without
        stage = None  # any) has nothing to be read beside
    chunks, calls, threshold = [], 0, fitted.threshold_for(question)
    if stage is not None and getattr(stage, "passage_threshold", None) is not None:
        threshold = min(threshold, stage.passage_threshold)
    for rank, (passage, answer) in enumerate(zip(passages, asked), 1):
        if answer is None:
            chunks.append(ChunkVerdict(rank=rank, id=passage.id, relevant=False, p=0.0))
            continue
        p_yes, called = answer
        calls += called
        p = float(fitted.probability(np.array(features(question, passage.text, p_yes)))[0])
        chunks.append(ChunkVerdict(rank=rank, id=passage.id, relevant=p >= threshold, p=p))
    if not asks(question):  # a claim to check or keywords: each passage is evidence or not on its own
        return _verdict(chunks, calls)
    for chunk, sole in zip(chunks, sole_sources(question, [p.text for p in passages])):
        if sole and not chunk.relevant:
            chunk.relevant = chunk.sole_source = True
    if stage is not None:
        x = set_features(question, [p.text for p in passages], [c.p for c in chunks], [c.relevant for c in chunks])
        for chunk, signal, p_set in zip(chunks, set_signal(x), stage.probability(x)):
            if chunk.p > 0 and signal:
                chunk.p_set = float(p_set)
                if not chunk.relevant and p_set >= stage.threshold:
                    chunk.relevant = chunk.joined = True
    return _verdict(chunks, calls)


def _verdict(chunks: list[ChunkVerdict], calls: int) -> ContextRelevance:
    relevant = [c.rank for c in chunks if c.relevant]
    return ContextRelevance(applicable=True, score=len(relevant) / len(chunks),
                            first_relevant_rank=relevant[0] if relevant else None, chunks=chunks, model_calls=calls)


def set_features(question: str, texts: Sequence[str], p1: Sequence[float], relevant: Sequence[bool]) -> np.ndarray:
    """The ``SET_FEATURES`` of each passage of a retrieved set (module docstring, "The set stage"), given each
    passage's probability ``p1`` and verdict from the passages judged one by one."""
    from evaluations.judging.grounded.claims import name_word_list, name_words

    # a one-word name that opens the question is only a capitalised first word when the passages write that word in
    # lower case ("Cells undergoing ..." and "... in cells"; "Lookwell was a pilot ..." is a name)
    first = name_word_list(" ".join(question.split()[:1]))
    lower = set(re.findall(r"\b[a-z][\w'’-]*", " ".join(texts)))
    common = bool(first) and any(w in lower or f"{w}s" in lower for w in first)
    names = [[w for w in name if len(w) > 2] for name in name_words(question)
             if not (common and list(name) == first)]
    words = [set(name_word_list(t)) for t in texts]
    held = [[sum(w in mine for w in name) / len(name) if name else 0.0 for name in names] for mine in words]
    # a name most of the set has tells no passage from another (a claim's gene name in every abstract retrieved)
    telling = [i for i in range(len(names)) if sum(h[i] > 0 for h in held) <= max(1, len(texts) // 2)]
    asked = set(name_word_list(question))
    subjects = []
    for text in texts:
        found = _SUBJECT.match(text.strip())
        words_of = name_word_list(found.group(1)) if found else []
        subjects.append({w for w in words_of if len(w) > 2} - asked if len(words_of) <= SUBJECT_WORDS else set())
    asked_terms, terms = list(dict.fromkeys(_terms(question))), [set(_terms(text)) for text in texts]
    cover = [_share(asked_terms, mine) for mine in terms]  # term_coverage; of two read together, of their union
    rows = []
    for j in range(len(texts)):
        only = any(held[j][i] > 0 and all(held[o][i] == 0 for o in range(len(texts)) if o != j) for i in telling)
        others = [k for k in range(len(texts)) if k != j and relevant[k]]
        linked = max((p1[k] * len(subjects[j] & words[k]) / len(subjects[j]) for k in others if subjects[j]),
                     default=0.0)
        mentions = max((p1[k] * len(subjects[k] & words[j]) / len(subjects[k]) for k in others if subjects[k]),
                       default=0.0)
        tied = [k for k in range(len(texts)) if k != j and ((subjects[k] and subjects[k] <= words[j])
                                                            or (subjects[j] and subjects[j] <= words[k]))]
        pair_gain = max((_share(asked_terms, terms[j] | terms[k]) - max(cover[j], cover[k]) for k in tied),
                        default=0.0)
        pronoun = cover[j] if _PRONOUN_FIRST.match(texts[j].strip()) else 0.0
        known = set().union(*(terms[k] for k in others))  # the question's terms the relevant passages hold
        gain = _share(asked_terms, known | terms[j]) - _share(asked_terms, known)
        rows.append([float(llm_logit(p1[j])), max((held[j][i] for i in telling), default=0.0), float(only), linked,
                     mentions, pair_gain, pronoun, gain])
    return np.array(rows, dtype=np.float64).reshape(len(texts), len(SET_FEATURES))


def set_params(path: str | Path | None = None) -> SetStage:
    """The fitted set stage (default: the shipped ``judges/context_sets.json``), read once per file version."""
    from evaluations.judging.basics.fitted import read_params

    return _read_once(path, SET_PARAMS_FILE, lambda p: read_params(
        p, SetStage, what="context relevance set stage", known=SET_FEATURES, unwrap=lambda doc: doc.get("params", doc),
        refit="python scripts/fit_context_sets.py"))


def fit_set(x: np.ndarray, y: np.ndarray, *, c: float = 1.0) -> SetParams:
    """Standardise, L2 logistic regression with balanced class weights (scikit-learn, C = ``c``); threshold =
    argmax of the balanced accuracy, on the fitting rows, of the stage as it is applied (only rows with a set
    signal above 0 and not already relevant can change; ``x`` holds all rows, ``y`` their labels)."""
    from sklearn.linear_model import LogisticRegression

    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale == 0] = 1.0
    model = LogisticRegression(C=c, max_iter=2000, class_weight="balanced").fit((x - mean) / scale, y.astype(int))
    return SetParams(features=list(SET_FEATURES), mean=mean.tolist(), scale=scale.tolist(),
                     coef=model.coef_[0].tolist(), intercept=float(model.intercept_[0]), threshold=0.5)


def sole_sources(question: str, texts: Sequence[str]) -> list[bool]:
    """For each passage: whether it is the only one of ``texts`` to name one of the names of a question that names
    two or more (``claims.name_words``: "Which magazine was started first, Arthur's Magazine or First for Women?",
    "Are Tollan Water and Loch Brae both reservoirs?"), while another passage names another of them. Such a question
    asks about each name, so the one passage about a name is needed even when it cannot answer alone (module
    docstring, "Across passages")."""
    from evaluations.judging.grounded.claims import held_names, name_words

    names = name_words(question)
    if len(names) < 2 or len(texts) < 2:
        return [False] * len(texts)
    held = [held_names(t, names) for t in texts]
    out = []
    for j, mine in enumerate(held):
        others = set().union(*(h for i, h in enumerate(held) if i != j))
        out.append(bool(mine - others) and bool(others - mine))
    return out

