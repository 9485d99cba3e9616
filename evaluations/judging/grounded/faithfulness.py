"""``faithfulness`` (alias ``groundedness``): is every claim of the answer supported by the retrieved passages?

Reference-free: it reads the question, the answer and the passages, never a gold answer. Steps:

1. Not applicable (``Faithfulness.applicable`` False, no score) when the answer is empty or the question echoed or
   restated (the non-answer screen without gold, ``nonanswer.screen(question, (), answer)``: ``NOT_APPLICABLE``),
   there is no passage (``no_context``), or no claim is left (``refusal`` when the screen saw a refusal: its
   sentences are no claims, ``no_claim`` otherwise). An answer with a refusal phrase beside claims is judged.
2. Claims: ``claims.split_claims`` (sentences, then clauses; filler and restated question words dropped; a verbless
   answer is one ``short`` claim read with the question).
3. Per claim, the passages are cut into windows of ``WINDOW_SENTENCES`` consecutive sentences (``windows``), and
   the ``top_m`` windows with the highest lexical coverage of the claim's keywords are asked to the embedded model
   (``judging.checkers.yesno``, ``PASSAGE_SYSTEM``, shared = ``"Passage:\\n{window}\\n\\n"``, tail = the question, the claim
   and the ask of ``ASKS[params.ask]``); p_llm = the highest P(yes); the passage of that window is the claim's
   supporting passage. Support may span passages (a multi-hop question: the film's passage names the director,
   the director's passage the city): when the best window lacks some of the claim's words (for a short claim, the
   question's too), a window of *another* passage (another text and id) holds some of them, and the two windows
   share a name the question does not have (the bridge entity, "Malcolm Fenwick"), the model reads the two
   together (``_bridged``). Without a shared name, the other window is most often a distractor holding a wrong
   answer (SQuAD with two paragraphs of the same article beside the right one: 35 of 40 wrong short answers
   would be joined to theirs without the name rule, 8 with it). Never within one passage, where a value away from
   the question's words is what a weak model wrongly picks. Windows, not whole passages: a forward pass costs in
   proportion to its tokens (a window of three sentences is ~100 tokens, a retrieved passage 300-500), the model
   reads the few sentences that matter instead of a long text, and no passage is ever longer than the model's
   window. A sentence longer than the window holds (a text without sentence ends) is cut into runs of its words
   (``windows``' budget), so its end is read too. (The cost: the passage state is not shared with the
   context-relevance judge, which reads whole passages.)
   A served checker asks in the *conversation form* instead (``FaithfulnessParams.form``,
   ``judges/faithfulness_served.json``, ``params_for``): the claim ("Statement: … Is the statement supported by the
   context above?", ``CONVERSATION_ASKS``) is the next user turn after the QA agent's own system prompt and first
   user turn over the passages (``judging.basics.passages.opening``), as context relevance's conversation form asks,
   so a server that keeps the last prompt's prefix (llama.cpp, Ollama) reads the passages once per case for the
   answer and every question: one question per claim, its P(yes) in place of the best window's; the windows then only
   name the supporting passage. Its file keeps the window form's weights: through Qwen2.5-Coder-1.5B behind
   llama.cpp's server they agree with 153 labelled answers on 0.784, a refit on the conversation's P(yes) 0.758
   held out (``benchmarks/results/faithfulness_conversation_refit.json``). The embedded model keeps the window form.
4. The claim's features: llm_logit = log(p_llm / (1 − p_llm)) (in the column ``llm_logit_short`` for a short
   claim, ``llm_logit`` otherwise, 0 in the other: each kind gets its own weight) and the alignment signals of ``claims.claim_signals``
   (``FEATURES``). P(supported) = σ(b + Σ_j w_j (x_j − μ_j) / s_j) with the parameters of
   ``judges/faithfulness.json`` (``FaithfulnessParams``, fitted by ``benchmarks/faithfulness.py --write-params``
   on hand labels: the answer-level label "every claim supported" against the answer's worst-claim features
   ``worst``: min of the support signals, max of the missing counts); a claim is supported when P ≥ threshold.
5. An answer that only picks one of two options of a question comparing them by date ("Who was born first, A or
   B?": "B") is decided by the dates the passages give (``judging.grounded.comparison``: the model cannot compare two
   values it reads); each claim keeps the model's P(supported), and ``ClaimVerdict.rule`` says why its verdict
   is not the model's.
   Likewise a bare yes or no to a yes/no question about two names ("Are A and B both American?", "… of the same
   nationality?", "… released in the same year?") when the passages settle it (``judging.grounded.pairs``), and an answer
   that only names one option of "Which director is American, A or B?" when the passages single one out
   (``judging.grounded.choice``).
6. Score = supported claims / claims.

Synchronous and thread-safe (the scorer's lock serialises model calls). Verdicts are cached in the one
``VerdictCache`` (``yesno.cached_probability``), so a re-run makes no model call.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, Field

from evaluations.judging.grounded.claims import (SIGNALS, Claim, bounded, claim_signals, entities, has_verb, polar_claim,
                                       sentences, split_claims)
from evaluations.judging.grounded import choice
from evaluations.judging.grounded import comparison
from evaluations.judging.grounded import pairs
from evaluations.judging.correctness.embedded import VerdictCache
from evaluations.judging.basics.lexicon import FILLER, similar, stems
from evaluations.judging.correctness.nonanswer import screen
from evaluations.judging.basics.fitted import llm_logit
from evaluations.judging.basics.passages import Passage, as_passages

__all__ = [
    "ASKS", "Decompose", "FEATURES", "NOT_APPLICABLE", "SUPPORT_FEATURES", "ClaimVerdict", "Faithfulness",
    "FaithfulnessParams", "ClaimEvidence", "judge_faithfulness", "claim_evidence", "worst", "load_params",
    "params_path", "params_for", "windows", "applicability", "fit_params", "RULES", "rule_verdict",
    "CONVERSATION_ASKS", "SERVED_PARAMS_FILE",
]

#: (question, answer) -> the answer's claims by a served model, or None (it could not: the deterministic splitter)
Decompose = Callable[[str, str], "list[str] | None"]
#: screen kinds (without gold) that make an answer not applicable: it states nothing to check
NOT_APPLICABLE = ("empty", "refusal", "echo", "restatement")
#: the ask after the claim; the wording is chosen on a fitting split (``FaithfulnessParams.ask``)
ASKS: dict[str, str] = {
    "statement": "Question: {question}\nStatement: {claim}\nIs the statement supported by the passage? "
                 "Answer yes or no.",
    "stated": "Question: {question}\nClaim: {claim}\nDoes the passage state this claim (not only mention its "
              "words)? Answer yes or no.",
    "answer": "Question: {question}\nAnswer: {claim}\nDoes the passage support this answer to the question? "
              "Answer yes or no.",
}
SHORT_ASK = "answer"  # a short (verbless) claim is always read as an answer to the question
#: the conversation form's asks (``FaithfulnessParams.form``; a served checker's): the claim as the next user turn of
#: the QA conversation, after the context and the question (``judging.basics.passages.opening``)
CONVERSATION_ASKS: dict[str, str] = {
    "statement": "Statement: {claim}\nIs the statement supported by the context above? Answer yes or no.",
    "stated": "Claim: {claim}\nDoes the context above state this claim (not only mention its words)? "
              "Answer yes or no.",
    "answer": "Answer: {claim}\nDoes the context above support this answer to the question? Answer yes or no.",
}
PARAMS_FILE = "faithfulness.json"
SERVED_PARAMS_FILE = "faithfulness_served.json"  # the conversation form, for served checkers
FEATURES: tuple[str, ...] = ("llm_logit", "llm_logit_short", *SIGNALS, "short")
#: features where lower means less support (the worst claim has the minimum); the others are counts of missing
#: things (the worst claim has the maximum)
SUPPORT_FEATURES = frozenset({"llm_logit", "llm_logit_short", "coverage", "window_coverage", "pair_support", "novel_coverage",
                              "bigram_coverage", "anchor_context"})
WINDOW_SENTENCES = 3  # the model reads a window of this many consecutive sentences of a passage


class FaithfulnessParams(BaseModel):
    """The fitted claim model: σ(intercept + Σ coef_j (x_j − mean_j) / scale_j) ≥ threshold, plus how to ask."""

    features: list[str] = Field(default_factory=lambda: list(FEATURES))
    mean: list[float]
    scale: list[float]
    coef: list[float]
    intercept: float
    threshold: float = 0.5
    ask: str = "statement"
    top_m: int = 1
    #: "window": each claim asked beside its best-covered window of a passage (the embedded model's);
    #: "conversation": each claim asked as the next user turn of the QA conversation over the passages (a served
    #: checker's: the server reads the context once per case; ``claim_evidence``)
    form: Literal["window", "conversation"] = "window"
    info: dict[str, Any] = Field(default_factory=dict)

    def probability(self, rows: np.ndarray) -> np.ndarray:
        x = np.atleast_2d(np.asarray(rows, dtype=np.float64))
        z = self.intercept + ((x - np.asarray(self.mean)) / np.asarray(self.scale)) @ np.asarray(self.coef)
        return 1.0 / (1.0 + np.exp(-z))


def params_path(*, served: bool = False) -> Path:
    """The parameters file runs read: ``judges/faithfulness.json``; ``served``: ``judges/faithfulness_served.json``
    (the conversation form); or the same names under ``$EVALUATIONS_JUDGES_DIR``."""
    from evaluations.judging.basics.fitted import default_params_path

    return default_params_path(SERVED_PARAMS_FILE if served else PARAMS_FILE)


@lru_cache(maxsize=8)
def _load(path: str, mtime: int) -> FaithfulnessParams:
    from evaluations.judging.basics.fitted import read_params

    def own(params: FaithfulnessParams) -> str | None:
        if params.ask not in ASKS:
            return f"unknown ask {params.ask!r} (one of {sorted(ASKS)})"
        return None if params.top_m >= 1 else f"top_m {params.top_m} is not a positive count of windows"

    served = Path(path).name == SERVED_PARAMS_FILE  # a served checker's file is refitted through that checker
    return read_params(Path(path), FaithfulnessParams, what="faithfulness", known=FEATURES, extra=own,
                       refit="evaluations calibrate-judge FILE --judges faithfulness"
                             + (" --judge PROVIDER:MODEL" if served else ""))


def load_params(path: str | Path | None = None, *, served: bool = False) -> FaithfulnessParams:
    """The shipped parameters (``judges/faithfulness.json``; ``served``: ``judges/faithfulness_served.json``; or
    the same under ``$EVALUATIONS_JUDGES_DIR``), read once per mtime."""
    path = Path(path) if path else params_path(served=served)
    try:
        mtime = path.stat().st_mtime_ns
    except OSError:
        mtime = 0
    return _load(str(path), mtime)


def params_for(scorer: Any) -> FaithfulnessParams:
    """The parameters a run asking ``scorer`` reads: ``load_params(served=yesno.is_served(scorer))``."""
    from evaluations.judging.checkers.yesno import is_served

    return load_params(served=is_served(scorer))


class ClaimVerdict(BaseModel):
    claim: str
    supported: bool
    p: float  # P(supported), the fitted model's
    passage: str | None  # id of the passage that supports it best (highest P(yes)); None when no passage
    bridge: str | None = None  # id of another passage read together with ``passage`` (a multi-hop claim's other step)
    rule: str | None = None  # why ``supported`` is not the model's (``judging.grounded.comparison``, ``pairs``, ``choice``)


class Faithfulness(BaseModel):
    applicable: bool
    kind: str  # "claims" when applicable, else why not ("empty", "refusal", "echo", "no_context", "no_claim", ...)
    score: float | None  # supported claims / claims; None when not applicable
    claims: list[ClaimVerdict]
    model_calls: int  # forward passes made for this verdict (0 when all cached)


@dataclass(frozen=True)
class ClaimEvidence:
    """What the judge measured for one claim: features (``FEATURES`` order), the best passage's index and P(yes)."""

    claim: Claim
    features: tuple[float, ...]
    passage: int | None
    p_llm: float
    calls: int
    bridge: int | None = None  # index of the other passage whose window the model read with ``passage``'s


