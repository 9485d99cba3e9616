"""Question forms: the options a question offers ("… Arthur's Magazine or First for Women?"), yes/no questions,
and what an answer picks or affirms. The rules are described in ``judging.correctness.nonanswer``'s docstring
(``question_options``, ``picks_option``, ``affirms_polar``), whose screen, like answer relevance, faithfulness's
claims and the comparison judges, reads them.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from functools import lru_cache

from evaluations.judging.basics.lexicon import AUX_START, FILLER, VERBS, alike, similar, stem, stems
from evaluations.judging.basics.text import STOPWORDS, normalize, unhyphened

__all__ = ["OPTION_MAX_WORDS", "OPTION_RUN", "COMPARATIVES", "question_options", "is_polar", "affirms_polar",
           "picks_option", "picked_option", "asks"]

OPTION_MAX_WORDS = 5  # a comma-list item of a question, or a part of an "X or Y" answer: at most this many words
OPTION_RUN = 3  # a lowercase option of a question: at most this many content words ("static IP address")

_OPTION_BOUNDARY = re.compile(r"[?!;:()\[\]\"]|\.(?=\s+[a-z]|\s*$)")
_OPTION_WORD = re.compile(r"[\w'’.&–-]+")  # "2009–10 La Liga": an en dash joins like a hyphen
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
    # a joiner at the far edge is not the option's ("of" of "seat of Ely"), unless capitalised inside a name ("Del
    # Lord"); the question's capitalised first word is not ("Is Advanced Micro Devices or ...")
    while run and ((run[-1].lower() in _OPTION_JOINERS and not (run[-1][:1].isupper() and len(run) > 1
                                                                   and run[-1].lower() not in ("the", "a", "an")))
                   or (len(run) > 1 and _QUESTION_WORD.fullmatch(run[-1]))):
        run.pop()
    return run or _plain(words)[:size] or [w for w in words if stems(w)][:1]


def _unarticled(words: list[str]) -> list[str]:
    return words[1:] if len(words) > 1 and words[0].lower() in ("the", "a", "an") else words


def _plain(words: list[str]) -> list[str]:
    """The content words next to the "or" up to a function word or a verb ("green button" of "green button in the
    corner"), at most ``OPTION_RUN``."""
    return list(itertools.takewhile(lambda w: w.lower() not in STOPWORDS and w.lower() not in VERBS,
                                    words))[:OPTION_RUN]


def _listed(pieces: list[str]) -> list[str]:
    """The items of a comma list before the "or"'s left option ("Poland, Austria or Switzerland"), nearest last:
    pieces of at most ``OPTION_MAX_WORDS`` words that are no clause of the question ("Which is taller", a quote, a
    piece with a verb)."""
    items: list[str] = []
    for piece in reversed(pieces):
        words = _OPTION_WORD.findall(piece)
        if (not words or len(words) > OPTION_MAX_WORDS or _QUESTION_WORD.search(piece) or '"' in piece
                or any(w.lower() in VERBS for w in words)):
            break
        items.append(" ".join(words))
    return items[::-1]


_WHAT = re.compile(r"\bwhat\b", re.I)
_REQUEST = re.compile(r"^\W*(?:name|list|tell|give|find|identify|describe|explain|show|compare)\b", re.I)


def asks(text: str) -> bool:
    """The text asks something: it holds a "?" or the word "what", or opens with a wh-word, an auxiliary ("Is",
    "Did") or a request ("Name", "List", "Explain"). A claim to check ("0-dimensional biomaterials show inductive
    properties.") or a keyword query does not."""
    return "?" in text or bool(_QUESTION_WORD.search(text) or _REQUEST.search(text) or _WHAT.search(text))


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
            # or the options right after the asking words: "Which Supreme court ruling United States v. Wong Kim Ark
            # or Wickard v. Filburn was made first?" (a comparison, at most ``OPTION_RUN`` words between)
            own_piece = own_piece or (_COMPARES.search(question) is not None and len(before) > len(near)
                                      and before[-1].lower() in ("which", "who", "what")
                                      and len(before) - len(near) - 1 <= OPTION_RUN
                                      and not any(w.lower() in VERBS for w in before[len(near):]))
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
    if not out and (_WHICH_ONE.search(question) or _WHO_IS_MORE.search(question) or _BETWEEN.search(question)):
        pairs = [pair for segment in _OPTION_BOUNDARY.split(question) for pair in _and_pairs(segment)]
        if len(pairs) == 1:  # "Between Kim Clijsters and Mary Pierce, who is older?"
            out.append(pairs[0])
    return tuple(out)


_QUOTES = re.compile(r'["“”]')
#: the question asks to choose between things it names: "which one", "which of the two", "who is older"
_WHICH_ONE = re.compile(r"\bwhich\s+(?:one|of\s+(?:the|these|those|them|both))\b", re.I)
_WHO_IS_MORE = re.compile(r"\b(?:who|which)\s+(?:[a-z-]+\s+)?(?:is|was|are|were)\s+(?:[\w-]+\s+){0,2}?"
                          + _COMPARES.pattern[2:], re.I)  # "which genus is more widely spread"
#: a question that opens by naming the things to choose between ("Between Leitneria and Zinnia, which ...?")
_BETWEEN = re.compile(r"^\W*between\b[^,?]+\band\b[^,?]+,\s*(?:who|which|what)\b", re.I)


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
        if near and near[-1].lower() == "between":  # "Between Kim Clijsters and ..."
            near = near[:-1]
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


_DO = frozenset({"do", "does", "did"})


def affirms_polar(question: str, answer: str) -> bool:
    """A statement answering a yes/no question "yes" in the question's own words ("Paris is the capital of France."
    to "Is Paris the capital of France?", "DataPower supports SHA-2." to "Does DataPower support SHA-2?"): no "?",
    a final period, and a sentence with the question's auxiliary in declarative order (after the sentence's first
    word), or for do/does/did that auxiliary or an inflected form (-s, -ed; has, had of have) of one of the
    question's words ("X and Y had the same nationality." to "Did X and Y have the same nationality?"), or for "do"
    the question's own words (a plural subject: "X and Y belong to one family." to "Do X and Y belong to one
    family?"). The question with any other auxiliary dropped ("Paris the capital of France.", ``controls.restate``)
    is no statement."""
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
                           or any(w not in asked and w.endswith(("s", "ed")) and stem(w) in stemmed for w in words)
                           or ("have" in asked and any(w in ("has", "had") for w in words))
                           # "Do X and Y belong to ...?": a plural subject keeps the plain verb ("X and Y belong ...")
                           or (aux == "do" and len(words) >= 3 and all(w in asked for w in words))):
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
    """(the option group, index of the option) the answer picks (``picks_option``), else None. A heading's value
    after its colon decides ("East Asian Chaenomeles: Wulfenia")."""
    head, colon, value = answer.rpartition(":")
    if colon and head.strip() and stems(value) and (picked := picked_option(question, value)) is not None:
        return picked
    have = stems(answer) if len(answer.split()) < 2 else stems(unhyphened(answer))  # "Coca-Cola is public."
    asked = stems(question) | stems(unhyphened(question))  # "Calloway-Hines" read either way
    if re.search(r"\bor\b", answer, re.I) or any(not alike(w, asked) for w in have - FILLER):  # "Keefer"
        return None
    words = [w for w in re.findall(r"[^\W\d_][\w'’-]*", answer) if w.lower() not in STOPWORDS]
    titled = (not answer.strip().endswith((".", "!", "?")) and bool(words)
              and sum(w[0].isupper() for w in words) >= 0.6 * len(words))
    for group in question_options(question):
        if (whole := _whole_option(group, answer)) is not None:
            return group, whole
        if (subject := _subject_option(group, answer)) is not None:
            return group, subject
        rest = question
        for option in group:
            rest = re.sub(rf"(?<!\w){re.escape(option)}(?!\w)", " ", rest, count=1)
        kws = [stems(o) - stems(rest) for o in group]
        own = [k - frozenset().union(*(other for j, other in enumerate(kws) if j != i)) for i, k in enumerate(kws)]
        hits = [i for i, k in enumerate(own) if any(similar(w, have) for w in k)]
        if len(hits) == 1 and not (titled and len(have - stems(group[hits[0]])) >= 2):
            return group, hits[0]
    return None


