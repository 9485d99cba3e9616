"""Controls: answers whose verdict is known by construction, to show a judge rejects non-answers and accepts answers.

Built from answerable questions with gold answers (``questions.QAItem``), deterministic for a seed. ``CATEGORIES``
is the registry (kind, builder, description); every list of categories derives from it.

Negative controls (the judge must say incorrect): ``echo``, ``restatement``, ``restatement_worded`` (the question
given back inside one of ten wordings, ``WORDINGS``: "Regarding …, the document has the details."), ``echo_wrapped``
(the question given back whole beside one of eight remarks, ``REMARKS``: "Good question: …"), ``heading``,
``refusal``, ``off_topic_sentence`` (the first sentence of another question's passage), ``other_gold`` (another question's gold that shares no keyword with this one's), ``empty``, ``options`` ("A or
B": the question's own options when it offers them, else this gold or another question's gold).
Positive controls (the judge must say correct): ``gold_bare``, ``gold_sentence`` (the gold inside a sentence),
``gold_detail`` (the gold plus the passage sentence that contains it, else plus another gold alternative in
brackets, else plus the restated question as context), ``gold_after_question`` (the question given back, then the
gold), ``paraphrase`` (rule-based: a date or number written
another way — "October 10, 2023" -> "10 October 2023", "1,000" -> "1000", "3" -> "three" — else another gold
alternative, else "It is G."). The paraphrase is only as varied as these rules: it checks format tolerance, not
synonymy.

The reference-free judges have their own controls (``PASSAGE_CONTROLS``: judge -> categories, built by
``build_passage_controls`` from any question file whose rows carry their passage):
``faithfulness`` — ``copied_sentence`` (a sentence of the passage, the one holding the gold answer when there is
one: supported) and ``swapped_fact`` (that sentence, else another of the passage's, with one number, else one
capitalised name, replaced by one absent from the passage: not supported); ``context_relevance`` —
``own_passage`` (the question's own passage: needed) and ``other_passage`` (another question's passage that does
not contain this question's gold: not needed). The other passage and the swapped-in names come from a ``pool`` of
questions (judge-check gives every question of its files, not only the first ``--limit``).

``run_controls`` gives each judge's rate per category: rejection rate (share judged incorrect) for negatives,
acceptance rate for positives, with the Wilson 95% interval
    (p̂ + z²/2n ± z·sqrt(p̂(1−p̂)/n + z²/4n²)) / (1 + z²/n),  z = 1.96
(``statsmodels.stats.proportion.proportion_confint(method="wilson")``); a category passes at rate ≥ ``min_rate``.
A category the files gave no control of is not checked (``NO_CONTROLS`` says why): no failure, but no pass either
— a judge that says yes to everything passes every positive category, so a check is only as good as its negatives.
A control whose verdict the judge's model failed to give (an error status, no yes/no) is counted as ``failed``,
apart from the ones the judge does not apply to (``not_judged``): neither is in the rate.

The files judge-check is given are read by ``judging.labels.read.read_questions``: each file once, questions told
apart by file and id (an id given to two different questions is an error), and labelled rows need only a question
and its gold.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np

from evaluations.judging.grounded.claims import sentences
from evaluations.judging.labels.data import LabelledAnswer
from evaluations.judging.labels.questions import QAItem
from evaluations.judging.basics.text import STOPWORDS, keywords

__all__ = ["CATEGORIES", "NO_CONTROLS", "PASSAGE_CONTROLS", "Control", "build_controls", "build_passage_controls",
           "run_controls", "ControlReport", "restate", "restate_worded", "WORDINGS", "echo_wrapped", "REMARKS",
           "heading", "paraphrase", "swap_fact"]

REFUSALS = ("I don't know.", "The context does not say.", "I cannot answer that from the information given.",
            "There is no information about this in the documents.", "Sorry, I am not able to answer this question.")
_WH = re.compile(r"^\s*(what|which|who|whom|whose|when|where|why|how)\b(\s+(many|much|long|old|often|far))?\s*",
                 re.I)
_WH_NOUN = re.compile(r"^(what|which)\s+([a-z]+(?:\s[a-z]+)?)\s+(did|does|do|is|are|was|were|has|have)\s+(.+)$", re.I)
_AUX = re.compile(r"^(is|are|was|were|do|does|did|has|have|had|can|could|will|would|should)\s+", re.I)
_MONTHS = ("January February March April May June July August September October November December").split()
_DATE = re.compile(r"\b(" + "|".join(_MONTHS) + r")\s+(\d{1,2}),?\s+(\d{4})\b")
_NUMBER_WORDS = ("zero one two three four five six seven eight nine ten eleven twelve").split()


@dataclass(frozen=True)
class Control:
    category: str
    answer: LabelledAnswer


def restate(question: str) -> str:
    """The question as a statement without its answer: the wh-word and a following auxiliary dropped
    ("what did X launch" -> "X launch"), "who got X" -> "The person who got X", the question mark made a period."""
    text = question.strip().rstrip("?").strip()
    noun = _WH_NOUN.match(text)  # "What initiative did X launch" -> "The initiative that X launch"
    if noun:
        return f"The {noun.group(2)} that {noun.group(4)}."
    wh = _WH.match(text)
    rest = text[wh.end():] if wh else text
    aux = _AUX.match(rest)
    if aux:
        rest = rest[aux.end():]
    if wh and wh.group(1).lower() in ("who", "whom", "whose") and not aux:
        rest = f"the person who {rest}"
    rest = rest[:1].upper() + rest[1:] if rest else text
    return rest + "."


def heading(question: str) -> str:
    """A heading of the question's content words: "<W2 W3 W4 W5>: An Overview" in Title Case."""
    words = [w for w in re.findall(r"[A-Za-z][\w'-]*", question) if w.lower() not in STOPWORDS]
    title = [w if w[0].isupper() else w.capitalize() for w in (words[1:5] if len(words) > 2 else words)]
    return f"{' '.join(title) or 'The Question'}: An Overview"


