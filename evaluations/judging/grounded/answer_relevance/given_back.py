"""Rules 0-1 of answer relevance (the package docstring): the question given back, beside other words
(``beside_echo``, asides dropped: ``_aside``), restated in its own words (``restates``) or in others (``gives_back``),
asked back (``asks_back``), embedded (``embeds``, ``embeds_by_meaning``) or declined (``declines_after_restating``);
and what makes an answer that looks so one: its asked part filled (``fills_slot``), the proposition of a yes/no
question stated (``affirms_question``), a name of the asked kind quoted. ``as_asked`` writes an answer as the
question writes it first (a cut last word whole, initials as the question's word).
"""

from __future__ import annotations

import functools
import itertools
import re
from difflib import SequenceMatcher

from evaluations.judging.basics.lexicon import (AUX_START, FILLER, POLARITY, VAGUE, VERBS, alike, has_number, similar,
                                                stem, stems)
from evaluations.judging.basics.question_forms import affirms_polar, picks_option
from evaluations.judging.basics.text import STOPWORDS, normalize, unhyphened
from evaluations.judging.correctness.nonanswer import answers_polar, refusal_start
from evaluations.judging.grounded.answer_relevance.words import (ASKING, FIRST_WH, GENERIC, PLACEHOLDERS,
                                                                 POLAR_MIN_WORDS, POLAR_STEMS, TOKEN, WH_WORDS,
                                                                 added_words, adds_a_value, asked_type, asks_named,
                                                                 calls_it, Embed, grounded, is_own, plain_digits,
                                                                 question_stems, quotes_a_name, sentences, share_from,
                                                                 title_shaped, unpossessed, value_in)
from evaluations.judging.grounded.claims import has_verb

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
    asking = FIRST_WH.search(question)
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


#: a restatement reuses at least this many of the question's keywords, or at least RESTATE_COVER of them
RESTATE_WORDS = 4


RESTATE_COVER = 0.5


_SEVERAL = re.compile(r"\b(two|three|both|list)\b", re.I)


def asks_several(question: str) -> bool:
    """The question asks for several things ("two", "three", "both", "list"): "A or B" may answer it."""
    return bool(_SEVERAL.search(question))


def restates(question: str, answer: str) -> str | None:
    """Why the answer restates the question, or None: it adds no keyword beyond the question's words and
    ``GENERIC`` and ``PLACEHOLDERS`` ones (novel = kw(A) − GENERIC − PLACEHOLDERS, less the stems similar to one
    of kw(Q), is ∅: "Somebody ranked Warsaw 32nd."), and it reuses at
    least min(``RESTATE_WORDS``, ``RESTATE_COVER``·|kw(Q)|) of the question's keywords (at least one): a short
    answer that picks one word of the question ("concrete" to "abstract or concrete?") is not a restatement. An
    answer whose only keywords are ``lexicon.VAGUE`` pronouns ("Somebody.", "Someone did.") restates it too."""
    # a compound of the question's words restates them ("team-based" of "team based"); a compound said alone
    # ("NP-hard" to "... hard for the expression NP can also be stated how?") may be the asked name
    text = unpossessed(answer)
    forms, said = question_stems(question), stems(text if len(answer.split()) < 2 else unhyphened(text)) - GENERIC
    a = said - PLACEHOLDERS
    if not a and said & VAGUE:  # "Somebody.", "Someone did.": the asked thing stood for, never named
        return f"names the asked thing only as {', '.join(sorted(said & VAGUE))}"
    novel = {w for w in a if not alike(w, forms)}
    q = question_stems(question, forms=False)  # the question's keywords, counted below
    if (kinds := _only_a_kind(question, answer, novel)) is not None:  # "The capital of Australia is a city."
        return f"names the asked thing only by its kind ({kinds})"
    if not a or novel:
        return None
    shared = len({w for w in q if similar(w, a)})
    # a title, or a phrase with no verb that names one of the question's names and the asked thing by a
    # placeholder ("Marshall Neilan's nationality", "Arnold Burns' tenure in office"), restates with one of the
    # question's words; a phrase naming none of them ("types of reductions") needs the share a sentence does
    names = {w.lower() for w in TOKEN.findall(question)[1:] if w[:1].isupper()}
    placeholder_phrase = (not has_verb(answer) and bool(said & PLACEHOLDERS)
                          and any(w[:1].isupper() and unpossessed(w.lower()) in names for w in TOKEN.findall(answer)))
    need = 1.0 if title_shaped(answer) or placeholder_phrase else max(1.0, min(RESTATE_WORDS, RESTATE_COVER * len(q)))
    if shared < need:
        return None
    return f"reuses {shared} of the question's {len(q)} keywords and adds none"


