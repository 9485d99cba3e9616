"""The non-answer screen: answers that say nothing, judged incorrect before any judge model sees them.

Every correctness judge (offline, embedded LLM, served LLM, combined) runs ``screen`` first. An answer to an
answerable question that the screen classifies as a non-answer is incorrect, with the kind and the reason
recorded; on an unanswerable question (RepliQA's "not found", CLAPNQ / SQuAD 2.0 / TechQA impossible rows) the
rule is reversed: a refusal is the correct answer and anything else is not. Everything else is left to the
judge (``Screen.decided is None``).

The screen uses signals, not per-dataset patterns. With kw(x) the keyword stems of x (``text.keywords``, light
suffix stemming, ``stem``) and Q, A, G the question, the answer and one gold alternative:

* novel(A)  = kw(A) − kw(Q) − FILLER: what the answer adds beyond the question's words;
* inf(G)    = kw(G) − kw(Q), less words similar to a question word (below): the gold's *informative* keywords (RepliQA-style golds restate the question,
  so overlap with the whole gold rewards a restatement; only these words carry the answer);
* recall    = max over alternatives with inf(G) ≠ ∅ of |inf(G) ∩ kw(A)| / |inf(G)| (None when no alternative has one);
* has_gold  = some alternative occurs in A (``lexical.containment``), or all of its keywords do, or recall > 0;
  a keyword counts as present when A has it or a word sharing a prefix of ≥ 5 characters and ≥ 70% of the
  shorter one ("mitochondria" for "mitochondrion").

Kinds (``KINDS``, checked in this order; the first that applies wins):

* ``empty``: no letter or digit;
* ``refusal``: a refusal / "I don't know" phrase and not has_gold;
* ``echo``: A is the question (same normalised text, or a question whose words add nothing: novel(A) = ∅ and A
  ends with "?");
* ``options``: A hedges between candidates: at most OPTIONS_MAX_WORDS words, "X or Y" (parts of at most
  OPTION_MAX_WORDS words) with two or more parts that have keywords, not all of them gold (a part is gold when it
  contains a gold alternative or most of its informative words, or shares a word with one);
* ``restatement``: not has_gold, A does not pick one of the question's options (``picks_option``, below) nor
  answer a yes/no question with its polarity (``answers_polar``: "No, X does not Y."), A is
  mostly the question's words (|kw(A) ∩ kw(Q)| ≥ max(1, |kw(A)|/2)) and adds (almost) nothing:
  |novel(A)| ≤ RESTATE_SHARE · |kw(A)| when the gold has informative words, novel(A) = ∅ otherwise (a one-word
  paraphrase of the gold shares nothing with the question);
* ``heading``: not has_gold, no option picked, and A is shaped like a title (4–10 words, no comma or final period,
  a function word or a colon, ≥ 60% of its content words capitalised, no finite verb from a small list), not to a
  who-question unless it reuses the question's words;
* ``fragment``: the asked-for part is missing: a date is asked for explicitly ("on which date", "what day";
  a plain "when" accepts a year) and every gold alternative has a month but A gives only a
  year; a number is asked (how many / how much / what percentage) and the gold has one but A has none.

An answer that picks one of the options a question offers ("Arthur's Magazine" or "Arthur's Magazine was started
first." to "Which magazine was started first, Arthur's Magazine or First for Women?") uses only the question's words
by necessity: it is an answer, not a restatement or a heading. ``question_options``: around each "or" of the
question, the option on each side is the run of capitalised words next to it (function words such as "of" or "for"
inside it, a leading article left out: "the Rolling Stones", "F. Scott Fitzgerald") or else the content words next
to it, as many as both sides have (up to ``OPTION_RUN``: "a musician or an actor", "the red button or the green
button"; "a public or private company" is "public" / "private"), and the short items of a comma list before it
("Poland, Austria or Switzerland"). An "or" offers a choice only when no stopword stands next to it ("one or more",
"whether or not"), and the question starts with an auxiliary ("Is it … or …?"), or the left option is its comma
piece's only words (", the Kessler Tower or …"), or the question compares (``_COMPARES``: first, most, taller …) and
the options end it. ``picks_option``: every keyword of the answer is the question's, the answer has a keyword of
exactly one option that neither another option nor the rest of the question has, it does not say "or" itself (a
hedge is the ``options`` kind), and, when it is shaped like a title (no final period, ≥ 60% of its content words
capitalised), it has at most one keyword beyond that option's (a heading of the question's words that names one
option is still a heading). ``answers_polar``: a yes/no word the question lacks, answering a yes/no question
(``is_polar``), adds the polarity ("No, X does not Y."); a statement of the question's proposition answers it "yes"
(``affirms_polar``: "Paris is the capital of France." to "Is Paris the capital of France?"). Both count only without
gold: with gold, a pick that is not the gold is the judge's to reject, and the screen keeps those verdicts. """

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from evaluations.judging.correctness import lexical
from evaluations.judging.basics.text import STOPWORDS, normalize, tokens