def paraphrase(item: QAItem) -> str:
    gold = item.references[0]
    date = _DATE.search(gold)
    if date:
        return gold.replace(date.group(0), f"{int(date.group(2))} {date.group(1)} {date.group(3)}")
    if re.fullmatch(r"\d{1,3}(,\d{3})+", gold.strip()):
        return gold.replace(",", "")
    if gold.strip().isdigit() and int(gold) < len(_NUMBER_WORDS):
        return _NUMBER_WORDS[int(gold)]
    if gold.strip().lower() in _NUMBER_WORDS:
        return str(_NUMBER_WORDS.index(gold.strip().lower()))
    if len(item.references) > 1:
        return item.references[1]
    return f"It is {gold.rstrip('.')}."


def _sentence_with(passage: str, gold: str) -> str | None:
    return next((s for s in sentences(passage) if gold.lower() in s.lower() and len(s) <= 400), None)


def _gold_detail(item: QAItem, rng: np.random.Generator, pool: Sequence[QAItem]) -> str:
    gold = item.references[0].rstrip(".")
    sentence = _sentence_with(item.context, gold) if item.context else None
    if sentence and sentence.strip().lower() != gold.lower():
        return f"{gold}. {sentence}"
    if len(item.references) > 1:
        return f"{gold} ({item.references[1]})"
    return f"{gold}. That is the answer to: {item.question.strip()}"


@lru_cache(maxsize=None)
def _gold_words(references: tuple[str, ...]) -> frozenset[str]:
    return frozenset().union(*(keywords(r) for r in references))


def _short(item: QAItem) -> bool:
    gold = item.references[0]
    return len(gold.split()) <= 4 and " or " not in f" {gold.lower()} "


