"""Atomic claims of an answer, and the alignment signals of one claim against the retrieved passages.

Claims (``split_claims``, deterministic):

1. sentences (``sentences``): split after ". ", "! ", "? " before a capital letter or digit, and at line breaks and
   list bullets; abbreviations ("Dr.", "U.S.", "e.g.", initials) do not end a sentence;
2. filler in front is dropped ("Based on the context,", "According to the passage," "The passage states that"):
   ``FILLER_PREFIX``;
3. clauses (``clauses``): a sentence is cut at ";" and at ", and" / ", but" / ", while" / ", whereas" / ", which" /
   ", who" when both sides make a statement (each has a verb, ``has_verb``); a right side with no subject of its own
   ("…, and sold it in 2000") takes the left side's subject, a "which"/"who" clause takes the words it follows
   (its antecedent: the left side's words after its last function word);
4. a sentence of at most ``REFUSAL_WORDS`` words with a refusal phrase (``nonanswer.is_refusal``) and a part that only
   restates the question (no keyword beyond the question's, ``lexicon.stems``) is no claim, unless it picks one of
   the options the question offers (``question_forms.picks_option``: "Arthur's Magazine was started first." to "Which
   magazine was started first, Arthur's Magazine or First for Women?") or, without a yes/no word, states a yes/no
   question's proposition (``question_forms.affirms_polar``: "Paris is the capital of France." to "Is Paris the capital
   of France?": it answers "yes");
5. an answer without a verb ("Rollo", "in 1889") is one ``short`` claim, read together with the question;
6. when nothing else is left, a yes/no answer to a yes/no question ("No", "No, they are not.": ``polar_claim``) is
   one ``short`` claim: its polarity is what it states.

Signals of one claim against passages (each a small function, all in [0, 1] or a count; ``claim_signals``). With
kw(x) the keyword stems of x (``lexicon.stems``), a word present when ``lexicon.similar`` finds it, C the
claim's keywords (for a short claim: the answer's keywords plus the question's, the question being part of what a
short answer claims), and windows the runs of ``WINDOW`` consecutive sentences of a passage:

* ``missing_numbers``: numbers of the claim (digits, number words, years) that no passage and not the question has;
* ``missing_entities``: capitalised names of the claim none of whose words any passage or the question has;
* ``coverage``: max over passages of |C ∩ kw(passage)| / |C|;
* ``window_coverage``: max over windows of |C ∩ kw(window)| / |C ∩ kw(passages)|: how much of what the passages
  have of the claim sits together in one place (a claim stitched from unrelated sentences scores low);
* ``pair_support``: share of pairs of the claim's anchors (names and numbers present in some passage) that occur
  together in one window (1 with fewer than two anchors): "X was the partner of Y" where the passage pairs X with Z;
* ``novel_coverage``: the share of the claim's keywords beyond the question's that the best window has (1 when
  none: the claim adds nothing but what the question says);
* ``bigram_coverage``: the share of the claim's word bigrams (normalised words, function words kept) that some
  passage has: a copied sentence has all, a sentence with one word swapped loses the two around it;
* ``anchor_context``: the share of the claim's anchors that some passage has beside the same neighbouring word as
  the claim (1 without anchors, or for a one-word claim): a name of the passage moved into another slot ("At Action, we" where the
  passage says "At Sterling Horizons, we") keeps neither neighbour;
* ``slot_gaps``: the number of short gaps (at most ``GAP_BIGRAMS`` bigrams no passage has) inside a copied run
  (at least ``FLANK_BIGRAMS`` bigrams some passage has on each side, or twice that on the one side of a gap at
  the claim's start or end): a sentence copied with one word swapped has
  one, a copy none, a paraphrase or an answer of the model's own words hardly any flanked gap.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from evaluations.judging.basics.lexicon import FILLER, POLARITY, VAGUE, similar, stem, stems
from evaluations.judging.basics.question_forms import affirms_polar, is_polar, picks_option
from evaluations.judging.correctness.nonanswer import is_refusal
from evaluations.judging.basics.text import STOPWORDS, normalize

__all__ = [
    "Claim", "ClaimSignals", "SIGNALS", "WINDOW", "FILLER_PREFIX", "split_claims", "polar_claim", "sentences",
    "clauses", "has_verb",
    "numbers", "entities", "name_words", "name_word_list", "DEMONYMS", "held_names", "claim_signals", "passage_windows",
    "bounded",
]

GAP_BIGRAMS = 3  # a slot: at most this many missing bigrams in a row ...
FLANK_BIGRAMS = 2  # ... with at least this many present bigrams on each side
REFUSAL_WORDS = 15  # a sentence this short with a refusal phrase states nothing
WINDOW = 2  # sentences per window of a passage (a claim's support is one or two adjacent sentences)

#: discourse filler in front of a claim: "Based on the context,", "According to the passage," "The text says that"
FILLER_PREFIX = re.compile(
    r"^\s*(?:(?:based on|according to|from|in|per|as (?:stated|mentioned|described) in)\s+(?:the\s+)?(?:given\s+|provided\s+)?"
    r"(?:context|passage|text|document|article|information(?: provided| given)?|source|excerpt)s?\s*(?:provided|given|above)?"
    r"\s*,?\s*|(?:the\s+)?(?:context|passage|text|document|article)\s+(?:states|says|mentions|indicates|notes|explains|"
    r"suggests|shows|reports)\s+(?:that\s+)?|(?:it\s+(?:is|was)\s+(?:stated|mentioned|noted)\s+that)\s+|"
    r"(?:yes|no|well|so|sure|answer)\s*[,:.!]\s*)",
    re.I,
)
_ABBREV = re.compile(r"\b(?:mr|mrs|ms|dr|prof|st|sr|jr|vs|etc|inc|ltd|co|corp|no|vol|fig|approx|est|gen|gov|sen|rep|"
                     r"mt|ft|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec|e\.g|i\.e|u\.s|u\.k|a\.m|p\.m)\.$", re.I)
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])")
_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+")
_CLAUSE = re.compile(r"\s*;\s*|,\s+(?=(?:and|but|while|whereas|which|who)\s)", re.I)
_RELATIVE = ("which", "who")
_LINKERS = ("and", "but", "while", "whereas")
#: finite verbs and auxiliaries a claim-making clause has (besides -ed forms)
_VERBS = frozenset(
    """
    is are was were be been being am has have had do does did will would can could shall should may might must
    became become becomes began begins made makes make took takes gave gives found finds founded led leads won
    wins wrote writes said says went goes came comes built builds held holds brought brings thought knew knows
    saw sees ran runs sold sells told tells left leaves lost loses paid pays sent sends kept keeps met meets stood
    stands grew grows rose fell lies lay lives live lived contains contain include includes including remains
    remain means mean refers refer consists consist occurs occur belongs belong
    """.split()
)
_NUMBER_WORDS = {
    "one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6", "seven": "7", "eight": "8",
    "nine": "9", "ten": "10", "eleven": "11", "twelve": "12", "thirteen": "13", "fourteen": "14", "fifteen": "15",
    "sixteen": "16", "seventeen": "17", "eighteen": "18", "nineteen": "19", "twenty": "20", "thirty": "30",
    "forty": "40", "fifty": "50", "sixty": "60", "seventy": "70", "eighty": "80", "ninety": "90", "hundred": "100",
    "thousand": "1000", "million": "1000000", "billion": "1000000000", "first": "1", "second": "2", "third": "3",
}
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_NAME = re.compile(r"\b[A-Z][\w'’.-]*(?:\s+(?:of|the|de|van|von|da|del|and|&)?\s*[A-Z][\w'’.-]*)*")


@dataclass(frozen=True)
class Claim:
    """One claim: its text, and ``short`` when it is a verbless answer read together with the question."""

    text: str
    short: bool = False


@lru_cache(maxsize=16384)
def sentences(text: str) -> tuple[str, ...]:
    """Sentences of ``text`` (module docstring, step 1)."""
    out: list[str] = []
    for line in text.splitlines():
        line = _BULLET.sub("", line).strip()
        if not line:
            continue
        start = 0
        for match in _SENTENCE_END.finditer(line):
            head = line[start:match.start()].rstrip("\"')] ")
            last = head.split()[-1] if head.split() else ""
            if _ABBREV.search(last) or re.fullmatch(r"(?:[A-Z]\.)+", last):
                continue  # "Dr. Smith", "J. K. Rowling", "U.S. Army"
            out.append(line[start:match.start()].strip())
            start = match.end()
        out.append(line[start:].strip())
    return tuple(s for s in out if re.search(r"\w", s))


def bounded(sents: Sequence[str], budget: int) -> list[str]:
    """``sents`` with every one longer than ``budget`` characters cut into runs of its words, each at most
    ``budget`` long (a single longer word is cut too): a text without sentence ends is read whole, part by part.
    Sentences within the budget are kept as they are."""
    out: list[str] = []
    for sentence in sents:
        if len(sentence) <= budget:
            out.append(sentence)
            continue
        runs: list[str] = []
        for word in sentence.split():
            for part in (word[i:i + budget] for i in range(0, len(word), budget)):
                if runs and len(runs[-1]) + 1 + len(part) <= budget:
                    runs[-1] = f"{runs[-1]} {part}"
                else:
                    runs.append(part)
        out.extend(runs)
    return out


_PRONOUNS = frozenset("i you he she it we they this that there".split())


def has_verb(text: str, *, participles: bool = True) -> bool:
    """The text has a finite verb: an auxiliary or common verb (``_VERBS``), a past form in -ed, or any word after
    a subject pronoun ("he likes"). ``participles`` False: a word in -ed does not count (in a title, "Moon Shapes
    Explained", "Piano-Powered Songs", "Thoroughbred" are no finite verbs)."""
    words = re.findall(r"[a-z]+", text.lower())
    if any(w in _VERBS or (participles and len(w) > 4 and w.endswith("ed")) for w in words):
        return True
    return any(a in _PRONOUNS and b.endswith("s") and b not in STOPWORDS for a, b in zip(words, words[1:]))


def _subject(clause: str) -> str:
    """The words of ``clause`` before its first verb ("Marie Curie" of "Marie Curie discovered radium")."""
    words = clause.split()
    for i, word in enumerate(words):
        if has_verb(word):
            return " ".join(words[:i])
    return ""


def _antecedent(clause: str) -> str:
    """The words a relative clause follows: the clause's words after its last function word or verb."""
    words = clause.rstrip(" ,").split()
    tail: list[str] = []
    for word in reversed(words):
        bare = re.sub(r"\W", "", word.lower())
        if bare in STOPWORDS or has_verb(word):
            break
        tail.insert(0, word)
    return " ".join(tail)


def clauses(sentence: str) -> list[str]:
    """The clauses of one sentence (module docstring, step 3)."""
    parts = _CLAUSE.split(sentence)
    seps = _CLAUSE.findall(sentence)
    out = [parts[0]]
    for sep, part in zip(seps, parts[1:]):
        words = part.split()
        linker = words[0].lower() if words else ""
        if ";" not in sep and linker in _RELATIVE + _LINKERS:
            body = " ".join(words[1:])
            if not (has_verb(body) and has_verb(out[-1])):
                out[-1] = f"{out[-1]}{sep}{part}"  # "apples, pears, and oranges": one statement
                continue
            if linker in _RELATIVE:
                head = _antecedent(out[-1])
                part = f"{head} {body}" if head else part
            elif has_verb(words[1] if len(words) > 1 else "") and _subject(out[-1]):
                part = f"{_subject(out[-1])} {body}"  # "..., and sold it": the left side's subject
            else:
                part = body
        elif ";" in sep and not has_verb(part):
            out[-1] = f"{out[-1]}; {part}"
            continue
        out.append(part)
    return [c.strip(" ,;") for c in out if re.search(r"\w", c)]


def _strip_filler(text: str) -> str:
    previous = None
    while previous != text:
        previous, text = text, FILLER_PREFIX.sub("", text, count=1).strip()
    return text[:1].upper() + text[1:] if text else text


def _restates(question: str, text: str) -> bool:
    """``text`` adds no keyword beyond the question's (and generic filler words, and ``VAGUE`` pronouns standing for
    the asked thing: "Somebody ranked Warsaw 32nd." claims nothing the question does not)."""
    novel = stems(text) - stems(question) - FILLER - VAGUE
    return not novel


def split_claims(question: str, answer: str) -> list[Claim]:
    """The claims of ``answer`` (module docstring): [] when no claim is left."""
    answer = (answer or "").strip()
    if not re.search(r"\w", answer):
        return []
    out: list[Claim] = []
    for sentence in sentences(answer):
        sentence = _strip_filler(sentence)
        if is_refusal(sentence, question) and len(sentence.split()) <= REFUSAL_WORDS:
            continue  # "I don't know.", "The context does not say.": no claim
        for part in clauses(sentence):
            part = _strip_filler(part)
            if part and (not _restates(question, part) or picks_option(question, part)
                         or affirms_polar(question, part) and not POLARITY.search(normalize(part))):
                out.append(Claim(part))
    if out and not any(has_verb(c.text) for c in out):
        return [Claim(_strip_filler(answer).strip(" ."), short=True)]  # "Rollo", "in 1889, in Paris"
    return list(dict.fromkeys(out)) or polar_claim(question, answer)


def polar_claim(question: str, answer: str) -> list[Claim]:
    """A yes/no answer to a yes/no question ("No", "No, they are not.") as one short claim, read with the question;
    [] when the question is not polar or the answer has no yes/no word, or is a refusal."""
    text = answer.strip().rstrip(".!").strip()
    if not is_polar(question) or is_refusal(text, question) or not POLARITY.search(normalize(text)):
        return []
    return [Claim(text, short=True)]


# -- alignment signals ------------------------------------------------------------------------------------
def name_words(text: str) -> list[tuple[str, ...]]:
    """The names of ``text`` as lowercased word tuples without function words, a run joined by "and" split in two
    ("Are Tollan Water and Loch Brae both ..." -> (tollan, water), (loch, brae)), "&" kept inside a name ("Hearth &
    Field" -> (hearth, field)), "for" too ("First for Women" -> (first, women)); each once, in order; names of one
    or two letters (UK: "us" is a word too) and question words ("Whose") left out. A word loses a final s
    (Huguenots / Huguenot)."""
    out = []
    for match in _TITLE.finditer(text):
        for part in re.split(r"\s+and\s+", match.group()):
            words = name_word_list(part)
            if words and sum(map(len, words)) > 2 and not set(words) <= _WH | DEMONYMS:
                out.append(tuple(words))
    return list(dict.fromkeys(out))


_WH = frozenset({"who", "whom", "whose", "which", "what", "where", "when", "why", "how"})  # "Whose ..." is no name
#: nationality, regional and religious adjectives and peoples (final s dropped, as ``name_word_list`` drops it): a
#: name of only these ("French", "the British", "Muslims") qualifies something, it names no entity a passage is
#: about, so ``name_words`` leaves it out ("Which French magazine ..., Arthur's Magazine or First for Women?");
#: inside a name it stays ("French Revolution")
DEMONYMS: frozenset[str] = frozenset("""
    afghan african albanian algerian american anglo arab arabic argentine argentinian armenian asian assyrian
    australian austrian aztec babylonian balkan bangladeshi basque belgian bolivian bosnian brazilian breton
    british briton bulgarian burmese byzantine cambodian canadian caribbean catalan catholic celtic chilean
    chinese christian colombian congolese coptic croatian cuban cypriot czech danish dutch egyptian english
    eritrean estonian ethiopian european filipino finnish flemish french gaelic georgian german germanic greek
    haitian hawaiian hebrew hellenic hindu hispanic hungarian icelandic indian indonesian iranian iraqi irish
    islamic israeli italian jamaican japanese jewish jordanian kenyan korean kurdish latin latino latvian lebanese
    libyan lithuanian macedonian malaysian maltese maori mayan mediterranean mexican mongol mongolian moroccan
    muslim nepalese nordic norman norse norwegian ottoman pakistani palestinian persian peruvian polish
    portuguese protestant prussian roman romanian russian saxon scandinavian scottish serbian sikh slavic
    slovak slovenian somali soviet spanish sudanese swedish swis syrian taiwanese thai tibetan turkish ukrainian
    venezuelan vietnamese viking welsh yemeni zulu
""".split())
#: ``_NAME`` with "for" inside a title too ("First for Women", "Doctors for Peace"): the names ``name_words`` reads
_TITLE = re.compile(r"\b[A-Z][\w'’.-]*(?:\s+(?:of|the|de|van|von|da|del|and|for|&)?\s*[A-Z][\w'’.-]*)*")


def name_word_list(text: str) -> list[str]:
    """The lowercased words of ``text`` without function words, a final s dropped (words of four letters or more)."""
    return [w[:-1] if len(w) > 3 and w.endswith("s") else w
            for w in re.findall(r"\w+", text.lower()) if w not in STOPWORDS]


def held_names(text: str, names: Sequence[tuple[str, ...]]) -> set[tuple[str, ...]]:
    """The ``names`` (``name_words``) whose words ``text`` has in a row, function words and punctuation between
    them skipped."""
    words = name_word_list(text)
    return {name for name in names
            if any(tuple(words[i:i + len(name)]) == name for i in range(len(words) - len(name) + 1))}


@lru_cache(maxsize=16384)
def numbers(text: str) -> frozenset[str]:
    """Numbers of ``text``: digit runs (separators removed) and number words as digits."""
    found = {n.replace(",", "").rstrip(".") for n in _NUMBER.findall(text)}
    found |= {_NUMBER_WORDS[w] for w in re.findall(r"[a-z]+", text.lower()) if w in _NUMBER_WORDS}
    return frozenset(found)


def entities(text: str) -> list[str]:
    """Capitalised names of ``text`` (runs of capitalised words), less a sentence's first word when it is a
    function word ("The", "In") and less names that are only function words."""
    out = []
    for match in _NAME.finditer(text):
        words = [w for w in re.findall(r"[\w'’]+", match.group()) if w.lower() not in STOPWORDS]
        if words and not all(w.lower() in FILLER for w in words):
            out.append(" ".join(words))
    return out


@lru_cache(maxsize=4096)
def passage_windows(text: str, size: int = WINDOW) -> tuple[frozenset[str], ...]:
    """Keyword stems of each run of ``size`` consecutive sentences of a passage (the whole text when shorter)."""
    sents = [stems(s) for s in sentences(text)] or [stems(text)]
    if len(sents) <= size:
        return (frozenset().union(*sents),)
    return tuple(frozenset().union(*sents[i:i + size]) for i in range(len(sents) - size + 1))


@lru_cache(maxsize=4096)
def _passage_numbers(text: str) -> frozenset[str]:
    return numbers(text)


@dataclass(frozen=True)
class ClaimSignals:
    """The alignment signals of one claim (module docstring); ``SIGNALS`` names them in order."""

    missing_numbers: float
    missing_entities: float
    coverage: float
    window_coverage: float
    pair_support: float
    novel_coverage: float
    bigram_coverage: float
    anchor_context: float
    slot_gaps: float

    def values(self) -> list[float]:
        return [float(getattr(self, name)) for name in SIGNALS]


SIGNALS: tuple[str, ...] = tuple(ClaimSignals.__dataclass_fields__)


def _share(words: frozenset[str], have: frozenset[str]) -> float:
    return sum(similar(w, have) for w in words) / len(words) if words else 1.0


def _missing_numbers(claim: str, context: str, question: str) -> int:
    have = _passage_numbers(context) | numbers(question)
    return len(numbers(claim) - have)


def _missing_entities(claim: str, context_stems: frozenset[str]) -> int:
    return sum(1 for name in entities(claim) if not any(similar(w, context_stems) for w in stems(name)))


def _anchors(claim: str, context_stems: frozenset[str]) -> list[frozenset[str]]:
    """Names and numbers of the claim that some passage has, each as its stems."""
    out = []
    for name in entities(claim):
        present = frozenset(w for w in stems(name) if similar(w, context_stems))
        if present:
            out.append(present)
    out += [frozenset({n}) for n in numbers(claim) if n in context_stems]
    return list(dict.fromkeys(out))


def _pair_support(anchors: list[frozenset[str]], windows: Sequence[frozenset[str]]) -> float:
    pairs = list(itertools.combinations(anchors, 2))
    if not pairs:
        return 1.0

    def together(a: frozenset[str], b: frozenset[str]) -> bool:
        return any(any(similar(w, win) for w in a) and any(similar(w, win) for w in b) for win in windows)

    return sum(together(a, b) for a, b in pairs) / len(pairs)


def _bigrams(words: Sequence[str]) -> set[tuple[str, str]]:
    return set(zip(words, words[1:]))


@lru_cache(maxsize=4096)
def _context_bigrams(context: str) -> frozenset[tuple[str, str]]:
    return frozenset(_bigrams([stem(w) for w in normalize(context).split()]))


def _bigram_coverage(claim: str, context: str) -> float:
    grams = _bigrams([stem(w) for w in normalize(claim).split()])
    have = _context_bigrams(context)
    return sum(g in have for g in grams) / len(grams) if grams else 1.0


def _slot_gaps(claim: str, context: str) -> int:
    words = [stem(w) for w in normalize(claim).split()]
    have = _context_bigrams(context)
    present = [g in have for g in zip(words, words[1:])]
    runs: list[tuple[bool, int]] = []  # (present, length) of consecutive bigrams
    for flag in present:
        if runs and runs[-1][0] == flag:
            runs[-1] = (flag, runs[-1][1] + 1)
        else:
            runs.append((flag, 1))
    gaps = 0
    for i, (present_run, length) in enumerate(runs):
        if present_run or length > GAP_BIGRAMS:
            continue
        left = runs[i - 1][1] if i > 0 else 0
        right = runs[i + 1][1] if i + 1 < len(runs) else 0
        inner = left >= FLANK_BIGRAMS and right >= FLANK_BIGRAMS
        edge = (left == 0 and right >= 2 * FLANK_BIGRAMS) or (right == 0 and left >= 2 * FLANK_BIGRAMS)
        gaps += inner or edge
    return gaps


def _anchor_context(claim: str, context: str, context_stems: frozenset[str]) -> float:
    """Share of the claim's anchor words (a word of a present name, or a present number) whose left or right
    neighbour in the claim is its neighbour in some passage too."""
    words = [stem(w) for w in normalize(claim).split()]
    anchor_words = {w for a in _anchors(claim, context_stems) for w in a}
    have = _context_bigrams(context)
    checked = [i for i, w in enumerate(words) if w in anchor_words] if len(words) > 1 else []
    if not checked:
        return 1.0
    kept = sum(1 for i in checked if (i > 0 and (words[i - 1], words[i]) in have)
               or (i + 1 < len(words) and (words[i], words[i + 1]) in have))
    return kept / len(checked)


def claim_signals(question: str, claim: Claim, passages: Sequence[str]) -> ClaimSignals:
    """The alignment signals of ``claim`` against ``passages`` (module docstring)."""
    text = f"{question} {claim.text}" if claim.short else claim.text
    words = stems(text) - FILLER
    novel = stems(claim.text) - stems(question) - FILLER
    context = " ".join(passages)
    context_stems = frozenset().union(*(stems(p) for p in passages)) if passages else frozenset()
    windows = [w for p in passages for w in passage_windows(p)]
    present = frozenset(w for w in words if similar(w, context_stems))
    best_window = max((_share(present, win) for win in windows), default=0.0) if present else 0.0
    return ClaimSignals(
        missing_numbers=float(_missing_numbers(claim.text, context, question)),
        missing_entities=float(_missing_entities(claim.text, context_stems | stems(question))),
        coverage=max((_share(words, stems(p)) for p in passages), default=0.0),
        window_coverage=best_window,
        pair_support=_pair_support(_anchors(text, context_stems), windows),
        novel_coverage=max((_share(novel, win) for win in windows), default=0.0) if novel else 1.0,
        bigram_coverage=_bigram_coverage(claim.text, context),
        anchor_context=_anchor_context(claim.text, context, context_stems),
        slot_gaps=float(_slot_gaps(claim.text, context)),
    )