__all__ = ["KINDS", "FILLER", "Screen", "screen", "is_refusal", "Signals", "signals", "novelty", "informative_recall",
           "stem", "stems", "similar", "has_number", "NUMBER_WORDS", "MONTH", "YEAR", "question_options",
           "picks_option", "POLAR_WORDS", "POLARITY", "AUX_START", "is_polar", "answers_polar",
           "affirms_polar", "COMPARATIVES", "VAGUE"]

#: kind -> what it means (every list of kinds derives from this registry)
KINDS: dict[str, str] = {
    "empty": "the answer is empty or whitespace",
    "refusal": "a refusal or 'I don't know' to a question that has an answer",
    "echo": "the question echoed back",
    "options": "a hedge between candidates ('A or B') instead of one answer",
    "restatement": "the question restated: the answer adds nothing beyond the question's words",
    "heading": "a heading or title instead of an answer",
    "fragment": "a fragment that misses the asked-for part (a year for a date, no number for 'how many')",
}

#: words an answer adds without adding content (generic nouns, adjectives and discourse words)
FILLER = frozenset(
    """
    new various several many important different way ways thing things answer question information mentioned
    according stated said says say text context document passage article also specific certain main key
    significant particular following given provided based regarding related part role one ones kind type
    include includes including well like use used using make made often however overall
    """.split()
)
OPTIONS_MAX_WORDS = 10  # an "X or Y" answer longer than this is a sentence that mentions alternatives
OPTION_MAX_WORDS = 5  # ... and so is one with a longer part
OPTION_RUN = 3  # a lowercase option of a question: at most this many content words ("static IP address")
RESTATE_SHARE = 0.2

_REFUSAL = re.compile(
    r"\b(i (?:do not|dont|cannot|cant|am unable to|am not able to|couldnt|could not) (?:know|answer|find|determine|say|"
    r"tell|provide|help)|(?:not|no|none) (?:mentioned|specified|stated|provided|given|available|found|known|"
    r"discussed|included|indicated|disclosed|addressed)|no (?:information|answer|mention|details?|data|"
    r"relevant information)|(?:does|do|did) not (?:say|mention|specify|state|provide|contain|include|indicate|"
    r"address|answer)|doesnt (?:say|mention|specify|state|provide|contain|include)|(?:cannot|cant|can not) be "
    r"(?:determined|answered|found)|unable to (?:answer|determine|find|provide)|not (?:possible|able) to "
    r"(?:answer|determine|say)|unanswerable|not enough information|insufficient information|"
    r"(?:im|i am) (?:sorry|not sure)|as an ai|no way to (?:know|tell))\b"
)
#: words that refuse only when the answer says nothing else ("Unknown.", "The author is unknown." to "Who wrote
#: it?"), while "A term used originally in derision, Huguenot has unclear origins." answers a question about the
#: name's origin; "nothing else": stopwords, the question's words and ``_GENERIC``
_HEDGE = re.compile(r"\b(unknown|unclear|is not clear)\b")
_GENERIC = frozenset("answer information context passage question document documents text exact exactly source "
                     "sources provided given currently still clear".split())