def _other(item: QAItem, rng: np.random.Generator, pool: Sequence[QAItem],
           accept: Callable[[QAItem], bool] = lambda p: True) -> QAItem:
    """Another question of ``pool`` (``accept``-ed) whose gold shares no keyword with this one's; ``item`` itself
    when there is none. Random draws first (large pools), then a full scan (small ones)."""
    mine = _gold_words(tuple(item.references))

    def fits(p: QAItem) -> bool:
        return p.group != item.group and accept(p) and not mine & _gold_words(tuple(p.references))

    for _ in range(64):
        p = pool[int(rng.integers(len(pool)))]
        if fits(p):
            return p
    candidates = [p for p in pool if fits(p)]
    return candidates[int(rng.integers(len(candidates)))] if candidates else item


def _options(item: QAItem, rng: np.random.Generator, pool: Sequence[QAItem]) -> str | None:
    """The question's own options ("A or B?") when it offers them, else this short gold or another question's
    short gold; None (no control) when the golds are sentences or themselves say "or"."""
    offered = re.search(r"([\w' -]+?)\s+or\s+([\w' -]{1,40})\?", item.question)
    if offered:  # as many words before "or" as the option after it has
        right = offered.group(2).split()
        left = offered.group(1).split()[-len(right):]
        return f"{' '.join(left)} or {' '.join(right)}"
    if not _short(item):
        return None
    other = _other(item, rng, pool, accept=_short)
    return None if other is item else f"{item.references[0].rstrip('.')} or {other.references[0].rstrip('.')}"


#: wrappers of the question given back (``restatement_worded``): none of the judges' rules was written from them
WORDINGS = (
    "This question is about {topic}.",
    "Regarding {topic}, the document has the details.",
    "The answer relates to {topic}.",
    "It concerns {topic}.",
    "Here is what the text says about {topic}.",
    "The context discusses {topic}.",
    "That depends on {topic}.",
    "The information about {topic} is given above.",
    "You asked about {topic}.",
    "This is a question of {topic}.",
)


#: remarks around the question given back whole (``echo_wrapped``); ``{question}`` is the question as asked
REMARKS = (
    "Good question: {question}",
    "{question} I will need to check.",
    "Let me restate it: {question}",
    "{question} That is the question here.",
    "Hmm, {question}",
    "Thanks for asking. {question}",
    "{question} Many people ask this.",
    "Before answering, note the question: {question}",
)


def echo_wrapped(question: str) -> str:
    """The question given back whole, with one of ``REMARKS`` before or after it (one per question, seeded by it)."""
    rng = _own_rng(question)
    rng.integers(len(WORDINGS))  # restate_worded's draw, so that the two differ in step
    asked = question.strip()
    asked = asked if asked.endswith("?") else asked + "?"
    return REMARKS[int(rng.integers(len(REMARKS)))].format(question=asked)


def _own_rng(question: str) -> np.random.Generator:
    """A generator seeded by the question (CRC-32): the later categories draw from it, so adding them left the
    draws of the earlier ones as they were."""
    return np.random.default_rng(zlib.crc32(question.encode("utf-8")))


def restate_worded(question: str) -> str:
    """The question given back inside one of ``WORDINGS`` (one per question, seeded by it): "The answer relates to
    where the base of GCHQ is." The wh-word stays: the wrapper says what the question is about without answering
    it."""
    rng = _own_rng(question)
    topic = question.strip().rstrip("?").strip()
    topic = topic[:1].lower() + topic[1:] if topic[1:2].islower() else topic
    return WORDINGS[int(rng.integers(len(WORDINGS)))].format(topic=topic)


