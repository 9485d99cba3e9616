"""Which of A or B is X? A question choosing one of two options by what the passages say of it, decided from them.

The checker model reads one claim against one window. "Mark L. Lester" to "Which director is American, Mark L.
Lester or Ken Loach?" is right only because Loach's sentences say English and Lester's say American, two places
the model does not weigh against each other. Such a question is decided here, without a model, when the passages
single one option out:

1. The question offers two options (``question_forms.question_options``, one group of two) and compares nothing
   (``_COMPARES``: no "more", "first", "larger", "older" …; comparisons by date are ``judging.grounded.comparison``'s).
2. What it asks (``asked``): the content words of the question without the options' words and the question's own
   frame ("which", "one", "following" …).
3. Each option's sentences (``comparison.about``). The words of 2 found in neither option's sentences are the
   question's frame ("director", a word the passage puts another way) and are dropped; of the rest, at least one
   must be there. The option whose sentences hold all of them, none negated, while the other's lack at least one,
   is the answer (``Choice``). Otherwise None, and the model's verdicts stand.
4. The answer (``choice_of``) must name exactly one option and do nothing else: a bare name ("Ochagavia",
   "Alexander "Alex" Cox" for "Alex Cox"), or the option with at most one word beyond the question's ("Béla Bartók
   was Hungarian."); no number, no negation.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from evaluations.judging.grounded.comparison import about, name_pattern, negation
from evaluations.judging.basics.lexicon import FILLER, similar, stems
from evaluations.judging.basics.question_forms import COMPARATIVES, question_options
from evaluations.judging.basics.text import STOPWORDS

__all__ = ["Choice", "asked", "choice_of", "choose", "verdict"]

#: words beyond ``question_forms.COMPARATIVES`` of a question that compares or relates its options: no choice by what is said
_RELATES = tuple("""
    fewest furthest farthest wider widest second newer newest lower lowest before after than both neither either same
    different
""".split())
_COMPARES = re.compile(rf"\b(?:{'|'.join((*COMPARATIVES, *_RELATES))})\b", re.I)
#: the kind of thing asked about: the words after "which" / "what" up to its verb, a comma or the end
_VERB = r"(?:is|was|are|were|has|had|have|did|does|do|can|could|will|would)"
_KIND = re.compile(rf"\b(?:which|what)\s+(.*?)(?=\s*(?:\b{_VERB}\b|[,?:;]|$))", re.I)
_AUX = re.compile(r"^\W*(?:is|are|was|were|do|does|did|can|could|has|have|had|will|would)\s+(?:the\s+)?", re.I)
_FRAME = stems("which what who whom whose one ones following these those two of between")
_NEGATION = negation("non", "without", "formerly", "former")


@dataclass(frozen=True)
class Choice:
    """The option the passages single out, and the words that do it."""

    options: tuple[str, str]
    answer: int
    words: tuple[str, ...]

    def reason(self) -> str:
        return (f"chosen by what the passages say: {' '.join(self.words)} of {self.options[self.answer]}, "
                f"not of {self.options[1 - self.answer]}")


def _stems(text: str) -> frozenset[str]:
    return stems(text) | stems(text.replace("-", " "))  # "Oscar-nominated": oscar too


def _has(word: str, held: frozenset[str]) -> bool:
    """``word`` or a form of it is held: ``lexicon.similar``, or one is the other and a letter ("gam", "game")."""
    return similar(word, held) or len(word) >= 3 and any(
        abs(len(h) - len(word)) <= 1 and (h.startswith(word) or word.startswith(h)) for h in held if len(h) >= 3)


def asked(question: str, options: Sequence[str]) -> frozenset[str]:
    """The stems of what the question asks of the option (module docstring, step 2): not the options' words, not
    the frame's, not the kind of thing asked about ("Which *singer* is from Britain", "Which *individual from the
    silent film era*, A or B, mainly filmed …": both options are one, whatever the passages call them)."""
    kind = _KIND.search(question)
    text = question[:kind.start(1)] + question[kind.end(1):] if kind else question
    return stems(text) - stems(" ".join(options)) - FILLER - _FRAME


def choose(question: str, texts: Sequence[str]) -> Choice | None:
    """The option the passages single out (module docstring, steps 1-3), or None."""
    groups = [g for g in question_options(question) if len(g) == 2]
    if len(groups) != 1 or _COMPARES.search(question):
        return None
    a, b = groups[0]
    if (aux := _AUX.match(question)) is not None and not question[aux.end():].startswith(a):
        return None  # "Was Robert Heaton born in Canada or England?": the options are not what is asked about
    runs = about(a, texts, (b,)), about(b, texts, (a,))
    if not runs[0] or not runs[1]:
        return None
    said = [[sentence for run in r for sentence in run] for r in runs]
    held = [_stems(" ".join(s)) for s in said]
    wanted = asked(question, (a, b))
    words = frozenset(w for w in wanted if _has(w, held[0]) or _has(w, held[1]))
    if not words or 2 * len(words) < len(wanted):
        return None  # most of what is asked is in neither passage: what is left does not single one out
    having = [i for i in (0, 1) if all(_has(w, held[i]) for w in words)]
    if len(having) != 1:
        return None
    chosen = having[0]
    if any(_NEGATION.search(s) and any(_has(w, _stems(s)) for w in words) for s in said[chosen]):
        return None
    return Choice(options=(a, b), answer=chosen, words=tuple(sorted(words)))


def choice_of(choice: Choice, question: str, answer: str) -> int | None:
    """Index of the option the answer names and does nothing else with (module docstring, step 4), or None."""
    options = choice.options
    named = [i for i, o in enumerate(options) if name_pattern(o, [x for x in options if x != o]).search(answer)]
    if len(named) != 1 or re.search(r"\d", answer) or _NEGATION.search(answer):
        return None
    words = re.findall(r"[^\W\d_][\w'’-]*", answer)
    if not answer.rstrip().endswith(".") and len(words) <= 6 and all(
            w[0].isupper() or w.lower() in STOPWORDS for w in words):
        return named[0]  # a bare name, maybe in full ("Béla Viktor János Bartók")
    extra = stems(answer) - stems(question) - stems(" ".join(options)) - FILLER
    return named[0] if len(extra) <= 1 else None


def verdict(question: str, answer: str, texts: Sequence[str]) -> tuple[bool, str] | None:
    """(supported, why) of an answer that only names one option the passages single out."""
    if (chosen := choose(question, texts)) is None or (named := choice_of(chosen, question, answer)) is None:
        return None
    return named == chosen.answer, chosen.reason()
