"""``answer_relevance``: does the answer address the question, whether or not it is right? No gold answer needed.

Reference-free: it reads the question, the answer and (when there is one) the context the system was given. Its
rules 1-2 are lexical; rule 3 adds a small sentence-embedding model (all-MiniLM-L6-v2, in process) when there is a
context. It is deliberately *not* RAGAS's "questions generated back from the answer" similarity, which an echo of
the question passes.

The rules, checked in this order (the first that applies rejects the answer; ``KINDS`` is the registry):

0. the question given back beside other words (``_beside_echo``): an answer holding ≥ ``EMBED_COVER`` of the
   question's words in a row that still ask (a "?" ends them, or they are all of a question without one, standing
   as a sentence) is judged by what it says beside them, asides dropped (``_aside``: a lead-in before a colon or a
   comma, a part with no keyword, a short part none of whose words the context or the question has, or without a
   context one that speaks of the asking, "I will need to check."). Nothing left, or a non-answer left, is an
   ``echo`` ("Good question! When was Montreal captured?"); "When was Montreal captured? In 1760." is "In 1760.".

1. non-answers. From the screen without gold (``nonanswer.screen(question, (), answer)``, ``SCREEN_KINDS``):
   ``empty``, ``refusal``, ``echo``, ``options`` (a hedge "A or B", unless the question asks for several things:
   "two", "three", "both", "list"), and the screen's gold-free ``heading`` (4-10 words shaped like a title) that
   shares a word with the question, unless the question asks for a title, a name (``_TITLE_ASKED``: "called",
   "more commonly known", a work in its asking phrase, "which 2004 novel", not one it only mentions, "who sings the
   song ...") or an entity ("which X" / "what X", ``_ENTITY_ASKED``), whose name may look like a title, or the
   heading names something of its own (two capitalised words of its own that the context does not write in lower
   case, ``_own_name``: "Bedhead and Hinder: Rock Bands in the United States").
   On a question marked unanswerable a refusal is accepted (it is the answer).
   Then the question's own words given back (``_restates``; the screen's restatement and heading rules read the
   gold, so they are replaced here): with kw = ``lexicon.stems`` and novel = kw(A) − ``GENERIC`` −
   ``PLACEHOLDERS`` (words standing for the asked thing without naming it: "somebody", "an organisation", the
   attribute nouns ``ATTRIBUTE_NOUNS`` "type", "occupation", "nationality" and the fact nouns ``FACT_NOUNS``
   "birthplace", "location", "tenure") less the stems similar to one of kw(Q) (Q also split at punctuation and
   without possessives), the answer restates the question when novel = ∅ and it reuses ≥ min(``RESTATE_WORDS``,
   ``RESTATE_COVER``·|kw(Q)|) of the question's keywords (≥ 1; one is enough for a title, and for a phrase with no
   verb holding a placeholder and one of the question's names: "Marshall Neilan's nationality"), or when its only
   keywords are ``lexicon.VAGUE`` pronouns ("Somebody.", "Someone did."): ``heading`` when it is shaped like a
   title (no final period, every word of more than 3 letters capitalised), else ``restatement``. An answer that is
   one question adding no value is a restatement too (``_asks_back``: "What genre of music do Catherine and X have
   in common?"), and so is one wh-question, alone or after a title's colon, whatever it names ("Who took New York
   from the Dutch?": it asks instead of answering). An answer that picks one of the options the question offers
   (``question_forms.picks_option``: "concrete" to "abstract or concrete?", "Arthur's Magazine was started first." to
   "Which magazine was started first, Arthur's Magazine or First for Women?") is neither, and nor is the question
   given back with its asked part filled by a name or a number (``_fills_slot``: "... a personal favorite of Robert
   Smigel." to "... a personal favorite of what American television executive ...?", even with a name the question
   has: a wrong answer of the asked kind is still an answer; the question's own words re-inflected, "Neilan's" for
   "Neilan", fill nothing). Where the asked part comes last (a final "... regarding what?", or a question ending in a
   preposition, "... published for?", "... such as?") a common noun of the answer's own fills it too ("... for
   adults."), but not some one of a kind or a possessive ("... with another presenter.", "... for his work."), nor,
   after a final preposition, the question's own name. A statement of a yes/no question's proposition, with or
   without its final period, answers it (``_affirms``; "X and Y belong to one family." to "Do X and Y belong to one
   family?"). Nor is a title in quotation marks that the question does not hold, to a question asking for a title,
   a name or an entity (``_quotes_a_name``). A hyphenated compound of the question's words is those words
   ("team-based" of "team based"), a word one letter from a question's word of six or more is that word misspelt
   (``lexicon.alike``: "immigrant" of "immagrant"), a long reply cut off in the middle of a question's word is that
   word (``_uncut``: "... Prince Rain" of "Rainier"), a run of capitalised words whose initials spell a word of the
   question is that word (``_as_asked``: "United States" of "us"), and a word that only describes the asked
   phrase's noun after an indefinite article names nothing ("a French aviator" to "... starred which English
   aviator?", ``_only_a_kind``). The question given back and then declined ("... is not known to me.") is a ``refusal``
   (``_declines_after_restating``), and an answer that keeps the question's asking phrase ("... during which late
   period.", ``_keeps_asking``) or is one wh-question (``_one_wh_question``) answers nothing, whatever option it
   names or part it fills. A word of the answer's own after a
   naming verb is a value, a common noun too ("... is called melanin.", ``_calls_it``). Nor,
   with a context, an answer holding a name made of
   the question's words that the context writes and the question does not (``_context_name``: "Windsor Airport" to
   "... serves Windsor, Ontario and which airport?"). A "which" question for an attribute asks for a common noun,
   not a name ("actors" to "have which occupation in common?"), so ``_gives_back`` leaves it.
2. ``wrong_type``: a bare yes or no ("No.", "Yes, it is.") to a question that asks with a wh-word and not for an
   answer, an output or a word (``_bare_polar``: "no" to "... written by which American writer?"); or the question
   asks for a type the answer's form cannot be (``ASKED``, first match wins; no word of the question but its
   wh-words is the answer's number or time: "twelve" of "... who adopted twelve orphans" is no birth date, "after"
   of "... who died after ..." no time):
   * number ("how many", "how much", "how old", "how long", "how far", "how tall" (unless another question
     follows it: "How long is it and what is it called?"), "what percentage / number / proportion", a keyword query
     opening with "percentage / number / proportion / population of"): the answer has no number (a digit, a
     number word, a quantity word such as "several", or an ordinal: "twenty-first");
   * time ("when …" at the start, unless another question follows it: "When and where …", "…, who …"; a relative
     "who" after a noun does not; "what/which year / date / month / day / century / decade / time"): the answer has
     no time marker (a digit, a number word, a month, a weekday, a time word such as "century", "during", or a
     condition: "when", "if", "while");
   * person or place ("who", "whom", "whose", "where" at the start; "what/which [adjective] country / city /
     person / name / language / religion / team …"): the answer is only numbers and time words ("1995" to "who
     wrote …", "10th century" to "from which countries …");
   * polar (the question starts with an auxiliary such as "is", "did", "can", and offers no "or"): the answer has
     no polarity word (yes, no, not, true, false …) and is not a statement of at least ``POLAR_MIN_WORDS`` words
     ("1995" to "Is Paris the capital of France?").
3. ``off_topic`` (an answer about something else), only when the context is known and about the question. With
   e(x) the L2-normalised all-MiniLM-L6-v2 embedding (``semantic.embed_texts``, cached), the context split into
   sentences s_i (``sentences``), and the sentences *near the question* = the ``NEAR_TOP`` s_i of highest
   cos(e(Q), e(s_i)) with their neighbours, the signals (``Topic``, ``topic``) are:
   * grounding = share of kw(A) − ``GENERIC`` that occur in the context or the question (``lexicon.similar``;
     a keyword with a digit must occur as that number: "$1,000,000" matches "US$1,000,000");
   * close = max over the near sentences of cos(e(A), e(s_i)): the answer's meaning against the passage that
     answers the question;
   * asked = cos(e(Q), e(A)); about = max_i cos(e(Q), e(s_i)); length = min(1, words(A) / ``LONG_WORDS``);
   and, with each signal split into a short part ((1 − length)·x) and a long part (length·x) (a bare value is
   judged by its grounding, a long answer also by its meaning),
       score = ``TOPIC_BIAS`` + Σ ``TOPIC_WEIGHTS``[f]·f,   off_topic  iff  about ≥ ``MIN_ABOUT`` and
       score < ``TOPIC_THRESHOLD``.
   The weights are a logistic regression fitted on the controls of SQuAD 2.0 and TechQA only
   (``scripts/fit_answer_relevance.py``); CLAPNQ, WixQA and RepliQA are held out (``docs/answers-and-judges.md``).
   Grounding is over the whole context (grounding near the question only measured worse: SQuAD's other golds come
   from the same article). A context with no sentence about the question (about < ``MIN_ABOUT``: retrieval
   failed) cannot say what is on topic, so an answer from the model's own knowledge is not rejected then; but a
   sentence (``claims.has_verb``) made only of that context's and the question's words, whose meaning is far from
   the question's (asked < ``FAR_COS``), is about what the context is about: ``off_topic`` ("The Sabres lost the
   series in six games." to "Who designed the Sydney Opera House?" over a context about hockey).
   With a context about the question, a title-shaped answer (``_titled``, no verb) whose keywords beyond the
   question's occur nowhere in the context is a ``heading`` (``_ungrounded_title``: "Charles Runnington's
   Birthplace", "Allkpop's Bergen County Location": it names the fact asked for, not a value). A wrong name of the
   asked kind that the context lacks goes the same way (3 of the 18 headings labelled relevant on the design split:
   "... in NASCAR"). A word in -ed is no verb in a title ("Moon Shapes Explained", "Thoroughbred"), unless the
   title also names something of its own (two capitalised words or more, or a quoted title: "... Drafted by Detroit
   Red Wings"); a number the title adds is a value; a British spelling is the American one ("colour", "color":
   ``lexicon.american``).
   Without a context a bare value of the asked type cannot be told from an answer about something else ("Paris"
   to "what is the capital of France" shares no word with the question), so the rule does not apply, and the
   reason says so. The question echoed back is not rewarded: rules 1-2 run first, and this rule measures the
   answer against the context, not questions generated back from the answer (RAGAS's answer relevancy).

4. ``off_topic`` by meaning: a sentence (``claims.has_verb``) of at least ``FAR_MIN_WORDS`` keywords whose meaning
   is far from the question's, cos(e(Q), e(A)) < ``FAR_COS``, and that takes less than ``FAR_SHARE`` of its
   keywords (kw(A) − ``GENERIC``) from the question, unless the context vouches for it (a sentence of the context
   clearly about the question, ``about`` ≥ ``VOUCH_ABOUT``, and the answer close to the sentences near the
   question, ``close`` ≥ ``VOUCH_CLOSE``: a technical answer and its question can be far apart in meaning). A
   fluent sentence about something else (the first sentence of a random document, an answer to another question)
   fails here however well it fits the context it came from. A bare value or a list of names ("The answer is
   Rollo.", "Raymond Unwin (Barry Parker)") is judged by its form (rules 1-2) and, with a context, by rule 3.
   The thresholds were set on the design splits of ``datasets/relevance`` and ``datasets/multihop`` (first
   sentences of random and of needed passages: ``benchmarks/relevance_outside.py``) and on the gold controls of
   TechQA, CLAPNQ and SQuAD 2.0; the held-out splits only report.

   A yes/no question about named things is not answered by a sentence that opens with a name of its own, names
   none of the question's and says no yes or no (``_another_subject``: "Nicholls is a suburb of Canberra." to "Are
   Sherwood Stewart and Ekaterina Makarova from the same country?"), with or without a context: ``off_topic``.

Anything else the rules accept. ``answer_relevance`` and ``answer_relevance_batch`` are these rules alone. The shipped
judge (``judge_answer_relevance``: runs, ``score --format log``, ``judge-check`` and ``judge-agreement``'s
``answer_relevance``) then asks the naming screen (``judging.grounded.naming``) about every answer the rules accept, or
reject as ``off_topic``, to an answerable question, read as the rules read it (beside the question it gives back):
the embedded judge model is asked whether the reply gives what the question asks for, and a logistic probe on its
reading (its hidden state where it would say yes or no, and P(yes)) rejects an accepted answer whose reading holds
none as ``no_answer`` (refusals, most restatements, questions given back and headings in wordings the rules were not
written from; about half of vague sentences), and accepts an off-topic one of few keywords whose reading holds one
(a casual answer: "That'd be 1946."). Anything else keeps the rules' verdict. Validated without
labels by ``evaluations judge-check --judges answer_relevance`` (``judging.validation.controls``: non-answer controls
must be rejected, gold answers in every form accepted; ``answer_relevance_rules`` the rules alone); the measured rates
are in ``docs/answers-and-judges.md``.
"""