def _off_topic_sentence(item: QAItem, rng: np.random.Generator, pool: Sequence[QAItem]) -> str | None:
    """The first sentence (6 words or more) of another question's passage without this question's gold that shares
    no keyword with the question (nor one alike: "Normans" / "Normandy", ``lexicon.similar``) and less than a fifth
    of its keywords with the question's own passage (another paragraph of the same article is on its subject):
    fluent, and about something else."""
    other = _other_passage(item, _own_rng(item.question), pool)
    from evaluations.judging.basics.lexicon import similar, stems

    asked, own = stems(item.question), stems(item.context)

    def elsewhere(sentence: str) -> bool:  # no word of the question, few of its passage (not the same article)
        words = stems(sentence)
        return (len(sentence.split()) >= 6 and not any(similar(w, asked) for w in words)
                and len(words & own) < 0.2 * len(words))

    return next((s for s in sentences(other) if elsewhere(s)), None) if other else None


Builder = Callable[[QAItem, np.random.Generator, Sequence[QAItem]], "str | None"]  # None: no control
#: category -> (kind, builder, description)
CATEGORIES: dict[str, tuple[str, Builder, str]] = {
    "echo": ("negative", lambda i, r, p: i.question, "the question echoed back"),
    "restatement": ("negative", lambda i, r, p: restate(i.question), "the question restated as a statement"),
    "heading": ("negative", lambda i, r, p: heading(i.question), "a heading made of the question's words"),
    "restatement_worded": ("negative", lambda i, r, p: restate_worded(i.question),
                           "the question given back inside another wording (\"The answer relates to ...\")"),
    "echo_wrapped": ("negative", lambda i, r, p: echo_wrapped(i.question),
                     "the question given back whole beside a remark (\"Good question: ...\")"),
    "refusal": ("negative", lambda i, r, p: REFUSALS[int(r.integers(len(REFUSALS)))], "a refusal to answer"),
    "other_gold": ("negative", lambda i, r, p: _other(i, r, p).references[0], "another question's gold answer"),
    "off_topic_sentence": ("negative", _off_topic_sentence,
                           "the first sentence of another question's passage: fluent, about something else"),
    "empty": ("negative", lambda i, r, p: "", "an empty answer"),
    "options": ("negative", _options, "a hedge between candidates (A or B)"),
    "gold_bare": ("positive", lambda i, r, p: i.references[0], "the gold answer alone"),
    "gold_sentence": ("positive", lambda i, r, p: f"The answer is {i.references[0].rstrip('.')}.",
                      "the gold answer in a sentence"),
    "gold_detail": ("positive", _gold_detail, "the gold answer with extra correct detail"),
    "gold_after_question": ("positive", lambda i, r, p: f"{i.question.strip().rstrip('?. ')}? "
                                                         f"{i.references[0].rstrip('.')}.",
                            "the question given back, then the gold answer"),
    "paraphrase": ("positive", lambda i, r, p: paraphrase(i), "the gold answer written another way"),
}


_NUMBER = re.compile(r"\b\d+(?:[.,]\d+)?\b")
_NAME = re.compile(r"(?<=[a-z,;] )[A-Z][a-z]{2,}\b")


def _copied(item: QAItem) -> str | None:
    """The passage sentence holding the gold answer, else its first sentence of 6 to 60 words."""
    gold = item.references[0].rstrip(".") if item.references else ""
    found = _sentence_with(item.context, gold) if gold else None
    if found:
        return found
    return next((s for s in sentences(item.context) if 6 <= len(s.split()) <= 60), None)


def swap_fact(sentence: str, passage: str, names: Sequence[str], rng: np.random.Generator) -> str | None:
    """``sentence`` with one number replaced by a number absent from ``passage`` (first choice), else one
    capitalised word inside the sentence replaced by one of ``names`` absent from ``passage``; None when neither."""
    numbers = _NUMBER.findall(sentence)
    if numbers:
        number = numbers[int(rng.integers(len(numbers)))]
        digits = number.replace(",", "")
        value = float(digits) if "." in digits else int(digits)
        for step in (7, 13, 29, 101):
            new = str(value + step)
            if new not in passage:
                return re.sub(rf"\b{re.escape(number)}\b", new, sentence, count=1)
    inside = [m.group(0) for m in _NAME.finditer(sentence)]
    fresh = [n for n in names if n not in passage]
    if inside and fresh:
        old = inside[int(rng.integers(len(inside)))]
        return re.sub(rf"\b{re.escape(old)}\b", fresh[int(rng.integers(len(fresh)))], sentence)
    return None


