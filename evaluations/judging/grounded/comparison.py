"""Which of two options came first? A question that compares two things by date, decided from the passages.

The checker model reads a claim and a window and says yes or no; it does not compare two values it reads ("Who was
born first, A or B?" with A born 1971 and B 1908 in the passages: P(yes) is about the same for either answer). A
comparison by date is decided here instead, without a model:

1. The question offers two options (``question_forms.question_options``: "…, A or B?") and asks for the earlier
   (``EARLIER``: first, earlier, older, oldest …) or the later one (``LATER``: later, younger, more recent …), not
   both. A question about deaths or endings ("died first", "closed earlier") is left alone.
2. The event compared is the question's verb (``EVENTS``: born; founded / established / formed / started …;
   released / published / premiered …; opened; launched; built), or, when it names none ("Who is older?",
   "Which company is older?"), a birth where the option's sentences say "born" and a founding otherwise.
3. An option's sentences: in each passage, from the sentence that first names it (its full words, else its last
   word when that is a capitalised name no other option has: "Clijsters" for "Kim Clijsters") up to the next
   sentence that names the other option ("It was established in 1851" belongs to the company named before it).
   Sentences are the claim splitter's, also split where a sentence end lost its space ("…in 1989.James Henry
   Miller"): text joined from two sources must not lend one option the other's year.
4. The option's year (1000-2099): the first year within ``NEAR`` words after a word of the event in its sentences
   ("opened to traffic on 14 May 1931", not "Construction began in 1926"); for a birth also the first year in the
   brackets right after its name ("Cyrus Harrow (1851–1923)"); else the first year after its name in the sentence
   that names it ("The Hunchback of Notre Dame is a 1996 American … film").
5. When both options have a year and the years differ, the earlier (or later) option is the answer.

``resolve`` returns that ``Comparison`` (or None), and the faithfulness judge uses it for an answer that only picks
one of the options (``picked``: "Aleksander Ford", "Cornel West was born earlier.", "Sir Francis Nethersole"; it
names exactly one option, has no number and no negation, and at most one word beyond the question's, the options'
and the comparison's): the pick is supported when it is the option the dates give, and not otherwise. Any other
answer ("A was born in 1961.", "A is younger than B") stays the model's.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from evaluations.judging.grounded.claims import sentences
from evaluations.judging.basics.lexicon import FILLER, stems
from evaluations.judging.basics.question_forms import question_options

__all__ = ["Comparison", "EVENTS", "about", "event_of", "name_pattern", "negation", "picked", "resolve", "verdict",
           "year_of"]

#: "before" / "after" only where nothing follows but the other option ("… came out before?", not "Nightmare Before
#: Christmas" or "after winning the title")
_LAST = r"(?=\s*(?:[?.,!]|$|the\s+other\b))"
EARLIER = re.compile(rf"\b(?:(?<!the )first|earlier|earliest|older|oldest|sooner|before{_LAST})\b", re.I)
LATER = re.compile(r"\b(?:later|latest|last|younger|youngest|newer|newest|more\s+recent(?:ly)?|most\s+recent(?:ly)?"
                   rf"|after{_LAST})\b", re.I)
ENDINGS = re.compile(r"\b(?:die[sd]?|death|dead|clos(?:e|ed|es|ing)|end(?:ed|s)?|dissolv\w*|defunct|retir\w*|"
                     r"abandon\w*|demolish\w*|disband\w*|cancel\w*)\b", re.I)
#: event -> the words that name it (a question's and a passage's)
EVENTS: dict[str, re.Pattern[str]] = {
    "born": re.compile(r"\bborn\b", re.I),
    "founded": re.compile(r"\b(?:found(?:ed|ing)|establish(?:ed|ment)|form(?:ed|ation)|start(?:ed)?|creat(?:ed|ion)|"
                          r"incorporat(?:ed|ion)|set\s+up|began|begun|organi[sz]ed)\b", re.I),
    "released": re.compile(r"\b(?:releas(?:e|ed)|publish(?:ed)?|publication|premiered?|debut(?:ed)?|aired|issued|"
                           r"came\s+out|first\s+shown)\b", re.I),
    "opened": re.compile(r"\b(?:open(?:ed|ing)|inaugurat(?:ed|ion))\b", re.I),
    "launched": re.compile(r"\blaunch(?:ed)?\b", re.I),
    "built": re.compile(r"\b(?:built|construct(?:ed|ion)|complet(?:ed|ion))\b", re.I),
}
NEAR = 8  # words between the event's word and its year


def negation(*more: str) -> re.Pattern[str]:
    """A negation: "not", "never", "no", "neither", "nor", "-n't", and the words ``more`` (the other rules' own)."""
    return re.compile(rf"\b(?:{'|'.join(('not', 'never', 'no', 'neither', 'nor', *more))})\b|n[’']t\b", re.I)


_NEGATION = negation()
_YEAR = re.compile(r"(?<![\d.,])(1\d{3}|20\d{2})(?!\d|[.,]\d)")  # "1966, in", not "1966,5" or "1966.5"
#: a sentence end that lost its space: "…in 1989.James", "…ONE OK ROCK.Doug", "…Merrill.100 East"
_GLUED = re.compile(r"(?:(?<=[a-z0-9)\]\"'”’])|(?<=[A-Z]{2}))\.(?=[A-ZÀ-Þ][a-zß-ÿA-ZÀ-Þ])"
                    r"|(?<=[a-z]{2})\.(?=\d)")


@dataclass(frozen=True)
class Comparison:
    options: tuple[str, str]
    years: tuple[int, int]
    earlier: bool  # the question asks for the earlier one (else the later)
    event: str | None  # the ``EVENTS`` key compared, None: the first year after the name

    @property
    def answer(self) -> int:
        """Index of the option the dates give."""
        first = 0 if self.years[0] < self.years[1] else 1
        return first if self.earlier else 1 - first

    def reason(self) -> str:
        (a, b), (x, y) = self.options, self.years
        return (f"compared by date{f' ({self.event})' if self.event else ''}: {a} {x}, {b} {y}; the "
                f"{'earlier' if self.earlier else 'later'} is {self.options[self.answer]}")


#: a year glued to the next date's day where a dash was lost ("(28 July 186622 December 1943)": 1866, 22 December)
_GLUED_YEAR = re.compile(r"(?<!\d)(1\d{3}|20\d{2})(\d{1,2}\s+(?:January|February|March|April|May|June|July|August|"
                         r"September|October|November|December)\b)")


@lru_cache(maxsize=256)
def _sentences(text: str) -> tuple[str, ...]:
    """The passage's sentences, split once: each rule asks for them per option (``about``, ``event_of``)."""
    text = _GLUED_YEAR.sub(r"\1 – \2", text)
    return tuple(part for s in sentences(text) for part in _GLUED.split(s) if part.strip())


def name_pattern(option: str, others: Sequence[str], short: bool = True) -> re.Pattern[str]:
    """The option's words (any spacing and case), or (``short``) its last word when that is a capitalised name of
    3+ letters no other option has."""
    words = option.split()
    full = r"\s+".join(map(re.escape, words))
    last = words[-1]
    if short and len(words) > 1 and last[:1].isupper() and len(last) > 2 and not any(
            last.lower() in o.lower().split() for o in others):
        return re.compile(rf"(?<!\w)(?:(?i:{full})|{re.escape(last)})(?!\w)")
    return re.compile(rf"(?<!\w){full}(?!\w)", re.I)


def _year_after(sentence: str, start: int, near: int | None = None) -> int | None:
    """The first year after ``start`` in ``sentence`` (within ``near`` words of it when given)."""
    if (match := _YEAR.search(sentence, start)) is None:
        return None
    if near is not None and len(sentence[start:match.start()].split()) > near:
        return None
    return int(match.group(1))


def about(option: str, texts: Sequence[str], others: Sequence[str] = ()) -> list[list[str]]:
    """Per passage that names the option, the sentences about it (module docstring, step 3), the first one naming
    it; [] when no passage names it."""
    if not option.split():
        return []
    full, loose = name_pattern(option, others, short=False), name_pattern(option, others)
    other = [name_pattern(o, [option]) for o in others]
    runs = []
    for text in texts:
        run: list[str] = []
        own = full if full.search(text) else loose  # "Journal" for "National Journal" only where it is not in full
        for sentence in _sentences(text):
            if run and any(p.search(sentence) for p in other) and not own.search(sentence):
                break
            if run or own.search(sentence):
                run.append(sentence)
        if run:
            runs.append(run)
    return runs


def year_of(option: str, texts: Sequence[str], others: Sequence[str] = (), event: str | None = None) -> int | None:
    """The option's year for ``event`` (module docstring, steps 3-4), or None."""
    if not (runs := about(option, texts, others)):
        return None
    own = name_pattern(option, others)
    if event is not None:
        for run in runs:
            if event == "born" and (m := re.match(r"\s*\(([^()]*)\)", run[0][own.search(run[0]).end():])):
                if (year := _YEAR.search(m.group(1))) is not None:  # "Cyrus Harrow (1851–1923)"
                    return int(year.group(1))
            for sentence in run:
                for word in EVENTS[event].finditer(sentence):
                    if (year := _year_after(sentence, word.end(), NEAR)) is not None:
                        return year
    for run in runs:  # the first year after its name, in the sentence that names it
        return _year_after(run[0], own.search(run[0]).end())
    return None


def event_of(question: str, options: Sequence[str], texts: Sequence[str]) -> str | None:
    """The ``EVENTS`` key the question compares (module docstring, step 2), or None (two named)."""
    asked = [name for name, words in EVENTS.items() if words.search(question)]
    if len(asked) == 1:
        return asked[0]
    if asked:
        return None  # two events named: which one is compared is not clear
    named = [s for t in texts for s in _sentences(t) if any(name_pattern(o, []).search(s) for o in options)]
    return "born" if any(EVENTS["born"].search(s) for s in named) else "founded"


def resolve(question: str, texts: Sequence[str]) -> Comparison | None:
    """The comparison by date the question asks, decided from ``texts`` (module docstring), or None."""
    earlier, later = bool(EARLIER.search(question)), bool(LATER.search(question))
    if earlier == later or ENDINGS.search(question):
        return None
    groups = [g for g in question_options(question) if len(g) == 2]
    if len(groups) != 1:
        return None
    a, b = groups[0]
    event = event_of(question, (a, b), texts)
    years = year_of(a, texts, (b,), event), year_of(b, texts, (a,), event)
    if years[0] is None or years[1] is None or years[0] == years[1]:
        return None
    return Comparison(options=(a, b), years=(years[0], years[1]), earlier=earlier, event=event)


def picked(comparison: Comparison, question: str, answer: str) -> int | None:
    """Index of the option the answer picks and does nothing else with (module docstring), or None."""
    options = comparison.options
    named = [i for i, o in enumerate(options) if name_pattern(o, [x for x in options if x != o]).search(answer)]
    if len(named) != 1 or re.search(r"\d", answer) or _NEGATION.search(answer):
        return None
    if (LATER if comparison.earlier else EARLIER).search(answer):
        return None  # "A is the younger one" to "who is older": not a pick of A as the older
    cue = (EARLIER if comparison.earlier else LATER).findall(answer)
    extra = stems(answer) - stems(question) - stems(" ".join(options)) - stems(" ".join(cue)) - FILLER
    return named[0] if len(extra) <= 1 else None


def verdict(question: str, answer: str, texts: Sequence[str]) -> tuple[bool, str] | None:
    """(supported, why) of an answer that only picks an option of a comparison by date the passages decide."""
    if (compared := resolve(question, texts)) is None or (pick := picked(compared, question, answer)) is None:
        return None
    return pick == compared.answer, compared.reason()