from __future__ import annotations

import functools
import itertools
import re
from difflib import SequenceMatcher
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from evaluations.judging.correctness.nonanswer import KINDS as NONANSWER_KINDS
from evaluations.judging.basics.lexicon import (AUX_START, FILLER, MONTH, NUMBER_WORDS, POLAR_WORDS, POLARITY, VAGUE,
                                                VERBS, alike, has_number, numbers_as_digits, similar, stem, stems)
from evaluations.judging.basics.question_forms import affirms_polar, is_polar, picks_option
from evaluations.judging.correctness.nonanswer import answers_polar, is_refusal, refusal_start, screen
from evaluations.judging.grounded.naming import OVERRULE_KEYWORDS, OVERRULES, Naming
from evaluations.judging.correctness.semantic import embed_texts
from evaluations.judging.grounded.claims import has_verb
from evaluations.judging.basics.text import STOPWORDS, normalize, unhyphened

__all__ = ["KINDS", "ASKED", "GENERIC", "FAR_MIN_WORDS", "FAR_COS", "FAR_SHARE", "NEAR_TOP", "MIN_ABOUT",
           "TOPIC_WEIGHTS", "TOPIC_BIAS", "TOPIC_THRESHOLD",
           "POLAR_MIN_WORDS", "Relevance", "Topic", "topic", "sentences", "answer_relevance_batch",
           "judge_answer_relevance",
           "answer_relevance", "answer_form", "asked_type"]

#: rejection kind -> what it means: the screen's non-answer kinds, then this judge's own ("relevant" is the pass)
KINDS: dict[str, str] = {
    **{kind: NONANSWER_KINDS[kind] for kind in ("empty", "refusal", "echo", "options", "restatement", "heading")},
    "wrong_type": "the answer's form cannot be the asked type",
    "off_topic": "an answer about something else: neither its words nor its meaning are those of the context "
                 "near the question",
    "no_answer": "the judge model's reading of it holds no answer to the question (the naming screen)",
}
POLAR_MIN_WORDS = 4
#: words that say nothing about the topic: the screen's filler, and generic nouns a sentence wraps a value in
GENERIC = FILLER | frozenset("person people name place thing answer overview introduction summary".split())
#: nouns of an attribute whose values are common nouns ("which occupation": "actors"; "which type of drinks":
#: "cocktails"): a "which" question asking for one is not asking for a name
ATTRIBUTE_NOUNS = frozenset("""
    type types kind kinds sort sorts form genre genres style category occupation occupations profession
    professions job jobs career trade nationality nationalities ethnicity sport sports discipline field instrument
    instruments
""".split())
#: nouns that name the fact a question asks for, not a value of it ("Allkpop's Bergen County Location", "Edwin
#: Meese's tenure", "Canadian Left Winger Birthdate")
FACT_NOUNS = frozenset("""
    location locations whereabouts birthplace birthdate birthday birth tenure origin origins identity residence
    hometown
""".split())
#: stems of words that stand for the asked thing without naming it ("Somebody ranked Warsaw 32nd.", "An
#: organisation ranked ...", "... something happens."; the attribute nouns: "They share a profession."), and
#: prepositions the stopword list lacks ("among"): an answer adding only these restates the question
PLACEHOLDERS = frozenset(stem(w) for w in """
    somebody someone something somewhere sometime somehow anybody anyone anything whoever whatever organisation
    organization body group entity individual party agency institution
    feature aspect characteristic trait quality similarity
    among amongst within across along around behind beyond toward towards upon via per onto throughout
""".split()) | frozenset(stem(w) for w in ATTRIBUTE_NOUNS | FACT_NOUNS)

#: stems of nouns that name a kind of thing: introduced by an indefinite article they tell what sort the asked thing
#: is without naming it ("The capital of Australia is a city.", "He was born in a country.", "In a year.")
KINDS_OF_THING = frozenset(stem(w) for w in """
    city town village capital country nation state province region area location continent island river lake sea
    ocean mountain building place site man woman boy girl child person people individual character family
    company firm business organisation organization institution university school team club band group party
    number amount quantity figure value total year date time day month century decade period era event season
    book novel film movie song album show series play work game word term language thing object item kind type
    animal species plant disease substance material element product device vehicle ship machine
""".split())
#: words that introduce a kind rather than a particular one
_INDEFINITE = r"(?:a|an|some|another|one|certain|a certain|a specific|a particular|some kind of|a kind of|a type of)"
#: questions that ask what sort of thing something is, where a kind is the answer ("What is a koala?", "What kind
#: of ...", "What is Canberra?"): only questions asking for a particular thing (who, which, where, when, how many,
#: "what is the ...") have a kind as a non-answer
_ASKS_PARTICULAR = re.compile(
    r"^\s*(?:who|whom|whose|which|where|when|how (?:many|much|old|long|far)|in (?:what|which) (?:year|city|country)"
    r"|(?:what|which) (?:year|city|town|country|state|date|person|company|team|language|number|river)"
    r"|what (?:is|was|are|were) the|name the)\b", re.IGNORECASE)


ASKED_PHRASE = 3  # the words after the asking word that name what it asks for ("which English aviator and")


def _only_a_kind(question: str, answer: str, novel: set[str]) -> str | None:
    """The words the answer adds only introduce some one of a kind, each after an indefinite article: a kind of
    thing ("a city"), or a word describing the question's own noun ("a French aviator" to "... starred which English
    aviator ...?", "a famous American actress"), to a question asking for a particular thing (its asking part,
    ``_ASKS_PARTICULAR``): those words, else None."""
    asking = _FIRST_WH.search(question)
    opens = _ASKS_PARTICULAR.search(question) is not None  # a kind of thing to a question opening so: "a city"
    if not novel or not asking or not (opens or _ASKS_PARTICULAR.search(asking.group())):
        return None
    words = re.findall(r"[\w'’-]+", answer.lower())  # articles kept (``normalize`` drops them)
    introduced: dict[str, str] = {}  # stem -> the answer's word

    # the noun phrase the question asks with ("which English aviator and ..."): a word the answer puts before one of
    # its nouns describes the asked thing without naming it; not a number ("a single output") or a name's word
    # ("A Turing machine" to "What is the term for a ... computing machine?": "machine" is not in the asked phrase)
    phrase = stems(" ".join(normalize(asking.group()).split()[1:1 + ASKED_PHRASE]))

    def describes(i: int, word: str) -> bool:
        head = words[i + 1] if i + 1 < len(words) else ""
        return (not has_number(word) and bool(stems(head)) and all(similar(w, phrase) for w in stems(head)))

    for i, word in enumerate(words):
        if (stem(word) in novel and re.search(rf"(?:^|\s){_INDEFINITE}(?:\s\w+)?$", " ".join(words[max(0, i - 3):i]))
                and (opens and stem(word) in KINDS_OF_THING or describes(i, word))):
            introduced.setdefault(stem(word), word)
    return ", ".join(sorted(introduced.values())) if set(introduced) == novel else None