@lru_cache(maxsize=None)
def _names(passage: str) -> tuple[str, ...]:
    """The capitalised words of ``passage`` that ``swap_fact`` may put in or take out (``_NAME``), sorted."""
    return tuple(sorted({m.group(0) for m in _NAME.finditer(passage)}))


@lru_cache(maxsize=None)
def _passage_words(passage: str) -> frozenset[str]:
    return frozenset(keywords(passage))


def _swap_sentences(item: QAItem) -> list[str]:
    """The sentences a fact may be swapped in: the copied one first, then the passage's others of 6 to 60 words."""
    copied = _copied(item)
    rest = [s for s in sentences(item.context) if 6 <= len(s.split()) <= 60 and s != copied]
    return ([copied] if copied else []) + rest


def _swapped(item: QAItem, rng: np.random.Generator, pool: Sequence[QAItem]) -> str | None:
    """A passage sentence with one fact swapped (``swap_fact``): the copied sentence, else the first other one
    that has a number or a name to swap; the fresh names come from another passage of ``pool`` that has a name
    absent from this one."""
    candidates = _swap_sentences(item)
    if not candidates:
        return None
    other = _other(item, rng, pool, accept=lambda p: p.context != item.context
                   and any(n not in item.context for n in _names(p.context)))
    names = _names(other.context) if other is not item else ()
    return next((s for s in (swap_fact(c, item.context, names, rng) for c in candidates) if s is not None), None)


def _other_passage(item: QAItem, rng: np.random.Generator, pool: Sequence[QAItem]) -> str | None:
    """Another passage of ``pool`` that has no keyword of this question's gold, nor any gold as a substring
    (a gold inside a longer word, "Odo" in "orthodoxy", shares no keyword with it)."""
    gold = _gold_words(tuple(item.references))
    refs = [r.lower() for r in item.references]
    other = _other(item, rng, pool, accept=lambda p: bool(p.context.strip()) and p.context != item.context
                   and not gold & _passage_words(p.context) and not any(r in p.context.lower() for r in refs))
    return None if other is item else other.context


PassageBuilder = Callable[[QAItem, np.random.Generator, Sequence[QAItem]], "tuple[str, str] | None"]
#: reference-free judge -> category -> (kind, builder -> (answer, passage) or None, description)
PASSAGE_CONTROLS: dict[str, dict[str, tuple[str, PassageBuilder, str]]] = {
    "faithfulness": {
        "copied_sentence": ("positive", lambda i, r, p: (a, i.context) if (a := _copied(i)) else None,
                            "a sentence copied from the passage"),
        "swapped_fact": ("negative", lambda i, r, p: (a, i.context) if (a := _swapped(i, r, p)) else None,
                         "a passage sentence with one number or name swapped for one absent from the passage"),
    },
    "context_relevance": {
        "own_passage": ("positive", lambda i, r, p: ("", i.context), "the question's own passage"),
        "other_passage": ("negative", lambda i, r, p: ("", c) if (c := _other_passage(i, r, p)) else None,
                          "another question's passage, without this question's gold"),
    },
}
PASSAGE_CONTROLS["groundedness"] = PASSAGE_CONTROLS["faithfulness"]

