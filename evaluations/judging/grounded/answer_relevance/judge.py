"""The answer-relevance judge (the package docstring): ``answer_form`` (rules 1-2: the answer's form),
``answer_relevance`` and ``answer_relevance_batch`` (the rules, 0-4), and ``judge_answer_relevance`` (the shipped
judge: the rules, then the naming screen, ``judging.grounded.naming``).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from evaluations.judging.basics.lexicon import stems
from evaluations.judging.basics.question_forms import affirms_polar, picks_option
from evaluations.judging.basics.text import normalize
from evaluations.judging.correctness.nonanswer import KINDS as NONANSWER_KINDS, answers_polar, is_refusal, screen
from evaluations.judging.correctness.semantic import embed_texts
from evaluations.judging.grounded.answer_relevance.given_back import (added_text, affirms_question, as_asked, asks_back,
                                                                      asks_several, bare_polar, beside_echo,
                                                                      declines_after_restating, embeds,
                                                                      embeds_by_meaning, fills_slot, gives_back,
                                                                      keeps_asking, one_wh_question, restates)
from evaluations.judging.grounded.answer_relevance.topic import (FAR_COS, MIN_ABOUT, TOPIC_THRESHOLD, VOUCH_ABOUT,
                                                                 VOUCH_CLOSE, another_subject, far_from_question, topic,
                                                                 topic_reason, ungrounded_title)
from evaluations.judging.grounded.answer_relevance.words import (ASKED, ENTITY_ASKED, GENERIC, TITLE_ASKED, WH_WORDS,
                                                                 asked_type, context_name, Embed, own_name,
                                                                 plain_digits, question_stems, quotes_a_name, sentences,
                                                                 title_shaped)
from evaluations.judging.grounded.claims import has_verb
from evaluations.judging.grounded.naming import OVERRULE_KEYWORDS, OVERRULES, Naming

__all__ = ["KINDS", "Relevance", "answer_form", "answer_relevance", "answer_relevance_batch", "judge_answer_relevance"]


#: rejection kind -> what it means: the screen's non-answer kinds, then this judge's own ("relevant" is the pass)
KINDS: dict[str, str] = {
    **{kind: NONANSWER_KINDS[kind] for kind in ("empty", "refusal", "echo", "options", "restatement", "heading")},
    "wrong_type": "the answer's form cannot be the asked type",
    "off_topic": "an answer about something else: neither its words nor its meaning are those of the context "
                 "near the question",
    "no_answer": "the judge model's reading of it holds no answer to the question (the naming screen)",
}


#: the screen's kinds taken as they are (its restatement and heading rules read gold answers: ``restates``)
SCREEN_KINDS = ("empty", "refusal", "echo", "options")


@dataclass(frozen=True)
class Relevance:
    verdict: bool
    kind: str  # a ``KINDS`` key when rejected, "relevant" when accepted
    reason: str  # names the rule


def answer_form(question: str, answer: str, answerable: bool, context: str = "") -> Relevance | None:
    """Rules 1 and 2 (the answer's form: non-answers, restatements, the asked type), or None when they pass.
    ``context``: the text the system was given, if known (an answer naming what it holds restates nothing)."""
    answer = as_asked(question, answer)
    if not answerable and (is_refusal(answer, question) or declines_after_restating(question, answer)):
        return Relevance(True, "relevant", "declines a question marked unanswerable")
    screened = screen(question, (), answer)
    if screened.kind in SCREEN_KINDS and not (screened.kind == "options" and asks_several(question)):
        return Relevance(False, screened.kind, f"{screened.kind}: {screened.reason}")
    if (screened.kind == "heading" and not TITLE_ASKED.search(question) and not ENTITY_ASKED.search(question)
            and stems(answer) & stems(question) and not own_name(answer, question_stems(question), context)):
        return Relevance(False, "heading", f"heading: {KINDS['heading']} (shaped like a title; the question does not "
                                           "ask for one)")
    if (wh := bare_polar(question, answer)) is not None:
        return Relevance(False, "wrong_type", f"wrong_type: a bare yes or no to a question that asks {wh}")
    if (declined := declines_after_restating(question, answer)) is not None:
        return Relevance(False, "refusal", f"refusal: {KINDS['refusal']} ({declined})")
    # an answer that keeps the question's asking phrase ("... during which late period.") or is itself a wh-question
    # leaves it open, whatever option or proposition its words also hold
    restated = (None if not keeps_asking(question, answer) and not one_wh_question(answer) and (
                    picks_option(question, answer) or answers_polar(question, answer)
                    or affirms_question(question, answer) or fills_slot(question, answer) is not None
                    or quotes_a_name(question, answer) is not None)
                else restates(question, answer) or gives_back(question, answer) or asks_back(question, answer))
    if restated is not None and context_name(question, answer, context) is None:
        kind = "heading" if title_shaped(answer) else "restatement"
        return Relevance(False, kind, f"{kind}: {KINDS[kind]} ({restated})")
    asked = asked_type(question)
    affirms = asked == "polar" and affirms_polar(question, answer)  # "X supports Y." to "Does X support Y?"
    # a number or a time must be in what the answer adds: "The coach of the 2014-15 team was Mike Jordan." gives no
    # date to "What is the birth date of the coach of the 2014-15 team?"
    said = answer
    if asked in ("number", "time"):  # the question's own words are no value: drop the answer's copies of them
        # (not its asking words: "when" in the answer is a condition, "... necessary when it is filled")
        given = set(re.findall(r"\d[\w'’.,-]*", question)) | set(normalize(question).split()) - WH_WORDS
        said = " ".join(t for t in answer.split() if t.strip(".,;:!?()") not in given
                        and normalize(t) not in given)
    if asked is not None and not ASKED[asked].accepts(said) and not affirms:
        return Relevance(False, "wrong_type",
                         f"wrong_type: the question asks for a {asked}, the answer has {ASKED[asked].needs}")
    return None


def answer_relevance(question: str, answer: str, context: str | None = None, *, answerable: bool = True,
                     embed: Embed | None = None, cache: bool | Path | None = True) -> Relevance:
    """Judge one answer (module docstring). ``context``: the text the system was given (None or "" when unknown);
    ``answerable`` False: the question has no answer, and a refusal is the relevant reply. ``embed``: texts ->
    L2-normalised vectors (default: ``semantic.embed_texts``, cached on disk: ``cache`` True the default file, a
    path that file, False or None no cache)."""
    answer = as_asked(question, answer or "")
    embed = embed or functools.partial(embed_texts, cache_path=cache)
    return _verdict(question, answer, beside_echo(question, answer, context or ""), context, answerable, embed)


def _verdict(question: str, answer: str, rest: str | None, context: str | None, answerable: bool,
             embed: Embed) -> Relevance:
    """``answer_relevance`` of an answer already read as asked (``as_asked``), with what it says beside the question
    it gives back (``beside_echo``: None when it gives none back)."""
    if rest is None:
        return _judged(question, answer, context, answerable, embed)
    if not rest:  # judged by what it says beside the question given back
        return Relevance(False, "echo", f"echo: {KINDS['echo']}, with nothing of its own beside it")
    judged = _judged(question, rest, context, answerable, embed)
    return judged if judged.verdict else Relevance(
        False, "echo", f"echo: {KINDS['echo']}, and the rest is no answer ({judged.reason})")


def _judged(question: str, answer: str, context: str | None, answerable: bool, embed: Embed) -> Relevance:
    """``answer_relevance`` of an answer that does not give the question back beside other words."""
    form = answer_form(question, answer, answerable, context or "")
    if form is not None:
        return form
    embedded = None if context_name(question, answer, context or "") else embeds_by_meaning(question, answer, embed)
    if embedded is not None:
        return Relevance(False, "restatement", f"restatement: {KINDS['restatement']} ({embedded})")
    signals = topic(question, answer, context or "", embed) if sentences(context or "") else None
    if signals is not None and signals.about >= MIN_ABOUT and signals.score() < TOPIC_THRESHOLD:
        return Relevance(False, "off_topic", f"off_topic: {topic_reason(signals)}")
    if (signals is not None and signals.about < MIN_ABOUT and signals.found == signals.total
            and signals.asked < FAR_COS and has_verb(answer)):
        return Relevance(False, "off_topic", f"off_topic: a sentence made of a context that is not about the question "
                                             f"(its closest sentence {signals.about:.2f} < {MIN_ABOUT:g}), its meaning "
                                             f"far from the question's (cosine {signals.asked:.2f} < {FAR_COS:g})")
    if signals is not None and signals.about >= MIN_ABOUT and (
            titled := ungrounded_title(question, answer, context or "")) is not None:
        return Relevance(False, "heading", f"heading: {KINDS['heading']} ({titled})")
    if (other := another_subject(question, answer)) is not None:
        return Relevance(False, "off_topic", f"off_topic: {other}")
    vouched = signals is not None and signals.about >= VOUCH_ABOUT and signals.close >= VOUCH_CLOSE
    if not vouched and (far := far_from_question(question, answer, embed)) is not None:
        return Relevance(False, "off_topic", f"off_topic: {far}")
    asked = asked_type(question)
    return Relevance(True, "relevant", "relevant: " + (f"a {asked} as asked" if asked else "addresses the question")
                     + ("" if sentences(context or "")
                        else " (no context: the answer was compared with the question only)"))


def answer_relevance_batch(cases: Sequence[tuple[str, str, str | None, bool]], *, cache: bool | Path | None = True,
                           progress: Callable[[int], None] | None = None) -> list[Relevance]:
    """``answer_relevance`` of many (question, answer, context, answerable) cases, the texts of every case that
    reaches the off-topic rule embedded in one batch (``semantic.embed_texts``)."""
    return _rules(cases, cache, progress)[0]


def _rules(cases: Sequence[tuple[str, str, str | None, bool]], cache: bool | Path | None,
           progress: Callable[[int], None] | None) -> tuple[list[Relevance], list[str | None]]:
    """``answer_relevance_batch``'s verdicts, and for each case what it says beside the question it gives back
    (``beside_echo``, asides dropped: "When was Montreal captured? In 1760." says "In 1760."; None when it does not
    give the question back beside other words): the text the rules judged, which the naming screen reads."""
    cases = [(q, as_asked(q, a or ""), c, ok) for q, a, c, ok in cases]
    rests = [beside_echo(q, a, c or "") for q, a, c, ok in cases]
    judged = [(q, rest or a, c, ok) for (q, a, c, ok), rest in zip(cases, rests)]  # the text each verdict reads
    texts = [t for q, a, c, ok in judged if answer_form(q, a, ok, c or "") is None
             for t in (q, a, *([added_text(q, a)] if embeds(q, a) else []), *sentences(c or ""))]
    unique = list(dict.fromkeys(texts))
    vectors = embed_texts(unique, cache_path=cache, progress=progress)
    row = {t: i for i, t in enumerate(unique)}

    def lookup(batch: Sequence[str]) -> np.ndarray:
        return vectors[[row[t] for t in batch]]

    return [_verdict(q, a, rest, c, ok, lookup) for (q, a, c, ok), rest in zip(cases, rests)], rests


def _keywords(answer: str) -> int:
    """How many keywords an answer has (kw(A) − ``GENERIC``, numbers as digits)."""
    return len(stems(plain_digits(answer)) - GENERIC)


def judge_answer_relevance(cases: Sequence[tuple[str, str, str | None, bool]], naming: Naming | None, *,
                           cache: bool | Path | None = True,
                           progress: Callable[[int], None] | None = None) -> list[Relevance]:
    """The shipped judge: ``answer_relevance_batch`` (the rules), then the naming screen (``judging.grounded.naming``)
    on every answer of at least ``naming.MIN_WORDS`` words the rules accept, or reject as ``off_topic``, to a question
    with an answer: one batched pass of the embedded judge model, its P(answers) kept in ``naming``'s verdict store.
    An accepted answer below the probe's threshold (a long reply's: ``Naming.threshold_for``) is ``no_answer``; an
    ``off_topic`` one of at most ``naming.OVERRULE_KEYWORDS`` keywords at ``naming.OVERRULES`` or above is relevant
    (rules 3-4 read MiniLM's meaning and the context's words, and reject casual answers the model reads as answers:
    "That'd be 1946."; a longer answer is judged by its words). The screen reads what the rules judged: the answer
    beside the question given back (``_rules``), else the answer as given. ``naming`` None: the rules alone (the judge
    ``answer_relevance_rules`` of ``judge-check``, and the rule tests)."""
    results, rests = _rules(cases, cache, progress)
    if naming is None:
        return results
    read = {i: rest or a or "" for i, ((q, a, c, ok), r, rest) in enumerate(zip(cases, results, rests))
            if (r.verdict or r.kind == "off_topic") and ok and q.strip()}  # only the answers it may change
    asked = [i for i, text in read.items() if naming.reads(text)]
    named = naming.names([(cases[i][0], read[i]) for i in asked])
    for i, (ok, p, limit) in zip(asked, named):
        if results[i].verdict and not ok:
            results[i] = Relevance(False, "no_answer", f"no_answer: {KINDS['no_answer']} (P(answers) {p:.2f} < "
                                                       f"{limit:.3g}); the rules had accepted it: "
                                                       f"{results[i].reason}")
        elif not results[i].verdict and p >= OVERRULES and _keywords(read[i]) <= OVERRULE_KEYWORDS:
            results[i] = Relevance(True, "relevant", f"relevant: the judge model reads an answer in it (P(answers) "
                                                     f"{p:.2f} >= {OVERRULES}), overruling {results[i].reason}")
    return results