_QUANTITY = frozenset("few several many numerous multiple both dozen hundred thousand million billion".split())
_WEEKDAYS = frozenset("monday tuesday wednesday thursday friday saturday sunday".split())
_TIME_WORDS = frozenset(
    """century centuries decade decades year years era age period during after before since until ago today
    yesterday tomorrow morning afternoon evening night noon midnight spring summer autumn fall winter season
    week weeks month months day days hour hours minute minutes early late mid later earlier recently currently
    now then once daily weekly monthly annually bc ad bce ce when whenever while if""".split())
_TIME_STEMS = frozenset(s for w in _TIME_WORDS for s in stems(w)) | _TIME_WORDS
_POLAR_STEMS = stems(" ".join(POLAR_WORDS))


#: the screen's kinds taken as they are (its restatement and heading rules read gold answers: ``_restates``)
SCREEN_KINDS = ("empty", "refusal", "echo", "options")
#: a restatement reuses at least this many of the question's keywords, or at least RESTATE_COVER of them
RESTATE_WORDS = 4
RESTATE_COVER = 0.5
_DIGIT = re.compile(r"\d")
_SEVERAL = re.compile(r"\b(two|three|both|list)\b", re.I)
#: a question that asks for a title (its answer may be shaped like a heading: the screen's heading rule then waits)
_TITLE_WORDS = (r"(book|novel|film|movie|song|album|poem|play|show|series|episode|painting|work|article|chapter|"
                r"section|heading|slogan|motto|theme|program|programme|initiative|project|campaign|event|festival|"
                r"report|study|law|act)s?")
#: the question asks for a title or a name: "what is it called", "named", "more commonly known", or a work in its
#: asking phrase ("which 2004 novel", "what song"), or in a keyword query with no wh-word ("kanye west song that
#: starts with a piano"); a work the question only mentions ("who sings the song ...") is not asked for
_TITLE_ASKED = re.compile(r"\b(title|titled|called|named|name|known(?!\s+(?:for|to|about|in|by)\b))\b"
                          rf"|\b(what|which)\s+(?:[\w'’-]+\s+){{0,3}}?{_TITLE_WORDS}\b"
                          rf"|^(?!.*\b(?:what|which|who|whom|whose|where|when|why|how)\b).*\b{_TITLE_WORDS}\b", re.I)
#: "which X" / "what X" with X not an auxiliary: the question asks for an entity, whose name may look like a title
_ENTITY_ASKED = re.compile(r"\b(which|what)\s+(?!(is|was|are|were|did|does|do|has|have|had|can|could|would|should|"
                           r"will|might|may|happened|happens)\b)[a-z]+", re.I)


def _asks_several(question: str) -> bool:
    """The question asks for several things ("two", "three", "both", "list"): "A or B" may answer it."""
    return bool(_SEVERAL.search(question))


def _restates(question: str, answer: str) -> str | None:
    """Why the answer restates the question, or None: it adds no keyword beyond the question's words and
    ``GENERIC`` and ``PLACEHOLDERS`` ones (novel = kw(A) − GENERIC − PLACEHOLDERS, less the stems similar to one
    of kw(Q), is ∅: "Somebody ranked Warsaw 32nd."), and it reuses at
    least min(``RESTATE_WORDS``, ``RESTATE_COVER``·|kw(Q)|) of the question's keywords (at least one): a short
    answer that picks one word of the question ("concrete" to "abstract or concrete?") is not a restatement. An
    answer whose only keywords are ``lexicon.VAGUE`` pronouns ("Somebody.", "Someone did.") restates it too."""
    # a compound of the question's words restates them ("team-based" of "team based"); a compound said alone
    # ("NP-hard" to "... hard for the expression NP can also be stated how?") may be the asked name
    text = _unpossessed(answer)
    forms, said = _question_stems(question), stems(text if len(answer.split()) < 2 else unhyphened(text)) - GENERIC
    a = said - PLACEHOLDERS
    if not a and said & VAGUE:  # "Somebody.", "Someone did.": the asked thing stood for, never named
        return f"names the asked thing only as {', '.join(sorted(said & VAGUE))}"
    novel = {w for w in a if not alike(w, forms)}
    q = _question_stems(question, forms=False)  # the question's keywords, counted below
    if (kinds := _only_a_kind(question, answer, novel)) is not None:  # "The capital of Australia is a city."
        return f"names the asked thing only by its kind ({kinds})"
    if not a or novel:
        return None
    shared = len({w for w in q if similar(w, a)})
    # a title, or a phrase with no verb that names one of the question's names and the asked thing by a
    # placeholder ("Marshall Neilan's nationality", "Arnold Burns' tenure in office"), restates with one of the
    # question's words; a phrase naming none of them ("types of reductions") needs the share a sentence does
    names = {w.lower() for w in _TOKEN.findall(question)[1:] if w[:1].isupper()}
    placeholder_phrase = (not has_verb(answer) and bool(said & PLACEHOLDERS)
                          and any(w[:1].isupper() and _unpossessed(w.lower()) in names for w in _TOKEN.findall(answer)))
    need = 1.0 if _titled(answer) or placeholder_phrase else max(1.0, min(RESTATE_WORDS, RESTATE_COVER * len(q)))
    if shared < need:
        return None
    return f"reuses {shared} of the question's {len(q)} keywords and adds none"


#: an answer whose keywords come at least this much from the question, adding at most VALUE_MAX_ADDED keywords of
#: its own and no name or number, is the question given back in other words (``_gives_back``)
GIVEN_BACK_SHARE = 0.6
VALUE_MAX_ADDED = 3
_TOKEN = re.compile(r"[\w'’.&-]+")
#: questions whose asking word asks for a particular named thing (a person, a place, one of a kind): "what
#: purpose", "what type", "which occupation" and other questions for an attribute may take a common noun ("hunting",
#: "actors") and are not read by ``_gives_back``
_ASKS_NAMED = re.compile(r"^(?:(who|whom|whose|where)\b|which\b(?!\s+(?:[\w-]+\s+){0,2}?(?:"
                         + "|".join(sorted(ATTRIBUTE_NOUNS)) + r")\b)"
                         r"|what (is|was|are|were) (the|its|his|her|their) names?\b"
                         r"|what (\w+ )?(city|country|state|town|company|team|person|band|film|book)\b)", re.I)
_FIRST_WH = re.compile(r"\b(?:what|which|who|whom|whose|where|when|why|how)\b.*", re.I | re.S)


def _asks_named(question: str) -> bool:
    """The question's asking word (its first wh-word) asks for a named thing (``_ASKS_NAMED``)."""
    asking = _FIRST_WH.search(question)
    return bool(asking and _ASKS_NAMED.match(asking.group()))


def _gives_back(question: str, answer: str) -> str | None:
    """Why the answer is the question given back in other words, or None: most of its keywords (≥
    ``GIVEN_BACK_SHARE``) are the question's, and the few it adds (≤ ``VALUE_MAX_ADDED``, ``GENERIC`` and
    ``PLACEHOLDERS`` aside) hold no name (a capitalised word; an answer's first word only when it is not a verb
    form in -ing or -ed), no number and no yes/no word: "Regarding where the base is, the document has the details.",
    "This question is about who wrote it.", "The passage does not say who wrote it." Whatever words
    wrap it, such an answer names nothing the question did not. Number, time and yes/no questions are left to the
    asked-type rule; a question offering options ("A or B") is answered in its own words; a title-shaped answer
    is the heading rule's; only questions whose first wh-word asks for a named thing are read (``_asks_named``)."""
    if (asked_type(question) in ("number", "time", "polar") or not _asks_named(question)
            or re.search(r"\bor\b", question, re.I) or _titled(answer) or picks_option(question, answer)
            or _another_sentence_answers(question, answer)):
        return None
    kw = stems(_digits(answer)) - GENERIC
    if not kw or _share_from(kw, _question_stems(question)) < GIVEN_BACK_SHARE:
        return None
    added = _added(question, answer)
    if not added or _adds_a_value(added) or _calls_it(question, answer):
        return None
    words = ", ".join(dict.fromkeys(t.lower().strip(".,") for _, t in added))
    return f"its words are the question's but for {words}: no name or number"


def _one_wh_question(answer: str) -> bool:
    """The answer is one wh-question ("Who sings at the beginning of Nice for the first time?"): it asks, whatever
    part of the question its words fill or option they pick."""
    return answer.rstrip().endswith("?") and len(sentences(answer)) == 1 and bool(_ASKING.match(answer))


def _asks_back(question: str, answer: str) -> str | None:
    """Why an answer that is itself a question ("What genre of music do Catherine and X have in common?") gives
    the question back, or None: one sentence, opening with a wh-word or an auxiliary and ending in "?", whose words
    added to the question's hold no value (``_value_in``: no name, number or yes/no word). "Do you mean the 1998
    film?" names one; "Paris. That is the answer to: what is ...?" is no question."""
    title = answer.split(":", 1)[0]  # a title, then the question: "X vs. Y: Are They in the Same Country?"
    asking = answer.rsplit(":", 1)[-1] if _titled(title) and not has_verb(title, participles=False) else answer
    if _one_wh_question(asking):  # a wh-question asks, whatever it names ("Who took New York from the Dutch?")
        return "a question itself: it asks instead of answering"
    if not asking.rstrip().endswith("?") or len(sentences(asking)) != 1:
        return None
    if not AUX_START.search(asking) or _value_in(added := _added(question, answer)):
        return None
    return f"a question itself, adding {', '.join(t for _, t in added) or 'nothing'}: no name or number"