def applicability(question: str, answer: str, passages: Sequence[Passage],
                  decompose: Decompose | None = None) -> tuple[str | None, list[Claim]]:
    """(why the judge does not apply, a ``Faithfulness.kind``, or None when it does; the answer's claims).
    ``decompose``: a served model's decomposition (``served_checker.ServedChecker.claims``; None from it: the
    deterministic splitter), asked only when the answer passed the screens; a claim without a verb is then read as
    a short answer."""
    kind = screen(question, (), answer or "").kind
    if kind in NOT_APPLICABLE and kind != "refusal":
        return kind, []
    if not [p for p in passages if p.text.strip()]:
        return "no_context", []
    given = decompose(question, answer) if decompose is not None else None
    claims = split_claims(question, answer) if given is None else [  # a decomposed refusal or echo is no claim
        Claim(c.strip(), short=not has_verb(c)) for c in dict.fromkeys(given)
        if c.strip() and screen(question, (), c).kind not in NOT_APPLICABLE] or polar_claim(question, answer)
    if not claims:
        return ("refusal" if kind == "refusal" else "no_claim"), []
    return None, claims  # a refusal phrase beside claims ("X is not available as a service when ...") is judged


def _coverage(claim_stems: frozenset[str], text: str) -> float:
    have = stems(text)
    return sum(similar(w, have) for w in claim_stems) / len(claim_stems) if claim_stems else 0.0