#: an answer whose keywords come at least this much from the question, adding at most VALUE_MAX_ADDED keywords of
#: its own and no name or number, is the question given back in other words (``gives_back``)
GIVEN_BACK_SHARE = 0.6


def gives_back(question: str, answer: str) -> str | None:
    """Why the answer is the question given back in other words, or None: most of its keywords (≥
    ``GIVEN_BACK_SHARE``) are the question's, and the few it adds (≤ ``VALUE_MAX_ADDED``, ``GENERIC`` and
    ``PLACEHOLDERS`` aside) hold no name (a capitalised word; an answer's first word only when it is not a verb
    form in -ing or -ed), no number and no yes/no word: "Regarding where the base is, the document has the details.",
    "This question is about who wrote it.", "The passage does not say who wrote it." Whatever words
    wrap it, such an answer names nothing the question did not. Number, time and yes/no questions are left to the
    asked-type rule; a question offering options ("A or B") is answered in its own words; a title-shaped answer
    is the heading rule's; only questions whose first wh-word asks for a named thing are read (``asks_named``)."""
    if (asked_type(question) in ("number", "time", "polar") or not asks_named(question)
            or re.search(r"\bor\b", question, re.I) or title_shaped(answer) or picks_option(question, answer)
            or _another_sentence_answers(question, answer)):
        return None
    kw = stems(plain_digits(answer)) - GENERIC
    if not kw or share_from(kw, question_stems(question)) < GIVEN_BACK_SHARE:
        return None
    added = added_words(question, answer)
    if not added or adds_a_value(added) or calls_it(question, answer):
        return None
    words = ", ".join(dict.fromkeys(t.lower().strip(".,") for _, t in added))
    return f"its words are the question's but for {words}: no name or number"


def one_wh_question(answer: str) -> bool:
    """The answer is one wh-question ("Who sings at the beginning of Nice for the first time?"): it asks, whatever
    part of the question its words fill or option they pick."""
    return answer.rstrip().endswith("?") and len(sentences(answer)) == 1 and bool(ASKING.match(answer))


def asks_back(question: str, answer: str) -> str | None:
    """Why an answer that is itself a question ("What genre of music do Catherine and X have in common?") gives
    the question back, or None: one sentence, opening with a wh-word or an auxiliary and ending in "?", whose words
    added to the question's hold no value (``value_in``: no name, number or yes/no word). "Do you mean the 1998
    film?" names one; "Paris. That is the answer to: what is ...?" is no question."""
    title = answer.split(":", 1)[0]  # a title, then the question: "X vs. Y: Are They in the Same Country?"
    asking = answer.rsplit(":", 1)[-1] if title_shaped(title) and not has_verb(title, participles=False) else answer
    if one_wh_question(asking):  # a wh-question asks, whatever it names ("Who took New York from the Dutch?")
        return "a question itself: it asks instead of answering"
    if not asking.rstrip().endswith("?") or len(sentences(asking)) != 1:
        return None
    if not AUX_START.search(asking) or value_in(added := added_words(question, answer)):
        return None
    return f"a question itself, adding {', '.join(t for _, t in added) or 'nothing'}: no name or number"


#: an answer that covers at least this share of the question's keywords can embed the question (``embeds``)
EMBED_COVER = 0.8