_WH_WORDS = frozenset("what which who whom whose where when why how".split())
_ASKING = re.compile(r"^\W*(?:what|which|who|whom|whose|where|when|why|how)\b", re.I)
#: an answer that covers at least this share of the question's keywords can embed the question (``_embeds``)
EMBED_COVER = 0.8


def _embeds(question: str, answer: str) -> str | None:
    """Why the answer embeds the question instead of answering it, or None: the answer has the question's wh-word
    (what, which, who, where, when, why, how) other than as its first word, with one of the question's keywords
    within the next three words (an indirect question), or has at least ``EMBED_COVER`` of the question's words in a
    row inside more words (a question without a wh-word wrapped: "That depends on I want to change my domain."); it
    covers at least ``EMBED_COVER`` of the question's
    keywords; and the words it adds, at most ``VALUE_MAX_ADDED`` keywords, hold no name, number or yes/no word
    (``_value_in``). "The answer relates to
    where the base of the agency is.", "That depends on how many people live there." talk about the question;
    "Cheltenham is where the base of the agency is." names a place."""
    if not _keeps_asking(question, answer) and (
            picks_option(question, answer) or answers_polar(question, answer) or _quotes_a_name(question, answer)):
        return None
    q_words = normalize(question).split()
    # the asked part filled ("... regarded as one of four directors." to "... regarded as one of four what?"): the
    # answer keeps fewer wh-words than the question (or the question, not opening with a wh-word, leaves the asked
    # part after a final preposition)
    if _fills_slot(question, answer) is not None and (
            q_words[-1:] and q_words[-1] in _DANGLING and not _ASKING.match(question)
            or sum(w in _WH_WORDS for w in normalize(answer).split()) < sum(w in _WH_WORDS for w in q_words)):
        return None
    wh = next((w for w in q_words if w in _WH_WORDS), None)
    asked = _question_stems(question)
    words = normalize(answer).split()
    embedded = wh is not None and any(w == wh and any(similar(x, asked) for x in stems(" ".join(words[i + 1:i + 4])))
                                      for i, w in enumerate(words) if i > 0)
    held = _question_run(question, answer)  # the question's words in a row, wrapped ("That depends on I want ...")
    if not (embedded or held) or not asked:
        return None
    # the words around a whole question given back are what the answer adds (a long post's own "ibm.box.com" or
    # "7.7" inside the run is no value of the answer's)
    outside = answer if held is None or held[0] < len(q_words) else answer[:held[1]] + " " + answer[held[3]:]
    if _another_sentence_answers(question, outside):
        return None
    if _share_from(_question_stems(question, forms=False), _question_stems(answer, forms=False)) < EMBED_COVER:
        return None
    added = _added(question, outside)
    if _adds_a_value(added) or _calls_it(question, answer):
        return None
    return f"it holds the question as \"{wh} ...\" and adds {', '.join(t for _, t in added) or 'nothing'}"


#: the words an answer that embeds the question adds carry the question's meaning (an answer, "formic acid" to
#: "What substance causes irritation from a nettle sting?") when their cosine to the question is at least this
ADDED_MEANING = 0.2


#: a part of an answer beside the question given back says nothing of its own when it has at most this many words,
#: no number, no yes or no, no name but its first word, and either leads in to what follows ("You asked:", "Hmm,"),
#: has no keyword ("That is the question here."), or has no word of the question's or the context's and is judged
#: with a context ("Thanks for asking.") or speaks of the asking ("I will need to check.", "Many people ask this."):
#: an aside (``_aside``). Without a context a short value ("never made.") reads as such a remark does: only the
#: remarks that speak of the asking are told.
ASIDE_MAX_WORDS = 6
#: words by which a remark speaks of the asking itself: the speaker, the asker, the question ("this")
_SPEAKING = frozenset("i me my we us our you your this these those".split())


def _parts(text: str) -> list[str]:
    """The text's sentences, each also cut after a colon ("You asked: who ...?", "Answer: 1760")."""
    return [p.strip() for part in sentences(text) for p in re.split(r"(?<=:)\s+", part) if len(p.strip()) > 1]


def _aside(part: str, question: str, context: str) -> bool:
    """Whether a part of an answer beside the question given back says nothing of its own (``ASIDE_MAX_WORDS``)."""
    words = _TOKEN.findall(part)
    if not 0 < len(words) <= ASIDE_MAX_WORDS or any(w[:1].isupper() for w in words[1:]) \
            or has_number(normalize(part)) or POLARITY.search(normalize(part)):
        return False
    if part.rstrip().endswith((":", ",")) or not stems(part) - GENERIC:  # a lead-in, or no keyword at all
        return True
    return not _grounded(stems(part), context, question) and (
        bool(context.strip()) or bool(_SPEAKING & set(normalize(part).split())))


def _question_run(question: str, answer: str) -> tuple[int, int, int, int] | None:
    """Where the answer holds at least ``EMBED_COVER`` of the question's (normalised) words in a row, beside more
    words: (the run's length in words, its first character, the end of its last word, the start of the word after
    it or the answer's end), or None."""
    q_words = normalize(question).split()
    tokens = [(m.start(), m.end(), w) for m in re.finditer(r"\S+", answer) for w in normalize(m.group()).split()]
    if not q_words or len(tokens) <= len(q_words) * EMBED_COVER:
        return None
    run = SequenceMatcher(None, q_words, [w for _, _, w in tokens], autojunk=False).find_longest_match(
        0, len(q_words), 0, len(tokens))
    if run.size < EMBED_COVER * len(q_words):
        return None
    after = tokens[run.b + run.size][0] if run.b + run.size < len(tokens) else len(answer)  # the next word's start
    start = tokens[run.b][0]
    while (word := re.search(r"\S+\s*$", answer[:start])) and not normalize(word.group()).split():
        start = word.start()  # the words normalize drops that open it ("The" of "The Suez Canal ...") go with it
    return run.size, start, tokens[run.b + run.size - 1][1], after


def _beside_echo(question: str, answer: str, context: str = "") -> str | None:
    """What an answer that gives the question back says beside it and beside asides ("" for nothing), or None when
    it does not give it back beside other words. It gives it back when it holds at least ``EMBED_COVER`` of the
    question's words in a row that still ask: a "?" ends them, or they are all of a question that has none and stand
    as a sentence (not "... was used to refer to the Latin alphabet.", "The answer relates to who ..."). "Good
    question! When was Montreal captured?", "Hmm, when was it captured?", "When was it captured? I will need to
    check." are no answer; "When was Montreal captured? In 1760." is judged by "In 1760."."""
    q_words = normalize(question).split()
    if len(q_words) < 3 or (held := _question_run(question, answer)) is None:
        return None
    size, start, end, after = held
    gap = answer[end:after]  # what ends the run: punctuation, or words normalize drops ("a")
    asks = answer[:end].rstrip(" )]\"'”’").endswith("?") or "?" in gap or (  # a question without "?": its
        size == len(q_words) and "?" not in question and (after == len(answer) or re.search(r"[.!\n]", gap))
        and re.search(r"(^|[.!?:,\n])$", answer[:start].rstrip(" (\"'“‘")))  # words standing as a sentence
    before, left = answer[:start].strip(), (gap.replace("?", " ", 1) + answer[after:]).strip()
    if not asks or not _TOKEN.search(before + " " + left):
        return None
    return " ".join(part for part in (*_parts(before), *_parts(left)) if not _aside(part, question, context))


def _another_sentence_answers(question: str, answer: str) -> bool:
    """An answer of several sentences one of which adds words and takes less than half of its keywords from the
    question: that one may answer it ("beneath the liver. That is the answer to: where is the gall bladder?"). A
    part that opens in lower case goes on with the sentence before it ("... to my site. is given above.")."""
    parts: list[str] = []
    for part in sentences(answer):
        if parts and part[:1].islower():
            parts[-1] += " " + part
        else:
            parts.append(part)
    if len(parts) < 2:
        return False
    asked = _question_stems(question)
    return any((kw := stems(part) - GENERIC) and _added(question, part) and _share_from(kw, asked) < 0.5
               for part in parts)


def _added_text(question: str, answer: str) -> str:
    return " ".join(t for _, t in _added(question, answer)) or "."


def _embedded(question: str, answer: str, embed: Embed) -> str | None:
    """``_embeds``, unless the words the answer adds mean something of the question's subject: cos(e(Q), e(added))
    ≥ ``ADDED_MEANING`` ("... is called a diastema." completes the question; "That depends on ..." wraps it)."""
    why = _embeds(question, answer)
    if why is None:
        return None
    q, a = embed([question, _added_text(question, answer)])
    cosine = float(q @ a)
    return None if cosine >= ADDED_MEANING else f"{why}; their meaning is not the question's (cosine {cosine:.2f})"


def _added(question: str, answer: str) -> list[tuple[int, str]]:
    """The answer's words (with their position) that the question does not have: not similar to a question
    keyword, not ``GENERIC`` or ``PLACEHOLDERS`` (function words dropped)."""
    asked = _question_stems(question)
    return [(i, t) for i, t in enumerate(_TOKEN.findall(answer)) if _is_own(t, asked)]