def windows(text: str, size: int = WINDOW_SENTENCES, budget: int | None = None) -> list[str]:
    """Runs of ``size`` consecutive sentences of a passage (stride 1; the whole text when it has fewer).
    ``budget``: the characters the model reads whole (``yesno.char_budget``); when a sentence is longer, the
    sentences are ``claims.bounded`` (a long one cut into runs of its words) and every part starts a window of up
    to ``size`` parts within the budget (one that ends where the previous one ends is left out: it was read), so
    no part of the passage is cut away. Without a sentence that long, the windows are as without ``budget``."""
    sents = list(sentences(text)) or [text]
    if budget is not None and any(len(s) > budget for s in sents):
        parts, out, end = bounded(sents, budget), [], 0
        for i, part in enumerate(parts):
            j, length = i + 1, len(part)
            while j < len(parts) and j - i < size and length + 1 + len(parts[j]) <= budget:
                length, j = length + 1 + len(parts[j]), j + 1
            if j > end:
                out.append(" ".join(parts[i:j]))
                end = j
        return out
    if len(sents) <= size:
        return [" ".join(sents)]
    return [" ".join(sents[i:i + size]) for i in range(len(sents) - size + 1)]


def claim_evidence(question: str, claim: Claim, passages: Sequence[Passage], *, scorer: Any,
                   cache: VerdictCache | None, ask: str = "statement", top_m: int = 1,
                   form: str = "window") -> ClaimEvidence:
    """Features of one claim against the passages (module docstring, steps 3-4). ``scorer`` None: no model,
    p_llm = 0.5 (llm_logit 0; used only to measure the alignment signals alone). ``form`` "conversation" (a
    served checker's): p_llm is the checker's P(yes) of the claim asked as the next user turn of the QA conversation
    over the passages (``_in_conversation``), one question per claim; the windows then only name the supporting
    passage."""
    from evaluations.judging.checkers.yesno import cached_probability, char_budget, passage_shared

    texts = [p.text for p in passages]
    signals = claim_signals(question, claim, texts)
    words = stems(f"{question} {claim.text}" if claim.short else claim.text) - FILLER
    template = ASKS[SHORT_ASK if claim.short else ask]
    tail = template.format(question=question.strip(), claim=claim.text.strip())
    pieces = [(i, w) for i, p in enumerate(passages) if p.text.strip()
              for w in windows(p.text, budget=None if scorer is None else char_budget(scorer, p.text, tail))]
    ranked = sorted(pieces, key=lambda item: -_coverage(words, item[1]))[:top_m]  # stable: earlier first on ties
    bridge = None  # the other passage of the first window's bridge, if it has one
    if ranked:
        joined, bridge = _bridged(words, ranked[0], pieces, passages, scorer, tail, question)
        ranked[0] = (ranked[0][0], joined)
    best, best_p, calls = (0 if ranked else None), 0.5 if scorer is None else 0.0, 0
    if scorer is not None and form == "conversation" and ranked:
        best_p, called = _in_conversation(question, claim, passages, ranked[0][0], ask, scorer, cache)
        calls += int(called)
    elif scorer is not None:
        for rank, (_, text) in enumerate(ranked):
            p, called = cached_probability(scorer, passage_shared(text), tail, cache)
            calls += int(called)
            if p > best_p:
                best, best_p = rank, p
    logit = float(llm_logit(best_p))  # a short claim's own column: the model reads a bare answer differently
    features = (0.0 if claim.short else logit, logit if claim.short else 0.0, *signals.values(), float(claim.short))
    return ClaimEvidence(claim, features, None if best is None else ranked[best][0], best_p, calls,
                         bridge=bridge if best == 0 else None)