_ALWAYS = "no answerable question with a gold answer (and a passage, for a reference-free judge) in the files"
#: category -> why the files can give no control of it (said when a category goes unchecked)
NO_CONTROLS: dict[str, str] = {
    **{c: _ALWAYS for c in (*CATEGORIES, "own_passage")},
    "options": "no question offers options (\"A or B?\") and no two questions have short golds (≤ 4 words, "
               "without \"or\") that share no keyword",
    "other_gold": "no two questions have golds that share no keyword",
    "restatement": "every gold answer is in its question's own words (a restatement would state it)",
    "restatement_worded": "every gold answer is in its question's own words (a restatement would state it)",
    "off_topic_sentence": "no passage of the files is another question's without words of this question's gold, "
                          "or none has a sentence of 6 words or more",
    "heading": "every gold answer is in its question's own words (a heading would state it)",
    "copied_sentence": "no passage has a sentence holding the gold (≤ 400 characters) or one of 6 to 60 words",
    "swapped_fact": "no passage sentence has a number to change, nor a capitalised name to replace by one that "
                    "another passage of the files has and this passage lacks",
    "other_passage": "no passage of the files is another question's without words of this question's gold (do "
                     "all the questions share one passage?)",
}


def build_passage_controls(items: Sequence[QAItem], judge: str, seed: int = 0,
                           pool: Sequence[QAItem] | None = None) -> list[Control]:
    """The controls of reference-free ``judge`` (``PASSAGE_CONTROLS``) for every answerable question of ``items``
    with gold and a passage. Another question's passage and the names a fact is swapped for are drawn from
    ``pool`` (every question with a passage; default ``items``): give the whole file, so that the few questions
    of a ``--limit`` that share one passage still get them."""
    rng = np.random.default_rng(seed)
    targets = [i for i in items if i.answerable and i.references and i.context.strip()]
    material = [i for i in (items if pool is None else pool) if i.context.strip()]
    out = []
    for item in targets:
        for category, (kind, build, _) in PASSAGE_CONTROLS[judge].items():
            made = build(item, rng, material)
            if made is None:
                continue
            answer, passage = made
            out.append(Control(category, LabelledAnswer(
                question=item.question, references=tuple(item.references), answer=answer,
                label=kind == "positive", group=item.group, source=item.source, system=f"control:{category}",
                context=passage, passages=(passage,))))
    return out


def informative(item: QAItem) -> bool:
    """Every gold alternative says something the question does not (a keyword outside the question's): else a
    restatement of the question states the gold, and is no control ("where is Oak Island filmed" / "Oak Island")."""
    asked = keywords(item.question)
    return all(keywords(r) - asked for r in item.references)


def build_controls(items: Sequence[QAItem], seed: int = 0) -> list[Control]:
    """Every category for every answerable question with gold (unanswerable ones are skipped), except where a
    question cannot give one (module docstring; ``informative``)."""
    rng = np.random.default_rng(seed)
    pool = [i for i in items if i.answerable and i.references]
    out = []
    for item in pool:
        for category, (kind, build, _) in CATEGORIES.items():
            answer = build(item, rng, pool)
            if answer is None or (category == "other_gold" and answer == item.references[0]):
                continue  # this question cannot give that control (no short gold, no disjoint gold)
            if category in ("restatement", "restatement_worded", "heading") and not informative(item):
                continue  # the gold is in the question's own words: restating it states the gold
            out.append(Control(category, LabelledAnswer(
                question=item.question, references=tuple(item.references), answer=answer,
                label=kind == "positive", group=item.group, source=item.source, system=f"control:{category}",
                context=item.context)))
    return out


@dataclass
class CategoryResult:
    """One judge on one category's controls. ``passed`` is None when the files gave no control of the category:
    the category is not checked (``why``: ``NO_CONTROLS``), which is no pass either (``ControlReport.unchecked``);
    a category whose controls the judge all left unjudged fails. ``failed``: controls whose verdict the judge's
    model failed to give (``run_controls``'s ``failed``), counted apart from ``not_judged`` (the judge does not
    apply to them)."""

    category: str
    kind: str
    n: int
    not_judged: int
    rate: float
    ci: tuple[float, float]
    passed: bool | None
    why: str | None = None
    failed: int = 0

    def to_dict(self) -> dict[str, Any]:
        def clean(x: float) -> float | None:
            return None if x != x else x

        return {"category": self.category, "kind": self.kind, "n": self.n, "not_judged": self.not_judged,
                "failed": self.failed, "rate": clean(self.rate), "ci95": [clean(c) for c in self.ci],
                "pass": self.passed, "not_checked": self.why}