def _is_own(word: str, asked: frozenset[str]) -> bool:
    """A word with a keyword not similar to one of the question's ``asked`` and not ``GENERIC`` or
    ``PLACEHOLDERS``: one the answer adds (``_added``, ``_filled``)."""
    return bool(s := stems(unhyphened(_unpossessed(word)))) and not all(alike(w, asked) for w in s) and not (
        s <= GENERIC | PLACEHOLDERS)


CUT_MIN_WORDS = 10


def _uncut(question: str, answer: str) -> str:
    """The answer with a last word cut off in the middle written whole, when it is the start of one of the question's
    words ("... in July 1 and 12, 19" of "1983", "Prince Rain" of "Rainier"): a sentence of ``CUT_MIN_WORDS`` words
    or more that ends without punctuation, as a reply cut at the model's token limit does (a short reply ending in a
    name is no cut one: "an Italo-Norman named Raoul")."""
    text = answer.rstrip()
    tokens = _TOKEN.findall(text)
    if len(tokens) < CUT_MIN_WORDS or not text[-1:].isalnum():
        return answer
    last = tokens[-1]
    whole = next((w for w in _TOKEN.findall(question) if len(w) > len(last) >= 2
                  and w.lower().startswith(last.lower()) and not text.lower().endswith(w.lower())), None)
    return text[:len(text) - len(last)] + whole if whole else answer


#: words inside a run of capitalised words that its initials skip ("United States of America" is "USA")
_INITIALS_SKIP = frozenset("of and the for".split())
_CAPITALISED_RUN = re.compile(r"\b[A-Z][\w'’-]*(?:\s+(?:(?:of|and|the|for)\s+)?[A-Z][\w'’-]*)+")


def _as_asked(question: str, answer: str) -> str:
    """The answer as the question writes it: cut last word written whole (``_uncut``), and a run of capitalised
    words whose initials spell one of the question's words (not a wh-word) written as that word ("United States"
    for "us", "National Basketball Association" for "NBA"): "Wild horses are found in the United States." gives
    "where are wild horses found in the us" back."""
    answer = _uncut(question, answer)
    # a short word of the question that may be initials: written in capitals, no function word, or one after "the"
    # ("the us"; not "show me", "what is")
    asked = {m.group(2).lower(): m.group(2) for m in re.finditer(r"(\bthe\s+)?\b([A-Za-z]{2,5})\b", question, re.I)
             if m.group(2).lower() not in _WH_WORDS
             and (m.group(2).isupper() or m.group(2).lower() not in STOPWORDS or m.group(1))}

    def spelt(run: re.Match) -> str:  # (a run the question writes too stays: "Portal Server" of "... PS ...")
        initials = "".join(w[0] for w in run.group().split() if w.lower() not in _INITIALS_SKIP).lower()
        return run.group() if run.group().lower() in question.lower() else asked.get(initials, run.group())

    return _CAPITALISED_RUN.sub(spelt, answer) if asked else answer


def _share_from(words: frozenset[str] | set[str], asked: frozenset[str]) -> float:
    """The share of ``words`` similar to one of the question's keywords ``asked`` (0 for no words)."""
    return len({w for w in words if similar(w, asked)}) / len(words) if words else 0.0


def _adds_a_value(added: list[tuple[int, str]]) -> bool:
    """The added words are more than ``VALUE_MAX_ADDED`` keywords, or hold a value (``_value_in``)."""
    return len({w for _, t in added for w in stems(t)}) > VALUE_MAX_ADDED or _value_in(added)


_CALLED = re.compile(r"\b(?:called|named|termed|known as)\s+[\"'“]?([\w'’-]+)", re.I)


def _calls_it(question: str, answer: str) -> bool:
    """The answer names the asked thing after a naming verb with a word of its own, a common noun too ("... is
    called melanin." to "which pigment determines the colour of human hair")."""
    asked = _question_stems(question)
    return any(_is_own(m.group(1), asked) for m in _CALLED.finditer(answer))


def _value_in(added: list[tuple[int, str]]) -> bool:
    """Whether added words hold a value: a number, a yes/no word, or a name (a capitalised word; an answer's first
    word only when it is not a verb form in -ing or -ed, "Regarding")."""
    for i, t in added:
        if _DIGIT.search(t) or has_number(normalize(t)) or POLARITY.search(normalize(t)):
            return True
        if t[:1].isupper() and not (i == 0 and re.search(r"(ing|ed)$", t.lower())):
            return True
    return False


#: a question that ends in one of these before its "?" leaves its asked part to be written after it ("Which readers
#: was the series published for?", "... over natural terrain such as?")
_DANGLING = frozenset("for in with as of to from by about on at into onto regarding including like than".split())
#: words that introduce a thing as some one of its kind, not a particular one ("another presenter", "a town")
_INDEFINITE_WORDS = frozenset("a an another some any certain other".split())
_POSSESSIVES = frozenset("his her their its my our your".split())  # "for his work": the asked thing, unnamed
#: an asking word this near the question's end ("... regarding what?", "... born in what year?") is where it asks;
#: a wh-word earlier in the middle ("a social worker who writes ...") opens a relative clause
END_SLOT = 3


@functools.lru_cache(maxsize=4096)
def _fills_slot(question: str, answer: str) -> str | None:
    """The words an answer puts in the question's asked part, when they hold a value, else None: the question given
    back as a statement with its asked part filled answers it, right or wrong, even with a name the question has
    ("... a personal favorite of Robert Smigel." to "... a personal favorite of what American television executive
    ...?"). The asked part is the question's wh-word (its first, or the last when within ``END_SLOT`` words of the
    end: "... quoted in the media regarding what?"), the answer's words aligned to it (``difflib``) replacing it or
    inserted at it; or, for a question ending in a preposition (``_DANGLING``: "... published for?", "... such
    as?"), the words the answer writes after that ending, up to a comma or the sentence's end. A filler holds a
    value when it has a name or a number, or, after a dangling preposition or at an end slot, a keyword of its own
    (not the question's, ``GENERIC`` or ``PLACEHOLDERS``: "adults", "divorce prevention", "dirt or grass"). A filler
    that introduces the question's own words as some one of a kind ("another American cooking-themed series
    presenter", "a town") names nothing. Not for a title-shaped answer (every word capitalised)."""
    if _titled(answer):
        return None
    bare = re.sub(r"^\W*(?:q|question)\s*:", "", question, flags=re.I)
    q, a = _TOKEN.findall(bare), _TOKEN.findall(answer)
    low_q, low_a = [w.lower().strip(".") for w in q], [w.lower().strip(".") for w in a]
    if low_q and low_q[-1] in _DANGLING:  # the asked part comes after the question's last word
        tail = q[-2:] if len(q) > 1 and low_q[-1] == "as" else q[-1:]  # "such as"
        after = re.search(r"(?<![\w])" + r"\W+".join(map(re.escape, tail)) + r"\s+([^,;:.!?()]+)", answer, re.I)
        return _filled(question, after.group(1).split(), dangling=True) if after else None
    wh_at = [i for i, w in enumerate(low_q) if w in _WH_WORDS]
    if not wh_at:
        return None
    end_slot = len(low_q) - wh_at[-1] <= END_SLOT and wh_at[-1] > 0
    wh = wh_at[-1] if end_slot else wh_at[0]
    if not wh:
        return None
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, low_q, low_a, autojunk=False).get_opcodes():
        if (tag in ("replace", "delete") and i1 <= wh < i2) or (tag == "insert" and i1 == wh):
            # the question's own words of the replaced span, re-inflected ("Neilan" -> "Neilan's"), fill nothing
            # nor do the asked phrase's own words written in its place ("Peabody Award-winning" to "... which
            # Peabody Award-winning member ...?")
            replaced = {_unpossessed(w) for w in low_q[i1:i2]} | set(low_q[wh + 1: wh + 1 + ASKED_PHRASE])
            filled = [w for w in a[j1:j2] if _unpossessed(w.lower().strip(".")) not in replaced]
            return _filled(question, filled, end_slot=end_slot)
    return None


_QUOTED = re.compile(r"(?:^|(?<=[\s(\[]))[\"“]([^\"“”]*[^\W\d_][^\"“”]*)(?:[\"”]|$)")  # an opening mark


def _quotes_a_name(question: str, answer: str) -> str | None:
    """A title the answer writes in quotation marks that the question does not hold, to a question asking for a
    title, a name or an entity (``_TITLE_ASKED``, ``_ENTITY_ASKED``, ``_asks_named``): a name of the asked kind, even
    one made of the question's words ("... made his name in the sitcom "The Future Hobbit and the Sleuth"."), else
    None."""
    if not (_TITLE_ASKED.search(question) or _ENTITY_ASKED.search(question) or _asks_named(question)):
        return None
    said = normalize(question)
    return next((m.group(1).strip() for m in _QUOTED.finditer(answer.rstrip(" .")) if normalize(m.group(1))
                 and not re.search(rf"(?<!\w){re.escape(normalize(m.group(1)))}(?!\w)", said)), None)


def _filled(question: str, words: list[str], *, dangling: bool = False, end_slot: bool = False) -> str | None:
    """``words`` joined when they hold a value (``_fills_slot``), else None."""
    if not words:
        return None
    asked = _question_stems(question)
    own = [w for w in words if _is_own(w, asked) and w.lower() not in _INDEFINITE_WORDS]
    # "another American ... presenter", "a French aviator": some one of a kind, unless a name of two or more
    # capitalised words or a number follows ("a young Amy Johnson")
    if words[0].lower() in _INDEFINITE_WORDS and not any(w[:1].isdigit() for w in words) and not any(
            x[:1].isupper() and y[:1].isupper() for x, y in itertools.pairwise(words[1:])):
        return None
    if dangling and (words[0].lower() in VERBS or AUX_START.match(words[0])):
        return None  # "... is known as is given above.": a clause, not the asked thing
    named = [w for w in (own if dangling else words) if w[:1].isupper() or w[:1].isdigit()]
    common = (dangling or end_slot) and bool(own) and words[0].lower() not in _INDEFINITE_WORDS | _POSSESSIVES
    return " ".join(words) if named or common else None