#: what may follow an option that opens an answer and still leave it the only subject: not another option joined to it
_JOINED = re.compile(r"^\s*(?:,|&|and\b|nor\b|as well as\b|together with\b|along with\b|with\b|or\b|vs?\b\.?|versus\b)",
                     re.I)


def _subject_option(group: Sequence[str], answer: str) -> int | None:
    """The option a one-sentence answer that names two or more options opens with, as the subject of its own
    predicate ("Mary Ramsey is younger than Lee Ranaldo." to "Who is younger, Mary Ramsey or Lee Ranaldo?"; "The
    London Connection was released first."), else None: a statement is about its subject, so it decides for that
    option whatever the others' place in it. Not an option joined to another ("Mary Ramsey and Lee Ranaldo are
    ..."), and not a sentence that ends in a question mark."""
    text = answer.strip()
    if text.endswith("?") or re.search(r"[.!?](?:\s|$)", text.rstrip(".!")):
        return None
    opened = _ARTICLE.sub("", text)
    for i, option in enumerate(group):
        bare = _ARTICLE.sub("", option.strip())
        if bare and opened.lower().startswith(bare.lower()):
            rest = opened[len(bare):]
            if (not rest[:1].isalnum() and rest.strip(" .") and not _JOINED.match(rest)
                    and any(_names(o, normalize(rest)) for o in group)):
                return i
    return None


_ARTICLE = re.compile(r"^(?:the|a|an)\s+", re.I)


def _names(option: str, text: str) -> bool:
    """Whether the normalised ``text`` has ``option`` whole (its normalised words in order, not inside a word)."""
    return bool(re.search(rf"(?<!\w){re.escape(normalize(option))}(?!\w)", text))


def _whole_option(group: Sequence[str], answer: str) -> int | None:
    """The one option of ``group`` the answer has whole (its words in order, any case) with at most two keywords
    beyond it ("Portsmouth Cathedral" to "Which Cathedral is the seat of the Bishop of Portsmouth, Portsmouth
    Cathedral or Ely Cathedral?", whose keywords are all the rest of the question's too), else None."""
    text = normalize(answer)
    whole = [i for i, o in enumerate(group) if stems(o) and _names(o, text)]
    if len(whole) != 1 or len(stems(answer) - stems(group[whole[0]]) - FILLER) > 2:
        return None
    return whole[0]