def _in_conversation(question: str, claim: Claim, passages: Sequence[Passage], index: int, ask: str, scorer: Any,
                     cache: VerdictCache | None) -> tuple[float, bool]:
    """(P(yes), whether the model ran) of ``claim`` asked as the next user turn of the QA conversation: the QA
    agent's system prompt and first user turn over the passages (``passages.opening``: the one the answer was
    given in when the passage of the claim's best window, ``index``, is in it whole; else that passage alone),
    then ``CONVERSATION_ASKS``."""
    from evaluations.core.context import QA_INSTRUCTIONS
    from evaluations.judging.basics.passages import opening
    from evaluations.judging.checkers.yesno import cached_conversation

    tail = CONVERSATION_ASKS[SHORT_ASK if claim.short else ask].format(claim=claim.text.strip())
    prompt = opening(question, passages, index, int(scorer.conversation_chars))
    return cached_conversation(scorer, QA_INSTRUCTIONS, prompt, tail, cache)


def _names(text: str) -> frozenset[str]:
    return frozenset(name.lower() for name in entities(text))


def _bridged(words: frozenset[str], first: tuple[int, str], pieces: Sequence[tuple[int, str]],
             passages: Sequence[Passage], scorer: Any, tail: str, question: str) -> tuple[str, int | None]:
    """(the window the model reads for a claim, the index of the other passage in it or None): the best-covered
    window ``first``, followed by the window of *another* passage (not the same text, not the same id) that holds
    most of the words ``first`` lacks, when one holds any and the two windows share a name the question does not
    have: the bridge entity of a multi-hop question (module docstring, step 3); ``first`` alone otherwise, or when
    the two together would not fit the model's window."""
    index, text = first
    have = stems(text)
    missing = frozenset(w for w in words if not similar(w, have))
    if not missing:
        return text, None
    this = passages[index]
    others = [(_coverage(missing, w) * len(missing), i, w) for i, w in pieces
              if i != index and passages[i].text != this.text and not (this.id and passages[i].id == this.id)]
    gain, other, second = max(others, key=lambda item: item[0], default=(0.0, 0, ""))
    if gain <= 0 or not (_names(text) & _names(second)) - _names(question):
        return text, None  # no bridge entity: on a single-hop question the other window is a distractor
    joined = f"{text}\n\n{second}"
    fit = getattr(scorer, "fit", None)
    if fit is not None:
        from evaluations.judging.checkers.yesno import passage_shared

        if fit(passage_shared(joined), tail) != passage_shared(joined):
            return text, None  # the two together would be cut: read the best window alone
    return joined, other