_NAME_JOINERS = frozenset("of the de du la le van von da del for &".split())
_DETERMINERS = frozenset("the a an this that these those".split())


def _name_runs(answer: str) -> list[list[str]]:
    """The answer's runs of capitalised words (lowercase joiners inside: "Kingdom of Aksum"), a leading determiner
    and a possessive "'s" cut off."""
    runs: list[list[str]] = []
    run: list[str] = []
    for token in [*_TOKEN.findall(answer), ""]:
        word = token.strip(".")
        if word[:1].isupper() or (run and word.lower() in _NAME_JOINERS):
            run.append(word)
            continue
        while run and (run[-1].lower() in _NAME_JOINERS or run[0].lower() in _DETERMINERS):
            run.pop(-1 if run[-1].lower() in _NAME_JOINERS else 0)
        if run:
            runs.append([*run[:-1], _unpossessed(run[-1])])
        run = []
    return runs


def _has_phrase(text: str, words: Sequence[str], *, case: bool) -> bool:
    pattern = r"(?<![\w])" + r"\W+".join(map(re.escape, words)) + r"(?![\w])"
    return re.search(pattern, text, 0 if case else re.I) is not None


def _context_name(question: str, answer: str, context: str) -> str | None:
    """A name the answer makes of the question's words, as the context writes it, else None: a run of two or more
    capitalised words (``_name_runs``; one word alone is a form of the question's own: "Lithuanian") whose keywords
    are all the question's, one of them never capitalised there, that the question does not hold as a phrase and the
    context does, capitalised ("Windsor Airport" to "... and which airport?" over a context naming it; "University
    of Calcutta" to "which public state university ..."). Such an
    answer names a thing though it adds no word to the question's; a heading or a restatement made of the question's
    words ("Devonwood Bike Trail Airport", "Marshall Neilan's nationality") is not written so in the context, and a
    name the question has ("Bill Clinton" of "Bill and Hillary Clinton") is no new one."""
    if not context:
        return None
    asked, named = _question_stems(question), {w.lower() for w in _TOKEN.findall(question) if w[:1].isupper()}
    for run in _name_runs(answer):
        content = [w for w in run if stems(w)]
        if (content and len(run) > 1 and all(similar(s, asked) for w in content for s in stems(w))
                and any(w.lower() not in named for w in content)
                and not _has_phrase(question, run, case=False) and _has_phrase(context, run, case=True)):
            return " ".join(run)
    return None


@functools.lru_cache(maxsize=4096)
def _question_stems(question: str, *, forms: bool = True) -> frozenset[str]:
    """kw(Q), also with the question split at punctuation ("load.rules" gives "load" and "rule" too) and without
    possessives ("Curie's" gives "curie"); with ``forms`` (for telling whether a word is the question's, not for
    counting its keywords) each alphabetic stem also with its final "e" dropped or added (``lexicon.stem`` makes
    "liv" of "lives" but keeps "live"), and an ordinal in words also in digits and back ("fourth", "4th")."""
    kw = stems(question) | stems(re.sub(r"[^\w\s]", " ", question)) | stems(_unpossessed(question))
    if not forms:
        return kw
    ordinals = {_ORDINAL_DIGITS.get(w) or _ORDINAL_WORDS.get(w) for w in kw} - {None}  # "fourth" / "4th"
    return kw | ordinals | {w[:-1] if w.endswith("e") else f"{w}e" for w in kw if w.isalpha() and len(w) > 3}


_POSSESSIVE_END = re.compile(r"(?<=\w)['’]s?(?!\w)")


def _unpossessed(text: str) -> str:
    """The text with possessive endings cut ("Marie Curie's" -> "Marie Curie", "Burns'" -> "Burns"): ``stems``
    would make "curies" of "Curie's", which no longer matches "Curie"."""
    return _POSSESSIVE_END.sub("", text)


def _titled(answer: str) -> bool:
    """Shaped like a title: no final period, and every word of more than 3 letters (``GENERIC`` aside) capitalised."""
    words = [w for w in re.findall(r"[^\W\d_][\w'’-]+", answer) if w.lower() not in GENERIC]
    return bool(words) and not answer.strip().endswith(".") and all(w[0].isupper() for w in words if len(w) > 3)


#: ordinal words: "What number film ...?" is answered by "twenty-first"
_FIRST_TWENTY = tuple("""
    first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth thirteenth fourteenth
    fifteenth sixteenth seventeenth eighteenth nineteenth twentieth
""".split())
_ORDINALS = frozenset(_FIRST_TWENTY) | frozenset("""
    thirtieth fortieth fiftieth sixtieth seventieth eightieth ninetieth hundredth thousandth millionth
""".split())


_ORDINAL_DIGITS = {w: f"{i}{'th' if 10 <= i % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(i % 10, 'th')}"
                   for i, w in enumerate(_FIRST_TWENTY, 1)}
_ORDINAL_WORDS = {digits: word for word, digits in _ORDINAL_DIGITS.items()}


def _has_number(text: str, *, ordinals: bool = False) -> bool:
    """``lexicon.has_number``, or a quantity word ("several", "hundreds"); with ``ordinals`` also an ordinal
    ("twenty-first", hyphenated words read part by part: a number question's "what number film")."""
    if has_number(normalize(text)) or bool((set(normalize(text).split()) | stems(text)) & _QUANTITY):
        return True
    words = set(normalize(text.replace("-", " ")).split())
    return ordinals and (has_number(" ".join(words)) or bool(words & _ORDINALS))


def _has_time(text: str) -> bool:
    words = set(normalize(text).split())
    return (_has_number(text) or bool(MONTH.search(normalize(text))) or bool(words & _WEEKDAYS)
            or bool(words & _TIME_WORDS) or bool(stems(text) & _TIME_STEMS))


def _only_numbers_or_time(text: str) -> bool:
    """Every keyword of the answer is a number, a month, a weekday or a time word (and there is one)."""
    content = stems(text)
    return bool(content) and all(s in NUMBER_WORDS or s in _TIME_STEMS or s in _WEEKDAYS or MONTH.fullmatch(s)
                                 or re.fullmatch(r"\d+(st|nd|rd|th|s)?", s) for s in content)


def _affirms(question: str, answer: str) -> bool:
    """``question_forms.affirms_polar`` of an answer that lacks only its final period ("Keenen Ivory Wayans and
    Fruit Chan are both filmmakers" to "Are ... both filmmakers?"); not of a title-shaped answer or a question."""
    text = answer.strip()
    if not text or text.endswith("?") or _titled(text):
        return False
    return affirms_polar(question, text if text[-1] in ".!" else f"{text}.")


#: a wh-question that may take a yes or a no as its value: it asks for an answer, an output, a word ("What answer
#: denotes that an algorithm has accepted an input?") or whether
_YES_NO_ASKED = re.compile(r"\b(whether|yes|no|true or false|answers?|outputs?|responses?|repl(y|ies)|results?|"
                           r"words?|values?|says?|said|returns?)\b", re.I)


def _declines_after_restating(question: str, answer: str) -> str | None:
    """Why the answer is a refusal written after the question given back, or None: it has a refusal phrase
    (``nonanswer.refusal_start``: "not known", "cannot be determined") and every keyword before it is the question's
    ("The county music artist who first gained national attention as a winner on ... is not known to me."). The
    screen takes a refusal phrase late in a long answer as said in passing; after the question's own words it is the
    whole reply."""
    start = refusal_start(answer)
    if start is None or start == 0:
        return None
    before = " ".join(normalize(answer).split()[:start])
    if not stems(before) - GENERIC - PLACEHOLDERS or _added(question, before):
        return None
    return "the question given back, then declined"


def _keeps_asking(question: str, answer: str) -> bool:
    """The answer holds the question's asking phrase, its asking wh-word and the word after it, or a yes/no
    question's first three words, past its first word ("... during which late period." to "... during which late
    period?"; "It concerns is the last book written."): the asked part is still open. The
    asking wh-word is the question's first word, or its last one within ``END_SLOT`` words of its end; a wh-word in
    the middle opens a relative clause ("a sport in which teams run ..."), which an answer may well keep."""
    q, a = normalize(question).split(), normalize(answer).split()
    at = [i for i, w in enumerate(q[:-1]) if w in _WH_WORDS and (i == 0 or len(q) - i <= END_SLOT)]
    phrases = {(q[i], q[i + 1]) for i in at}
    if any((w, a[i + 1]) in phrases for i, w in enumerate(a[:-1]) if i > 0):
        return True
    # a yes/no question's opening in its asking order ("It concerns is the last book written."): still asked
    return len(q) >= 3 and bool(AUX_START.match(question.strip())) and any(
        a[i:i + 3] == q[:3] for i in range(1, len(a) - 2))


def _bare_polar(question: str, answer: str) -> str | None:
    """The question's wh-word when the answer is only a yes or a no ("No.", "Yes, it is.") and the question asks
    with a wh-word ("... written by which American writer ...?"), not with an auxiliary, and not for an answer or a
    word that may be a yes (``_YES_NO_ASKED``): else None."""
    if AUX_START.search(question) or _YES_NO_ASKED.search(question):
        return None
    if (len(normalize(answer).split()) > POLAR_MIN_WORDS or not POLARITY.search(normalize(answer))
            or not stems(answer) - FILLER <= _POLAR_STEMS):
        return None
    return next((w for w in normalize(question).split() if w in _WH_WORDS), None)