_LETTER = re.compile(r"\w")
YEAR = re.compile(r"\b(1[0-9]{3}|20[0-9]{2})\b")
_MONTHS = (
    "january february march april may june july august september october november december "
    "jan feb mar apr jun jul aug sep sept oct nov dec"
).split()
MONTH = re.compile(r"\b(" + "|".join(_MONTHS) + r")\b")
NUMBER_WORDS = frozenset(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety hundred thousand million "
    "billion trillion dozen half quarter once twice single double triple none".split()
)
_DIGIT = re.compile(r"\d")
_ASKS_DATE = re.compile(r"\b(what|which|exact) (date|day)\b|\bon (what|which) (date|day)\b")
_ASKS_NUMBER = re.compile(r"\bhow (many|much|long|old|far|often|tall|big|large)\b|\bwhat (percentage|percent|number|"
                          r"amount|proportion|share)\b")
_WHO = re.compile(r"^\s*(who|whom|whose)\b", re.I)
_VERBS = frozenset(
    "is are was were be been has have had do does did will would can could shall should may might must "
    "said says made makes took takes gave gives became becomes found finds led leads began begins".split()
)
_OR = re.compile(r"\s*(?:\bor\b|/)\s*")
#: a yes/no word of an answer, and the auxiliary a polar question starts with (``is_polar``)
POLAR_WORDS = ("yes", "no", "not", "never", "true", "false", "correct", "incorrect", "indeed", "none", "neither", "nor",
               "nt", "cannot")
POLARITY = re.compile(rf"\b({'|'.join(POLAR_WORDS)})\b")
AUX_START = re.compile(r"^\W*(is|are|was|were|am|do|does|did|can|could|will|would|should|shall|has|have|had|may|"
                        r"might|must|isn't|aren't|wasn't|weren't|don't|doesn't|didn't)\b", re.I)