def worst(rows: Sequence[Sequence[float]], names: Sequence[str] = FEATURES) -> list[float]:
    """The answer's worst-claim features: min over claims of the support features, max of the others."""
    x = np.asarray(rows, dtype=np.float64)
    return [float(x[:, j].min() if name in SUPPORT_FEATURES else x[:, j].max()) for j, name in enumerate(names)]


#: the rules that decide an answer the checker cannot weigh (module docstring, step 5), tried in this order:
#: (question, answer, the passages' texts) -> (supported, why), or None when the rule does not apply
RULES: dict[str, Callable[[str, str, Sequence[str]], tuple[bool, str] | None]] = {
    "comparison": comparison.verdict,  # "Who was born first, A or B?": "B"
    "pairs": pairs.verdict,  # "Are A and B both American?": "Yes"
    "choice": choice.verdict,  # "Which director is American, A or B?": "A"
}


def rule_verdict(question: str, answer: str, texts: Sequence[str]) -> tuple[str, bool, str] | None:
    """(the rule's name, supported, why) from the first rule of ``RULES`` that decides the answer, else None."""
    for name, rule in RULES.items():
        if (decided := rule(question, answer, texts)) is not None:
            return name, *decided
    return None


def judge_faithfulness(question: str, answer: str, passages: Sequence[Passage | str], *,
                       cache: VerdictCache | None = None, params: FaithfulnessParams | None = None,
                       scorer: Any = None, decompose: Decompose | None = None) -> Faithfulness:
    """The verdict on one answer (module docstring). ``scorer``: a ``yesno.YesNoScorer`` or the same duck type
    (``served_checker.ServedChecker``; default: the embedded judge model's with ``PASSAGE_SYSTEM``); ``decompose``:
    a served model's decomposition of the answer (default, or None from it: the deterministic splitter)."""
    items = as_passages(passages)
    kind, claims_found = applicability(question, answer, items, decompose)
    if kind is not None:
        return Faithfulness(applicable=False, kind=kind, score=None, claims=[], model_calls=0)
    if scorer is None:
        from evaluations.judging.checkers.yesno import PASSAGE_SYSTEM, load_scorer

        scorer = load_scorer(PASSAGE_SYSTEM)
    params = params or params_for(scorer)
    from evaluations.judging.checkers.yesno import fan_out, is_served

    if params.form == "conversation":
        from evaluations.judging.basics.passages import check_conversation_form

        check_conversation_form("faithfulness", is_served(scorer), "window", "faithfulness.json")
    evidence = fan_out(scorer, lambda c: claim_evidence(question, c, items, scorer=scorer, cache=cache, ask=params.ask,
                                                        top_m=params.top_m, form=params.form), claims_found)
    order = [FEATURES.index(f) for f in params.features]
    probs = params.probability(np.array([[e.features[j] for j in order] for e in evidence]))
    verdicts = [ClaimVerdict(claim=e.claim.text, supported=bool(p >= params.threshold), p=float(p),
                             passage=items[e.passage].id if e.passage is not None else None,
                             bridge=items[e.bridge].id if e.bridge is not None else None)
                for e, p in zip(evidence, probs)]
    if (ruled := rule_verdict(question, answer, [p.text for p in items])) is not None:
        _, supported, why = ruled
        verdicts = [v.model_copy(update={"supported": supported, "rule": why}) for v in verdicts]
    score = sum(v.supported for v in verdicts) / len(verdicts)
    return Faithfulness(applicable=True, kind="claims", score=score, claims=verdicts,
                        model_calls=sum(e.calls for e in evidence))


def fit_params(x: np.ndarray, y: np.ndarray, *, names: Sequence[str] = FEATURES, c: float = 1.0,
               weights: np.ndarray | None = None, **extra: Any) -> FaithfulnessParams:
    """Standardise, L2 logistic regression (scikit-learn) of the answer labels ``y`` on the answers' worst-claim
    features ``x`` (``worst``); ``extra``: the other ``FaithfulnessParams`` fields (ask, top_m, info)."""
    from sklearn.linear_model import LogisticRegression

    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale == 0] = 1.0
    model = LogisticRegression(C=c, max_iter=2000).fit((x - mean) / scale, y.astype(int), sample_weight=weights)
    return FaithfulnessParams(features=list(names), mean=mean.tolist(), scale=scale.tolist(),
                              coef=model.coef_[0].tolist(), intercept=float(model.intercept_[0]), **extra)