@dataclass
class ControlReport:
    min_rate: float
    questions: int
    judges: dict[str, list[CategoryResult]] = field(default_factory=dict)

    def failures(self) -> list[tuple[str, str]]:
        return [(j, r.category) for j, rows in self.judges.items() for r in rows if r.passed is False]

    def unchecked(self) -> list[tuple[str, str, str]]:
        """(judge, category, why) of every category the files gave no control of: not measured, so not passed."""
        return [(j, r.category, r.why or "") for j, rows in self.judges.items() for r in rows if r.passed is None]

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"min_rate": self.min_rate, "questions": self.questions, "judges": {}}
        for judge, rows in self.judges.items():
            rates = {kind: [r.rate for r in rows if r.kind == kind and r.n] for kind in ("negative", "positive")}
            out["judges"][judge] = {
                "categories": [r.to_dict() for r in rows],
                "min_rejection": min(rates["negative"]) if rates["negative"] else None,
                "min_acceptance": min(rates["positive"]) if rates["positive"] else None,
                "failed": sum(r.failed for r in rows),  # controls the judge's model gave no verdict on
                # a judge passes when every category was measured and passed; None: none failed, some unchecked
                "pass": False if any(r.passed is False for r in rows) else
                        None if any(r.passed is None for r in rows) else True,
            }
        return out


FailedMask = Callable[[Sequence[LabelledAnswer], np.ndarray], np.ndarray]  # (examples, verdicts) -> failed or not


def run_controls(controls: Sequence[Control], judges: dict[str, Callable[..., np.ndarray]], *, min_rate: float = 0.95,
                 progress: Callable[[str, int], None] | None = None,
                 categories: dict[str, tuple[str, Any, str]] | None = None,
                 failed: dict[str, FailedMask] | None = None) -> ControlReport:
    """Each batch judge (``agreement.BatchJudge``) on every control; rates per category (module docstring).
    ``categories``: the registry the controls come from (default ``CATEGORIES``; ``PASSAGE_CONTROLS[judge]``).
    ``failed``: per judge, which of its verdicts failed (its model gave none), asked after the judge ran: those
    controls are counted as ``failed``, not as ``not_judged`` (a judge without one has no failed verdict)."""
    categories = CATEGORIES if categories is None else categories
    from evaluations.judging.validation.agreement import wilson

    examples = [c.answer for c in controls]
    names = np.array([c.category for c in controls])
    report = ControlReport(min_rate, len({e.group for e in examples}))
    for name, run in judges.items():
        step = (lambda k, _n=name: progress(_n, k)) if progress is not None else None
        verdicts = np.asarray(run(examples, step), dtype=float)
        broken = (np.asarray(failed[name](examples, verdicts), dtype=bool) if failed and name in failed
                  else np.zeros(len(examples), dtype=bool)) & np.isnan(verdicts)
        rows = []
        for category, (kind, _, _) in categories.items():
            mask = names == category
            judged = mask & ~np.isnan(verdicts)
            n = int(judged.sum())
            hits = int(((verdicts[judged] > 0.5) == (kind == "positive")).sum())
            rate = hits / n if n else float("nan")
            low, high = wilson(hits, n) if n else (float("nan"),) * 2
            passed = None if not mask.any() else bool(n) and rate >= min_rate
            lost = int((mask & broken).sum())
            rows.append(CategoryResult(category, kind, n, int(mask.sum()) - n - lost, rate, (float(low), float(high)),
                                       passed, None if mask.any() else NO_CONTROLS.get(category, "the files gave none"),
                                       lost))
        report.judges[name] = rows
    return report