#: irregular past forms -> base form, and number words -> digits, so "overcame" matches "overcome", "eleven" "11"
_IRREGULAR = dict(
    pair.split(":") for pair in """
    overcame:overcome became:become began:begin gave:give given:give took:take taken:take made:make found:find
    led:lead won:win wrote:write written:write said:say went:go gone:go came:come built:build held:hold
    brought:bring thought:think bought:buy taught:teach sought:seek chose:choose chosen:choose drove:drive
    driven:drive rose:rise grew:grow grown:grow knew:know known:know threw:throw drew:draw drawn:draw flew:fly
    spoke:speak spoken:speak broke:break broken:break stole:steal wore:wear froze:freeze ran:run sat:sit
    stood:stand understood:understand kept:keep left:leave felt:feel meant:mean met:meet paid:pay sent:send
    spent:spend lost:lose told:tell sold:sell heard:hear fought:fight caught:catch fell:fall fallen:fall hid:hide
    shot:shoot struck:strike fed:feed fled:flee saw:see seen:see did:do done:do ate:eat eaten:eat got:get
    zero:0 one:1 two:2 three:3 four:4 five:5 six:6 seven:7 eight:8 nine:9 ten:10 eleven:11 twelve:12
    thirteen:13 fourteen:14 fifteen:15 sixteen:16 seventeen:17 eighteen:18 nineteen:19 twenty:20
    """.split()
)


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """A light English suffix stripper (plural, past, -ing, -ly), enough to match 'launched' with 'launch';
    irregular past forms and number words through ``_IRREGULAR``."""
    if word in _IRREGULAR:
        return _IRREGULAR[word]
    for suffix, keep in (("ies", "y"), ("ied", "y"), ("ing", ""), ("ed", ""), ("es", ""), ("ly", ""), ("s", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            stem = word[: len(word) - len(suffix)] + keep
            if suffix in ("ing", "ed") and len(stem) > 3 and stem[-1] == stem[-2]:
                stem = stem[:-1]  # "planned" -> "plan"
            return stem
    return word


def stems(text: str) -> frozenset[str]:
    """kw(text): the stems (``stem``) of its non-stopword tokens."""
    return frozenset(stem(t) for t in tokens(text) if t not in STOPWORDS)


#: indefinite pronouns that stand for the asked thing without naming it ("Somebody.", "Somebody ranked Warsaw
#: 32nd."): an answer adding only these to the question's words says nothing
VAGUE = frozenset(stem(w) for w in "somebody someone something somewhere sometime somehow".split())


def is_refusal(answer: str, question: str = "") -> bool:
    """A refusal or "I don't know" phrase (normalised text, ``_REFUSAL``) in a short answer (≤ 30 words) or
    among the first 12 words of a longer one (a long answer that mentions "not stated" in passing is not one); or
    a hedge ("unknown", "unclear", ``_HEDGE``) in an answer with no content word besides it, the ``question``'s
    words and ``_GENERIC`` ("Unknown.", "Its origin is unknown." to a question about the origin, but not "A term used
    originally in derision, Huguenot has unclear origins.")."""
    text = normalize(answer)
    match = _REFUSAL.search(text)
    if match is None:
        if not _HEDGE.search(text):
            return False
        asked = stems(question)
        return all(w in STOPWORDS or w in _GENERIC or stem(w) in asked for w in _HEDGE.sub(" ", text).split())
    return len(text.split()) <= 30 or len(text[: match.start()].split()) < 12


@dataclass(frozen=True)
class Signals:
    """The screen's measurements of one (question, gold, answer) triple (module docstring)."""

    novel: frozenset[str]
    answer_keywords: int
    shared: int  # |kw(A) ∩ kw(Q)|: how much of the answer is the question's own words
    recall: float | None  # informative-keyword recall; None when no gold alternative has informative words
    contains_gold: bool

    @property
    def has_gold(self) -> bool:
        return self.contains_gold or (self.recall or 0.0) > 0


def similar(word: str, others: frozenset[str]) -> bool:
    """``word`` is in ``others``, or shares a prefix of ≥ 5 characters and ≥ 70% of the shorter word with one of
    them ("mitochondria" ~ "mitochondrion", "hellenismos" ~ "hellenism")."""
    if word in others:
        return True
    for other in others:
        n = min(len(word), len(other))
        if n >= 5 and word[:5] == other[:5]:
            k = next((i for i, (x, y) in enumerate(zip(word, other)) if x != y), n)
            if k >= 0.7 * n:
                return True
    return False


def signals(question: str, refs: Sequence[str], answer: str) -> Signals:
    q, a = stems(question), stems(answer)
    recalls = []
    contains = bool(refs) and lexical.containment(list(refs), answer)
    for ref in refs:
        gold = stems(ref)
        informative = frozenset(w for w in gold - q if not similar(w, q))  # "canadian" is not news after "canada"
        if informative:
            recalls.append(sum(similar(w, a) for w in informative) / len(informative))
        elif gold and gold <= a:
            contains = True  # every gold keyword is in the answer (and in the question)
    return Signals(frozenset(a - q - FILLER), len(a), len(a & q), max(recalls) if recalls else None, contains)


def novelty(question: str, answer: str) -> float:
    """|novel(A)| / |kw(A)|: the share of the answer's keywords that are not the question's (0 for no keywords)."""
    a = stems(answer)
    return len(a - stems(question) - FILLER) / len(a) if a else 0.0


def informative_recall(question: str, refs: Sequence[str], answer: str) -> float:
    """``signals().recall``, or containment (0/1) when no gold alternative has informative keywords."""
    s = signals(question, refs, answer)
    return s.recall if s.recall is not None else float(s.contains_gold)


@dataclass(frozen=True)
class Screen:
    """What the screen decided: ``decided`` False/True is the verdict, None leaves it to the judge."""

    decided: bool | None
    kind: str | None = None  # a ``KINDS`` key when the answer is a non-answer
    reason: str = ""

    @property
    def passed(self) -> bool:
        return self.decided is None


_PASS = Screen(None)


def screen(question: str, refs: Sequence[str], answer: str, *, answerable: bool = True) -> Screen:
    """Classify one answer (module docstring). ``answerable`` False: a refusal is correct, anything else is not."""
    answer = answer or ""
    if not _LETTER.search(answer):
        return Screen(False, "empty", KINDS["empty"])
    if not answerable:
        if is_refusal(answer, question):
            return Screen(True, None, "unanswerable question, and the answer declines: correct")
        return Screen(False, None, "unanswerable question, but the answer gives one instead of declining")
    s = signals(question, refs, answer)
    if is_refusal(answer, question) and not s.has_gold:
        return Screen(False, "refusal", KINDS["refusal"])
    if _is_echo(question, answer, s):
        return Screen(False, "echo", KINDS["echo"])
    options = _options(question, refs, answer)
    if options:
        return Screen(False, "options", f"{KINDS['options']}: {' / '.join(options)}")
    if not s.has_gold and not (not refs and (picks_option(question, answer) or answers_polar(question, answer))):
        limit = RESTATE_SHARE * s.answer_keywords if s.recall is not None else 0
        if len(s.novel) <= limit and s.shared >= max(1.0, 0.5 * s.answer_keywords):
            added = f" (adds only: {', '.join(sorted(s.novel))})" if s.novel else ""
            return Screen(False, "restatement", KINDS["restatement"] + added)
        if _is_heading(question, answer):
            return Screen(False, "heading", KINDS["heading"])
    fragment = _fragment(question, refs, answer)
    if fragment:
        return Screen(False, "fragment", fragment)
    return _PASS


_OPTION_BOUNDARY = re.compile(r"[?!;:()\[\]\"]|\.(?=\s+[a-z]|\s*$)")
_OPTION_WORD = re.compile(r"[\w'’.&-]+")
_OPTION_JOINERS = frozenset("of for the and de van von da del la le du & in on at to a an from with upon v. v vs. vs"
                            .split())  # "v." of "Lawrence v. Texas"
#: the words of a comparison a wh-question asks to decide between options ("who sold the most records elvis or the
#: beatles")
COMPARATIVES: tuple[str, ...] = tuple("""
    first last more most less least fewer older oldest younger youngest earlier earliest later latest bigger biggest
    larger largest smaller smallest higher highest taller tallest longer longest shorter shortest better best worse
    worst faster fastest slower slowest greater greatest heavier heaviest closer closest farther further
""".split())
_COMPARES = re.compile(rf"\b({'|'.join(COMPARATIVES)})\b", re.I)
_QUESTION_WORD = re.compile(r"^\W*(who|whom|whose|what|which|when|where|why|how|is|are|was|were|do|does|did|can|could|"
                            r"will|would|has|have|had)\b", re.I)


def _option(words: list[str], size: int = 1) -> list[str]:
    """The option among ``words`` (the words on one side of an "or", nearest first): the run of capitalised
    words (joiners inside it; an article next to the "or" skipped), else the first ``size`` words of the run of
    content words next to the "or" (``_plain``), else the first content word."""
    words = _unarticled(words)
    run: list[str] = []
    for word in words:
        if word[:1].isupper() or word[:1].isdigit() or (run and word.lower() in _OPTION_JOINERS):
            run.append(word)
        else:
            break
    while run and run[-1].lower() in _OPTION_JOINERS:
        run.pop()
    return run or _plain(words)[:size] or [w for w in words if stems(w)][:1]


def _unarticled(words: list[str]) -> list[str]:
    return words[1:] if len(words) > 1 and words[0].lower() in ("the", "a", "an") else words


def _plain(words: list[str]) -> list[str]:
    """The content words next to the "or" up to a function word or a verb ("green button" of "green button in the
    corner"), at most ``OPTION_RUN``."""
    return list(itertools.takewhile(lambda w: w.lower() not in STOPWORDS and w.lower() not in _VERBS,
                                    words))[:OPTION_RUN]


def _listed(pieces: list[str]) -> list[str]:
    """The items of a comma list before the "or"'s left option ("Poland, Austria or Switzerland"), nearest last:
    pieces of at most ``OPTION_MAX_WORDS`` words that are no clause of the question ("Which is taller", a quote, a
    piece with a verb)."""
    items: list[str] = []
    for piece in reversed(pieces):
        words = _OPTION_WORD.findall(piece)
        if (not words or len(words) > OPTION_MAX_WORDS or _QUESTION_WORD.search(piece) or '"' in piece
                or any(w.lower() in _VERBS for w in words)):
            break
        items.append(" ".join(words))
    return items[::-1]


@lru_cache(maxsize=4096)
def question_options(question: str) -> tuple[tuple[str, ...], ...]:
    """The options around each "or" of the question that offers a choice (module docstring), each group left to
    right; () when it offers none. Cached: the screen and answer relevance ask it of one question several times."""
    out = []
    polar = bool(AUX_START.search(question))
    for segment in _OPTION_BOUNDARY.split(question):
        for left, right in itertools.pairwise(re.split(r"\bor\b", segment, flags=re.I)):
            pieces = left.split(",")
            if len(pieces) > 1 and not pieces[-1].strip():
                pieces.pop()  # "A, B, or C"
            before, after = _OPTION_WORD.findall(pieces[-1])[::-1], _OPTION_WORD.findall(right.split(",")[0])
            if not before or not after or before[0].lower() in STOPWORDS or (
                    after[0].lower() in STOPWORDS and after[0].lower() not in ("the", "a", "an")):
                continue  # "one or more", "whether or not", "who or what": no option next to the "or"
            near, far = _option(before), _option(after)
            skipped = len(after) > 1 and after[0].lower() in ("the", "a", "an")
            own_piece = all(w.lower() in ("the", "a", "an") for w in before[len(near):])  # ", the Kessler Tower or"
            if not polar and not own_piece and (stems(" ".join(after[len(far) + skipped:]))
                                                or not _COMPARES.search(question)):
                continue  # "imposing policies on certain peoples or regions?": no choice is asked
            # lowercase options as long as both sides' runs of content words allow: "red button or green button"
            # (not "red or green button": a shared noun belongs to both, and neither option is told by it)
            size = min(len(_plain(_unarticled(before))), len(_plain(_unarticled(after))))
            near, far = _option(before, size), _option(after, size)
            group = (*_listed(pieces[:-1]), " ".join(reversed(near)), " ".join(far))
            if all(stems(o) for o in group[-2:]):
                out.append(group)
    if not out and _QUOTES.search(question):  # quoted options ('… first, "Everson v. Board" or "Rasul v. Bush"?')
        return question_options(_QUOTES.sub("", question))
    if not out and (_WHICH_ONE.search(question) or _WHO_IS_MORE.search(question)):
        pairs = [pair for segment in _OPTION_BOUNDARY.split(question) for pair in _and_pairs(segment)]
        if len(pairs) == 1:  # "Between Kim Clijsters and Mary Pierce, who is older?"
            out.append(pairs[0])
    return tuple(out)


_QUOTES = re.compile(r'["“”]')
#: the question asks to choose between things it names: "which one", "which of the two", "who is older"
_WHICH_ONE = re.compile(r"\bwhich\s+(?:one|of\s+(?:the|these|those|them|both))\b", re.I)
_WHO_IS_MORE = re.compile(r"\b(?:who|which)\s+(?:is|was|are|were)\s+(?:[\w-]+\s+){0,2}?" + _COMPARES.pattern[2:], re.I)


def _and_pairs(segment: str) -> list[tuple[str, str]]:
    """Two names joined by "and" in a question that asks to choose ("El Nuevo Cojo and Golf Magazine are both …,
    but which one …?"): the runs of capitalised words on both sides of each "and" (``_option``), both capitalised."""
    pairs = []
    for match in re.finditer(r"\band\b", segment):
        before = _OPTION_WORD.findall(segment[:match.start()].split(",")[-1])[::-1]
        after = _OPTION_WORD.findall(segment[match.end():].split(",")[0])
        if not before or not after or not before[0][:1].isupper() or not after[0][:1].isupper():
            continue
        near, far = _option(before), _option(after)
        if near and far and near[-1][:1].isupper() and not _QUESTION_WORD.match(near[-1]) and all(
                stems(o) for o in (" ".join(near), " ".join(far))):
            pairs.append((" ".join(reversed(near)), " ".join(far)))
    return pairs


_ASKS_OTHER = re.compile(r"\b(?:know|tell|name|explain|show|help|list|describe|and|if so|if yes|if not)\b\W+"
                         r"(?:\w+\W+){0,3}?"
                         r"(?:who|whom|whose|what|which|where|when|why|how)\b", re.I)


def is_polar(question: str) -> bool:
    """A yes/no question: it starts with an auxiliary ("Is", "Did", "Can" ...; not an all-caps name such as "WAS
    8.5"), offers no options (``question_options``), and asks nothing else ("Can you tell me what …", "… and how
    is it used?")."""
    match = AUX_START.search(question)
    if match is None or match.group(1).isupper() and len(match.group(1)) > 1:
        return False
    return not question_options(question) and not _ASKS_OTHER.search(question)


def answers_polar(question: str, answer: str) -> bool:
    """A yes/no answer to a yes/no question ("No, DataPower does not support SHA-2." to "Does DataPower support
    SHA-2?"): its polarity, a yes/no word the question does not have, is what it adds to the question's words, so
    it restates nothing; or it affirms the question's proposition (``affirms_polar``)."""
    added = set(POLARITY.findall(normalize(answer))) - set(POLARITY.findall(normalize(question)))
    if not is_polar(question) or is_refusal(answer, question):
        return False
    return bool(added) or affirms_polar(question, answer)


_DO = frozenset({"do", "does", "did"})


def affirms_polar(question: str, answer: str) -> bool:
    """A statement answering a yes/no question "yes" in the question's own words ("Paris is the capital of France."
    to "Is Paris the capital of France?", "DataPower supports SHA-2." to "Does DataPower support SHA-2?"): no "?",
    a final period, and a sentence with the question's auxiliary in declarative order (after the sentence's first
    word), or for do/does/did that auxiliary or an inflected form (-s, -ed) of one of the question's words. The
    question with its auxiliary dropped ("Paris the capital of France.", ``controls.restate``) is no statement."""
    match = AUX_START.search(question)
    if match is None or not is_polar(question) or "?" in answer or not answer.strip().endswith("."):
        return False
    aux = match.group(1).lower()
    asked = set(re.findall(r"[\w'’]+", question.lower()))
    stemmed = {stem(w) for w in asked}
    for sentence in re.split(r"(?<=[.!])\s+|\n+", answer.strip()):
        words = re.findall(r"[\w'’]+", sentence.lower())[1:]
        if len(words) < 2:
            continue
        if aux in _DO and (any(w in _DO for w in words)
                           or any(w not in asked and w.endswith(("s", "ed")) and stem(w) in stemmed for w in words)):
            return True
        if aux not in _DO and aux in words:
            return True
    return False


def picks_option(question: str, answer: str) -> bool:
    """The answer picks one of the question's options (module docstring): all its keywords are the question's, and
    it has a keyword of exactly one option that no other option and not the rest of the question has ("first" of
    "started first" is no option's own); an answer that says "or" hedges and picks nothing, and a title-shaped one
    with two or more of the question's other keywords is a heading ("Instance Characterized Abstract"). An answer
    that names one option whole, with at most two more keywords, picks it even when the option's keywords are all
    the rest of the question's ("Portsmouth Cathedral" to "Which Cathedral is the seat of the Bishop of
    Portsmouth, Portsmouth Cathedral or Ely Cathedral?")."""
    return picked_option(question, answer) is not None


def picked_option(question: str, answer: str) -> tuple[tuple[str, ...], int] | None:
    """(the option group, index of the option) the answer picks (``picks_option``), else None."""
    have = stems(answer)
    asked = stems(question)
    if re.search(r"\bor\b", answer, re.I) or any(not similar(w, asked) for w in have - FILLER):
        return None
    words = [w for w in re.findall(r"[^\W\d_][\w'’-]*", answer) if w.lower() not in STOPWORDS]
    titled = (not answer.strip().endswith((".", "!", "?")) and bool(words)
              and sum(w[0].isupper() for w in words) >= 0.6 * len(words))
    for group in question_options(question):
        if (whole := _whole_option(group, answer)) is not None:
            return group, whole
        rest = question
        for option in group:
            rest = re.sub(rf"(?<!\w){re.escape(option)}(?!\w)", " ", rest, count=1)
        kws = [stems(o) - stems(rest) for o in group]
        own = [k - frozenset().union(*(other for j, other in enumerate(kws) if j != i)) for i, k in enumerate(kws)]
        hits = [i for i, k in enumerate(own) if any(similar(w, have) for w in k)]
        if len(hits) == 1 and not (titled and len(have - stems(group[hits[0]])) >= 2):
            return group, hits[0]
    return None


def _whole_option(group: Sequence[str], answer: str) -> int | None:
    """The one option of ``group`` the answer has whole (its words in order, any case) with at most two keywords
    beyond it ("Portsmouth Cathedral" to "Which Cathedral is the seat of the Bishop of Portsmouth, Portsmouth
    Cathedral or Ely Cathedral?", whose keywords are all the rest of the question's too), else None."""
    text = normalize(answer)
    whole = [i for i, o in enumerate(group)
             if stems(o) and re.search(rf"(?<!\w){re.escape(normalize(o))}(?!\w)", text)]
    if len(whole) != 1 or len(stems(answer) - stems(group[whole[0]]) - FILLER) > 2:
        return None
    return whole[0]


def _is_echo(question: str, answer: str, s: Signals) -> bool:
    if normalize(answer) == normalize(question):
        return True
    return answer.strip().endswith("?") and not s.novel


def _options(question: str, refs: Sequence[str], answer: str) -> list[str]:
    """The alternatives of an "X or Y" answer when it hedges: two or more parts with keywords, not all of them
    gold, and no gold alternative itself says "or"."""
    words = tokens(answer)
    if len(words) > OPTIONS_MAX_WORDS or any(_OR.search(normalize(r)) for r in refs):
        return []
    parts = [p for p in _OR.split(normalize(answer)) if p.strip()]
    if len(parts) < 2 or any(len(p.split()) > OPTION_MAX_WORDS for p in parts):
        return []
    keyworded = [p for p in parts if stems(p)]
    if len(keyworded) < 2:
        return []
    gold = [p for p in keyworded if refs and (lexical.containment(list(refs), p) or _gold_recall(refs, question, p))]
    return keyworded if len(gold) < len(keyworded) else []


def _gold_recall(refs: Sequence[str], question: str, part: str) -> bool:
    s = signals(question, refs, part)
    return s.contains_gold or (s.recall or 0.0) >= 0.5 or any(similar(w, stems(r)) for w in stems(part) for r in refs)


def _is_heading(question: str, answer: str) -> bool:
    text = answer.strip()
    if text.endswith((".", "!", "?")) or "\n" in text:
        return False
    words = re.findall(r"[^\W\d_][\w'’-]*", text)
    if not 4 <= len(words) <= 10 or "," in text:
        return False
    if not (":" in text or any(w.lower() in STOPWORDS for w in words)):
        return False  # "Nova Scotia Canada", "Lou Gehrig's Disease": a name, not a title
    content = [w for w in words if w.lower() not in STOPWORDS]
    if not content or any(w.lower() in _VERBS for w in words):
        return False
    capitalised = sum(1 for w in content if w[0].isupper())
    if capitalised / len(content) < 0.6:
        return False
    if _WHO.search(question) and not (stems(answer) & stems(question)):
        return False  # a name answering "who"
    return True


def _fragment(question: str, refs: Sequence[str], answer: str) -> str | None:
    q, a = normalize(question), normalize(answer)
    golds = [normalize(r) for r in refs]
    if _ASKS_DATE.search(q) and golds and all(MONTH.search(g) for g in golds):
        if YEAR.search(a) and not MONTH.search(a):
            return f"{KINDS['fragment']}: the question asks for a date, the answer gives only a year"
    if _ASKS_NUMBER.search(q) and golds and all(has_number(g) for g in golds) and not has_number(a):
        return f"{KINDS['fragment']}: the question asks for a number, the answer has none"
    return None


def has_number(text: str) -> bool:
    """A digit, or a number word (``NUMBER_WORDS``) among the normalised text's words."""
    return bool(_DIGIT.search(text)) or any(t in NUMBER_WORDS for t in text.split())