def embeds(question: str, answer: str) -> str | None:
    """Why the answer embeds the question instead of answering it, or None: the answer has the question's wh-word
    (what, which, who, where, when, why, how) other than as its first word, with one of the question's keywords
    within the next three words (an indirect question), or has at least ``EMBED_COVER`` of the question's words in a
    row inside more words (a question without a wh-word wrapped: "That depends on I want to change my domain."); it
    covers at least ``EMBED_COVER`` of the question's
    keywords; and the words it adds, at most ``VALUE_MAX_ADDED`` keywords, hold no name, number or yes/no word
    (``value_in``). "The answer relates to
    where the base of the agency is.", "That depends on how many people live there." talk about the question;
    "Cheltenham is where the base of the agency is." names a place."""
    if not keeps_asking(question, answer) and (
            picks_option(question, answer) or answers_polar(question, answer) or quotes_a_name(question, answer)):
        return None
    q_words = normalize(question).split()
    # the asked part filled ("... regarded as one of four directors." to "... regarded as one of four what?"): the
    # answer keeps fewer wh-words than the question (or the question, not opening with a wh-word, leaves the asked
    # part after a final preposition)
    if fills_slot(question, answer) is not None and (
            q_words[-1:] and q_words[-1] in _DANGLING and not ASKING.match(question)
            or sum(w in WH_WORDS for w in normalize(answer).split()) < sum(w in WH_WORDS for w in q_words)):
        return None
    wh = next((w for w in q_words if w in WH_WORDS), None)
    asked = question_stems(question)
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
    if share_from(question_stems(question, forms=False), question_stems(answer, forms=False)) < EMBED_COVER:
        return None
    added = added_words(question, outside)
    if adds_a_value(added) or calls_it(question, answer):
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
    words = TOKEN.findall(part)
    if not 0 < len(words) <= ASIDE_MAX_WORDS or any(w[:1].isupper() for w in words[1:]) \
            or has_number(normalize(part)) or POLARITY.search(normalize(part)):
        return False
    if part.rstrip().endswith((":", ",")) or not stems(part) - GENERIC:  # a lead-in, or no keyword at all
        return True
    return not grounded(stems(part), context, question) and (
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


def beside_echo(question: str, answer: str, context: str = "") -> str | None:
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
    if not asks or not TOKEN.search(before + " " + left):
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
    asked = question_stems(question)
    return any((kw := stems(part) - GENERIC) and added_words(question, part) and share_from(kw, asked) < 0.5
               for part in parts)


def added_text(question: str, answer: str) -> str:
    return " ".join(t for _, t in added_words(question, answer)) or "."


def embeds_by_meaning(question: str, answer: str, embed: Embed) -> str | None:
    """``embeds``, unless the words the answer adds mean something of the question's subject: cos(e(Q), e(added))
    ≥ ``ADDED_MEANING`` ("... is called a diastema." completes the question; "That depends on ..." wraps it)."""
    why = embeds(question, answer)
    if why is None:
        return None
    q, a = embed([question, added_text(question, answer)])
    cosine = float(q @ a)
    return None if cosine >= ADDED_MEANING else f"{why}; their meaning is not the question's (cosine {cosine:.2f})"


CUT_MIN_WORDS = 10


def _uncut(question: str, answer: str) -> str:
    """The answer with a last word cut off in the middle written whole, when it is the start of one of the question's
    words ("... in July 1 and 12, 19" of "1983", "Prince Rain" of "Rainier"): a sentence of ``CUT_MIN_WORDS`` words
    or more that ends without punctuation, as a reply cut at the model's token limit does (a short reply ending in a
    name is no cut one: "an Italo-Norman named Raoul")."""
    text = answer.rstrip()
    tokens = TOKEN.findall(text)
    if len(tokens) < CUT_MIN_WORDS or not text[-1:].isalnum():
        return answer
    last = tokens[-1]
    whole = next((w for w in TOKEN.findall(question) if len(w) > len(last) >= 2
                  and w.lower().startswith(last.lower()) and not text.lower().endswith(w.lower())), None)
    return text[:len(text) - len(last)] + whole if whole else answer


#: words inside a run of capitalised words that its initials skip ("United States of America" is "USA")
_INITIALS_SKIP = frozenset("of and the for".split())


_CAPITALISED_RUN = re.compile(r"\b[A-Z][\w'’-]*(?:\s+(?:(?:of|and|the|for)\s+)?[A-Z][\w'’-]*)+")


def as_asked(question: str, answer: str) -> str:
    """The answer as the question writes it: cut last word written whole (``_uncut``), and a run of capitalised
    words whose initials spell one of the question's words (not a wh-word) written as that word ("United States"
    for "us", "National Basketball Association" for "NBA"): "Wild horses are found in the United States." gives
    "where are wild horses found in the us" back."""
    answer = _uncut(question, answer)
    # a short word of the question that may be initials: written in capitals, no function word, or one after "the"
    # ("the us"; not "show me", "what is")
    asked = {m.group(2).lower(): m.group(2) for m in re.finditer(r"(\bthe\s+)?\b([A-Za-z]{2,5})\b", question, re.I)
             if m.group(2).lower() not in WH_WORDS
             and (m.group(2).isupper() or m.group(2).lower() not in STOPWORDS or m.group(1))}

    def spelt(run: re.Match) -> str:  # (a run the question writes too stays: "Portal Server" of "... PS ...")
        initials = "".join(w[0] for w in run.group().split() if w.lower() not in _INITIALS_SKIP).lower()
        return run.group() if run.group().lower() in question.lower() else asked.get(initials, run.group())

    return _CAPITALISED_RUN.sub(spelt, answer) if asked else answer


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
def fills_slot(question: str, answer: str) -> str | None:
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
    if title_shaped(answer):
        return None
    bare = re.sub(r"^\W*(?:q|question)\s*:", "", question, flags=re.I)
    q, a = TOKEN.findall(bare), TOKEN.findall(answer)
    low_q, low_a = [w.lower().strip(".") for w in q], [w.lower().strip(".") for w in a]
    if low_q and low_q[-1] in _DANGLING:  # the asked part comes after the question's last word
        tail = q[-2:] if len(q) > 1 and low_q[-1] == "as" else q[-1:]  # "such as"
        after = re.search(r"(?<![\w])" + r"\W+".join(map(re.escape, tail)) + r"\s+([^,;:.!?()]+)", answer, re.I)
        return _filler_value(question, after.group(1).split(), dangling=True) if after else None
    wh_at = [i for i, w in enumerate(low_q) if w in WH_WORDS]
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
            replaced = {unpossessed(w) for w in low_q[i1:i2]} | set(low_q[wh + 1: wh + 1 + ASKED_PHRASE])
            filled = [w for w in a[j1:j2] if unpossessed(w.lower().strip(".")) not in replaced]
            return _filler_value(question, filled, end_slot=end_slot)
    return None


def _filler_value(question: str, words: list[str], *, dangling: bool = False,
                  end_slot: bool = False) -> str | None:
    """``words`` joined when they hold a value (``fills_slot``), else None."""
    if not words:
        return None
    asked = question_stems(question)
    own = [w for w in words if is_own(w, asked) and w.lower() not in _INDEFINITE_WORDS]
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


def affirms_question(question: str, answer: str) -> bool:
    """``question_forms.affirms_polar`` of an answer that lacks only its final period ("Keenen Ivory Wayans and
    Fruit Chan are both filmmakers" to "Are ... both filmmakers?"); not of a title-shaped answer or a question."""
    text = answer.strip()
    if not text or text.endswith("?") or title_shaped(text):
        return False
    return affirms_polar(question, text if text[-1] in ".!" else f"{text}.")


#: a wh-question that may take a yes or a no as its value: it asks for an answer, an output, a word ("What answer
#: denotes that an algorithm has accepted an input?") or whether
_YES_NO_ASKED = re.compile(r"\b(whether|yes|no|true or false|answers?|outputs?|responses?|repl(y|ies)|results?|"
                           r"words?|values?|says?|said|returns?)\b", re.I)


def declines_after_restating(question: str, answer: str) -> str | None:
    """Why the answer is a refusal written after the question given back, or None: it has a refusal phrase
    (``nonanswer.refusal_start``: "not known", "cannot be determined") and every keyword before it is the question's
    ("The county music artist who first gained national attention as a winner on ... is not known to me."). The
    screen takes a refusal phrase late in a long answer as said in passing; after the question's own words it is the
    whole reply."""
    start = refusal_start(answer)
    if start is None or start == 0:
        return None
    before = " ".join(normalize(answer).split()[:start])
    if not stems(before) - GENERIC - PLACEHOLDERS or added_words(question, before):
        return None
    return "the question given back, then declined"


def keeps_asking(question: str, answer: str) -> bool:
    """The answer holds the question's asking phrase, its asking wh-word and the word after it, or a yes/no
    question's first three words, past its first word ("... during which late period." to "... during which late
    period?"; "It concerns is the last book written."): the asked part is still open. The
    asking wh-word is the question's first word, or its last one within ``END_SLOT`` words of its end; a wh-word in
    the middle opens a relative clause ("a sport in which teams run ..."), which an answer may well keep."""
    q, a = normalize(question).split(), normalize(answer).split()
    at = [i for i, w in enumerate(q[:-1]) if w in WH_WORDS and (i == 0 or len(q) - i <= END_SLOT)]
    phrases = {(q[i], q[i + 1]) for i in at}
    if any((w, a[i + 1]) in phrases for i, w in enumerate(a[:-1]) if i > 0):
        return True
    # a yes/no question's opening in its asking order ("It concerns is the last book written."): still asked
    return len(q) >= 3 and bool(AUX_START.match(question.strip())) and any(
        a[i:i + 3] == q[:3] for i in range(1, len(a) - 2))


def bare_polar(question: str, answer: str) -> str | None:
    """The question's wh-word when the answer is only a yes or a no ("No.", "Yes, it is.") and the question asks
    with a wh-word ("... written by which American writer ...?"), not with an auxiliary, and not for an answer or a
    word that may be a yes (``_YES_NO_ASKED``): else None."""
    if AUX_START.search(question) or _YES_NO_ASKED.search(question):
        return None
    if (len(normalize(answer).split()) > POLAR_MIN_WORDS or not POLARITY.search(normalize(answer))
            or not stems(answer) - FILLER <= POLAR_STEMS):
        return None
    return next((w for w in normalize(question).split() if w in WH_WORDS), None)