def _polar_ok(answer: str) -> bool:
    return bool(POLARITY.search(normalize(answer))) or len(answer.split()) >= POLAR_MIN_WORDS


@dataclass(frozen=True)
class Asked:
    """An asked type: the question pattern that asks for it, and the check the answer's form must pass."""

    question: re.Pattern[str]
    accepts: Callable[[str], bool]
    needs: str  # for the reason: what the answer lacks


#: asked type -> (question pattern, answer check); the first pattern that matches the question decides
ASKED: dict[str, Asked] = {
    "number": Asked(re.compile(r"\bhow (many|much|old)\b"
                               r"|\bhow (long|far|tall)\b(?!.*(?:\band|\bor|,)\s+(what|which|who|whom|where|how)\b)"
                               r"|\bwhat (percentage|percent|number|proportion)\b"
                               r"|^\W*(the )?(percentage|number|proportion|population) of\b"
                               r"|\b(what|which) (is|was|are|were) the (\w+ )?(number|population|percentage|age)"
                               r" of\b", re.I),
                    functools.partial(_has_number, ordinals=True), "no number or ordinal"),
    # "When was the actor who starred in ... born?": a relative wh-word after a noun does not make it a double question
    "time": Asked(re.compile(r"^\W*(when|since when|until when)\b(?!.*(?:\band|\bor|,)\s+(what|which|who|whom|where|"
                             r"how)\b)"
                             r"|\b(what|which) (year|date|month|day|century|decade|time)\b"
                             r"|\b(what|which) (is|was) the (\w+ )?(year|date|month|day|century|decade)"
                             r" (of|in|on|when)\b",
                             re.I),
                  _has_time, "no date or time"),
    "person or place": Asked(re.compile(r"^\W*(who|whom|whose|where)\b|\b(what|which)\s+(\w+\s+)?(country|"
                                        r"countries|city|cities|state|place|person|people|name|team|company|"
                                        r"language|religion|group|organi[sz]ation|author|artist|band)\b|\bwhat is "
                                        r"(it|he|she|this|that) called\b", re.I),
                             lambda a: not _only_numbers_or_time(a), "only numbers or time words"),
    "polar": Asked(AUX_START, _polar_ok, f"no yes/no word and fewer than {POLAR_MIN_WORDS} words"),
}


def asked_type(question: str) -> str | None:
    """The type the question asks for (``ASKED`` key), or None (what/which/why/how …: any form may answer)."""
    for name, asked in ASKED.items():
        if asked.question.search(question) and not (name == "polar" and re.search(r"\bor\b", question, re.I)):
            return name
    return None


Embed = Callable[[Sequence[str]], np.ndarray]  # texts -> L2-normalised vectors, one row per text

#: the context's sentences most similar to the question (cosine of all-MiniLM-L6-v2), each with its neighbours,
#: are the passage "near the question's words" the answer's meaning is compared with
NEAR_TOP = 3
MAX_SENTENCES = 200
#: the off-topic rule applies only when some context sentence is about the question (cosine ≥ MIN_ABOUT): a
#: context about something else (retrieval failed) cannot tell what is on topic
MIN_ABOUT = 0.25
#: rule 4: an answer of at least FAR_MIN_WORDS keywords, with cos(e(Q), e(A)) < FAR_COS and less than FAR_SHARE of its
#: keywords from the question, is about something else
FAR_MIN_WORDS = 5
#: ... unless the context vouches for it: a sentence of the context is clearly about the question (cosine ≥
#: VOUCH_ABOUT) and the answer's meaning is close to the sentences near the question (≥ VOUCH_CLOSE)
VOUCH_ABOUT = 0.45
VOUCH_CLOSE = 0.3
FAR_COS = 0.25
FAR_SHARE = 0.34
LONG_WORDS = 12  # an answer of this many words or more is "long" (length weight 1)
#: the fitted linear score of being on topic (``Topic.score``; logistic regression on the controls of SQuAD 2.0
#: and TechQA, ``scripts/fit_answer_relevance.py``); off_topic iff score < TOPIC_THRESHOLD
TOPIC_WEIGHTS: dict[str, float] = {"short_grounding": 1.53, "long_grounding": 2.08, "short_close": 0.47,
                                   "long_close": 1.13, "short_asked": 0.27, "long_asked": 0.94, "length": -0.10}
TOPIC_BIAS = -1.53
TOPIC_THRESHOLD = -0.25
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_SEPARATOR = re.compile(r"(?<=\d)[,.](?=\d{3}\b)")


def sentences(context: str) -> list[str]:
    """The context's sentences (split after . ! ? and at line breaks; the first ``MAX_SENTENCES``)."""
    return [s.strip() for s in _SENTENCE.split(context) if len(s.strip()) > 1][:MAX_SENTENCES]


def _digits(text: str) -> str:
    """The text with thousands separators dropped ("1,000,000" -> "1000000"), lowercased."""
    return _SEPARATOR.sub("", text.lower())


def _numerals(text: str, *, keep_words: bool) -> str:
    """``_digits`` with numbers written in words in digits too (``lexicon.numbers_as_digits``), so that an answer
    and a context that write one number two ways share it; ``keep_words`` for a context: either form of an
    answer's number is found in it."""
    return numbers_as_digits(_digits(text), keep_words=keep_words)


@dataclass(frozen=True)
class Topic:
    """What says an answer is about its question, given a context (module docstring, rule 3)."""

    found: int  # answer keywords that occur in the context or the question
    total: int  # answer keywords
    close: float  # max cosine of the answer to the sentences near the question
    asked: float  # cosine of the answer to the question
    about: float  # max cosine of the question to a context sentence
    length: float  # min(1, words / LONG_WORDS)

    @property
    def grounding(self) -> float:
        return self.found / self.total

    def features(self) -> dict[str, float]:
        short, long = 1.0 - self.length, self.length
        return {"short_grounding": short * self.grounding, "long_grounding": long * self.grounding,
                "short_close": short * self.close, "long_close": long * self.close,
                "short_asked": short * self.asked, "long_asked": long * self.asked, "length": self.length}

    def score(self) -> float:
        return TOPIC_BIAS + sum(TOPIC_WEIGHTS[k] * v for k, v in self.features().items())


def topic(question: str, answer: str, context: str, embed: Embed) -> Topic | None:
    """The ``Topic`` signals of an answer, or None without a context or without an answer keyword (a yes/no
    word answering a yes/no question is none: "Yes" states the asked polarity, not a topic)."""
    parts = sentences(context)
    polar = _POLAR_STEMS if is_polar(question) else frozenset()
    words = frozenset(stems(_numerals(answer, keep_words=False)) - GENERIC - polar)
    if not parts or not words:
        return None
    vectors = embed([question, answer, *parts])
    q, a, s = vectors[0], vectors[1], vectors[2:]
    to_question = s @ q
    near = sorted({j for i in np.argsort(-to_question)[:NEAR_TOP] for j in (i - 1, i, i + 1) if 0 <= j < len(parts)})
    found = len(_grounded(words, context, question))
    return Topic(found, len(words), float(np.max(s[near] @ a)), float(q @ a), float(np.max(to_question)),
                 min(1.0, len(answer.split()) / LONG_WORDS))


def _grounded(words: frozenset[str] | set[str], context: str, question: str = "") -> set[str]:
    """The keywords of ``words`` that occur in the context or the question (``lexicon.similar``; a keyword with a
    digit must occur as that number: "$1,000,000" matches "US$1,000,000", "four hundred" matches 400)."""
    known = stems(context) | stems(_unpossessed(context)) | (_question_stems(question) if question else frozenset())
    digits = _numerals(context, keep_words=True)  # "Kipling's" is "Kipling": the possessive cut
    # a number as the keywords write it too ("16-year-old" is the keyword "16yearold", "0.9 s" is "09")
    digits += " " + " ".join(w for w in stems(digits) if _DIGIT.search(w))
    return {w for w in words if (re.search(rf"(?<!\d){re.escape(w)}(?!\d)", digits) if _DIGIT.search(w)
                                 else similar(w, known))}


def _ungrounded_title(question: str, answer: str, context: str) -> str | None:
    """Why a title-shaped answer is a heading by what it adds, or None (module docstring, rule 3): no verb, and the
    keywords it adds to the question's (``GENERIC`` and ``PLACEHOLDERS`` aside) occur nowhere in the context
    ("Charles Runnington's Birthplace", "Allkpop's Bergen County Location")."""
    if not _titled(answer) or has_verb(answer, participles=False):
        return None
    asked = _question_stems(question)
    # a word in -ed is no verb in a title ("Moon Shapes Explained"), but a title with one that names something of its
    # own ("... Drafted by Detroit Red Wings", '... Starred in "The Last Star') gives a value, right or wrong
    if has_verb(answer) and (_own_name(answer, asked, context) or _quotes_a_name(question, answer) is not None):
        return None
    added = {w for w in stems(_numerals(_unpossessed(answer), keep_words=False)) - GENERIC - PLACEHOLDERS
             if not alike(w, asked)}
    if not added or _grounded(added, context) or any(_DIGIT.search(w) for w in added):  # a number is a value
        return None
    return f"shaped like a title, it adds to the question only {', '.join(sorted(added))}, which the context never uses"


def _own_name(answer: str, asked: frozenset[str], context: str = "") -> bool:
    """The answer holds a run of two or more capitalised words of its own, none the question's ("Detroit Red
    Wings", "Tom Cruise"), and none that the context writes in lower case (a title capitalises common nouns: "Art
    Experiment")."""
    lower = set(re.findall(r"\b[a-z][\w'’-]*", context))
    run = 0
    for token in _TOKEN.findall(answer):
        run = run + 1 if token[:1].isupper() and _is_own(token, asked) and token.lower() not in lower else 0
        if run >= 2:
            return True
    return False


def _another_subject(question: str, answer: str) -> str | None:
    """Why a statement answers a yes/no question about something else, or None: the question names things (its
    capitalised words after the first, stopwords aside), and the answer, a sentence with a verb, has no yes/no
    word, names none of them, and opens with a name of its own (a run of capitalised words, the first no stopword):
    "Nicholls is a suburb in Canberra." to "Are Sherwood Stewart and Ekaterina Makarova from the same country?".
    "They were both born in England." is about the question's things; a wh-question's answer may well open with a
    new name (the asked one)."""
    first = next(iter(sentences(answer)), "")
    if not is_polar(question) or POLARITY.search(normalize(answer)) or not has_verb(first):
        return None
    named = {_unpossessed(w).lower() for w in _TOKEN.findall(question)[1:]
             if w[:1].isupper() and w.lower() not in STOPWORDS}
    words = _TOKEN.findall(answer)
    if not named or any(_unpossessed(w).lower() in named for w in words) or not words or (
            words[0].lower() in STOPWORDS | _NOT_NAMES):
        return None
    subject = list(itertools.takewhile(lambda w: w[:1].isupper(), words))
    if not subject:
        return None
    return f"a statement about {' '.join(subject)}, naming none of the question's {', '.join(sorted(named))}"


_NOT_NAMES = frozenset("one neither either".split())


def _topic_reason(signals: Topic) -> str:
    """Why rule 3 finds the answer about something else (module docstring)."""
    return (f"score {signals.score():.2f} < {TOPIC_THRESHOLD:g}: {signals.found} of {signals.total} answer keywords "
            f"occur in the context, meaning close to the sentences near the question {signals.close:.2f}, to the "
            f"question {signals.asked:.2f}")


def _far_from_question(question: str, answer: str, embed: Embed) -> str | None:
    """Why the answer's meaning is about something else than the question's, or None (module docstring, rule 4)."""
    said = stems(_digits(answer)) - GENERIC
    if len(said) < FAR_MIN_WORDS or not has_verb(answer):  # a list of names ("Raymond Unwin (Barry Parker)") is no
        return None  # sentence about something else: it is judged as a bare value
    share = _share_from(said, _question_stems(question))
    if share >= FAR_SHARE:
        return None
    q, a = embed([question, answer])
    cosine = float(q @ a)
    if cosine >= FAR_COS:
        return None
    return (f"meaning far from the question (cosine {cosine:.2f} < {FAR_COS:g}) and {share:.0%} of its keywords from "
            f"the question (< {FAR_SHARE:.0%})")


@dataclass(frozen=True)
class Relevance:
    verdict: bool
    kind: str  # a ``KINDS`` key when rejected, "relevant" when accepted
    reason: str  # names the rule


def answer_form(question: str, answer: str, answerable: bool, context: str = "") -> Relevance | None:
    """Rules 1 and 2 (the answer's form: non-answers, restatements, the asked type), or None when they pass.
    ``context``: the text the system was given, if known (an answer naming what it holds restates nothing)."""
    answer = _as_asked(question, answer)
    if not answerable and (is_refusal(answer, question) or _declines_after_restating(question, answer)):
        return Relevance(True, "relevant", "declines a question marked unanswerable")
    screened = screen(question, (), answer)
    if screened.kind in SCREEN_KINDS and not (screened.kind == "options" and _asks_several(question)):
        return Relevance(False, screened.kind, f"{screened.kind}: {screened.reason}")
    if (screened.kind == "heading" and not _TITLE_ASKED.search(question) and not _ENTITY_ASKED.search(question)
            and stems(answer) & stems(question) and not _own_name(answer, _question_stems(question), context)):
        return Relevance(False, "heading", f"heading: {KINDS['heading']} (shaped like a title; the question does not "
                                           "ask for one)")
    if (wh := _bare_polar(question, answer)) is not None:
        return Relevance(False, "wrong_type", f"wrong_type: a bare yes or no to a question that asks {wh}")
    if (declined := _declines_after_restating(question, answer)) is not None:
        return Relevance(False, "refusal", f"refusal: {KINDS['refusal']} ({declined})")
    # an answer that keeps the question's asking phrase ("... during which late period.") or is itself a wh-question
    # leaves it open, whatever option or proposition its words also hold
    restated = (None if not _keeps_asking(question, answer) and not _one_wh_question(answer) and (
                    picks_option(question, answer) or answers_polar(question, answer)
                    or _affirms(question, answer) or _fills_slot(question, answer) is not None
                    or _quotes_a_name(question, answer) is not None)
                else _restates(question, answer) or _gives_back(question, answer) or _asks_back(question, answer))
    if restated is not None and _context_name(question, answer, context) is None:
        kind = "heading" if _titled(answer) else "restatement"
        return Relevance(False, kind, f"{kind}: {KINDS[kind]} ({restated})")
    asked = asked_type(question)
    affirms = asked == "polar" and affirms_polar(question, answer)  # "X supports Y." to "Does X support Y?"
    # a number or a time must be in what the answer adds: "The coach of the 2014-15 team was Mike Jordan." gives no
    # date to "What is the birth date of the coach of the 2014-15 team?"
    said = answer
    if asked in ("number", "time"):  # the question's own words are no value: drop the answer's copies of them
        # (not its asking words: "when" in the answer is a condition, "... necessary when it is filled")
        given = set(re.findall(r"\d[\w'’.,-]*", question)) | set(normalize(question).split()) - _WH_WORDS
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
    answer = _as_asked(question, answer or "")
    embed = embed or functools.partial(embed_texts, cache_path=cache)
    if (rest := _beside_echo(question, answer, context or "")) is None:
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
    embedded = None if _context_name(question, answer, context or "") else _embedded(question, answer, embed)
    if embedded is not None:
        return Relevance(False, "restatement", f"restatement: {KINDS['restatement']} ({embedded})")
    signals = topic(question, answer, context or "", embed) if sentences(context or "") else None
    if signals is not None and signals.about >= MIN_ABOUT and signals.score() < TOPIC_THRESHOLD:
        return Relevance(False, "off_topic", f"off_topic: {_topic_reason(signals)}")
    if (signals is not None and signals.about < MIN_ABOUT and signals.found == signals.total
            and signals.asked < FAR_COS and has_verb(answer)):
        return Relevance(False, "off_topic", f"off_topic: a sentence made of a context that is not about the question "
                                             f"(its closest sentence {signals.about:.2f} < {MIN_ABOUT:g}), its meaning "
                                             f"far from the question's (cosine {signals.asked:.2f} < {FAR_COS:g})")
    if signals is not None and signals.about >= MIN_ABOUT and (
            titled := _ungrounded_title(question, answer, context or "")) is not None:
        return Relevance(False, "heading", f"heading: {KINDS['heading']} ({titled})")
    if (other := _another_subject(question, answer)) is not None:
        return Relevance(False, "off_topic", f"off_topic: {other}")
    vouched = signals is not None and signals.about >= VOUCH_ABOUT and signals.close >= VOUCH_CLOSE
    if not vouched and (far := _far_from_question(question, answer, embed)) is not None:
        return Relevance(False, "off_topic", f"off_topic: {far}")
    asked = asked_type(question)
    return Relevance(True, "relevant", "relevant: " + (f"a {asked} as asked" if asked else "addresses the question")
                     + ("" if sentences(context or "")
                        else " (no context: the answer was compared with the question only)"))


def answer_relevance_batch(cases: Sequence[tuple[str, str, str | None, bool]], *, cache: bool | Path | None = True,
                           progress: Callable[[int], None] | None = None) -> list[Relevance]:
    """``answer_relevance`` of many (question, answer, context, answerable) cases, the texts of every case that
    reaches the off-topic rule embedded in one batch (``semantic.embed_texts``)."""
    cases = [(q, _as_asked(q, a or ""), c, ok) for q, a, c, ok in cases]
    judged = [(q, _beside_echo(q, a, c or "") or a, c, ok) for q, a, c, ok in cases]  # the text each verdict reads
    texts = [t for q, a, c, ok in judged if answer_form(q, a, ok, c or "") is None
             for t in (q, a, *([_added_text(q, a)] if _embeds(q, a) else []), *sentences(c or ""))]
    unique = list(dict.fromkeys(texts))
    vectors = embed_texts(unique, cache_path=cache, progress=progress)
    row = {t: i for i, t in enumerate(unique)}

    def lookup(batch: Sequence[str]) -> np.ndarray:
        return vectors[[row[t] for t in batch]]

    return [answer_relevance(q, a, c, answerable=ok, embed=lookup) for q, a, c, ok in cases]


def _keywords(answer: str) -> int:
    """How many keywords an answer has (kw(A) − ``GENERIC``, numbers as digits)."""
    return len(stems(_digits(answer)) - GENERIC)


def _screened_text(question: str, answer: str, context: str) -> str:
    """What the naming screen reads of an answer: what the rules judged, the answer beside the question it gives
    back, asides dropped (``_beside_echo``: "When was Montreal captured? In 1760." is read as "In 1760.", "1760.
    That is the answer to: when was Montreal captured" as "1760."), else the answer."""
    return _beside_echo(question, _as_asked(question, answer), context) or answer


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
    beside the question given back (``_screened_text``). ``naming`` None: the rules alone (the judge
    ``answer_relevance_rules`` of ``judge-check``, and the rule tests)."""
    results = answer_relevance_batch(cases, cache=cache, progress=progress)
    if naming is None:
        return results
    read = {i: _screened_text(q, a or "", c or "") for i, ((q, a, c, ok), r) in enumerate(zip(cases, results))
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
