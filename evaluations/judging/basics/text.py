"""Text normalisation, tokenisation and keywords for the answer judges.

``normalize`` follows the SQuAD v1.1 evaluation script (lowercase, delete punctuation, drop the
articles a/an/the, collapse whitespace) with one addition: accents are folded (``Röntgen`` ->
``rontgen``), so gold answers and generated answers written with or without diacritics match.
Punctuation is any Unicode punctuation character plus ASCII ``string.punctuation``; like SQuAD it
is deleted, not replaced by a space (``U.S.`` -> ``us``, ``1,000`` -> ``1000``).
"""

from __future__ import annotations

import re
import string
import unicodedata
from functools import lru_cache

__all__ = ["STOPWORDS", "normalize", "tokens", "keywords", "split_alternatives", "looks_english", "unhyphened"]

#: English stopwords: function words that carry no answer content. The list is the classic
#: SMART/NLTK-style core (articles, pronouns, auxiliaries, prepositions, conjunctions, question
#: words, common adverbs/determiners). Numbers and content words are never stopwords, so
#: "1901" or "Röntgen" always count as keywords.
STOPWORDS: frozenset[str] = frozenset(
    """
    a about above after again against all am an and any are aren as at be because been before being
    below between both but by can cannot could couldn did didn do does doesn doing don down during each
    few for from further had hadn has hasn have haven having he her here hers herself him himself his how
    i if in into is isn it its itself just let me more most mustn my myself no nor not now of off on once
    only or other ought our ours ourselves out over own same shan she should shouldn so some such than
    that the their theirs them themselves then there these they this those through to too under until up
    very was wasn we were weren what when where which while who whom why will with won would wouldn you
    your yours yourself yourselves also s t d ll m re ve y o
    """.split()
)

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT_ASCII = frozenset(string.punctuation)


def _is_punct(char: str) -> bool:
    return char in _PUNCT_ASCII or unicodedata.category(char).startswith("P")


def _fold_accents(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c))


@lru_cache(maxsize=65536)
def normalize(text: str) -> str:
    """SQuAD normalisation: lower, fold accents, delete punctuation, drop articles, collapse spaces."""
    text = _fold_accents(text.lower())
    text = "".join(c for c in text if not _is_punct(c))
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


_WORD_HYPHEN = re.compile(r"(?<![\w./-])\w+(?:-[^\W\d_]+)+(?![\w/-]|\.\w)")


def unhyphened(text: str) -> str:
    """Hyphenated words split ("team-based" -> "team based", "400-acre" -> "400 acre"), so that they are the words
    of a text that writes them apart (``normalize`` would join them); not numbers ("2009-10") nor codes
    ("E-REG-002-025", "zos-wp.ac.impl", "/opt-ibm-log/")."""
    return _WORD_HYPHEN.sub(lambda m: m.group().replace("-", " "), text)


def tokens(text: str) -> list[str]:
    """Whitespace tokens of ``normalize(text)`` (articles already removed)."""
    return normalize(text).split()


def keywords(text: str) -> set[str]:
    """Lowercased words of ``text`` minus punctuation and ``STOPWORDS``."""
    return {t for t in tokens(text) if t not in STOPWORDS}


def split_alternatives(golden: str, sep: str = "/") -> list[str]:
    """Split an EVOUNA-style gold string ("Scorpio/Skorpio") into its non-empty, de-duplicated alternatives."""
    seen: dict[str, None] = {}
    for part in golden.split(sep):
        part = part.strip()
        if part:
            seen.setdefault(part, None)
    return list(seen)


_WORD = re.compile(r"[^\W\d_]+")
#: function words of French, German, Spanish, Italian, Portuguese and Dutch that are no English words
FOREIGN_FUNCTION_WORDS: frozenset[str] = frozenset(
    """
    le la les des du un une et est sont au aux pour par avec dans sur qui ne pas ce cette il elle ont été leur
    der das und ist sind ein eine einer einem eines mit von zu dem nicht auf für im wurde ihren sich auch
    el los las es con para del se una por lo su al
    gli della di che sono è
    os um uma não em da dos das
    het een zijn van voor niet ook
    """.split()
)


def looks_english(text: str) -> bool:
    """Whether ``text`` may be English, as the judges' word lists and fitted parameters assume: False when most of
    its letters are not Latin ("巴黎是法国的首都"), or when it has at least two function words of another Latin-script
    language (``FOREIGN_FUNCTION_WORDS``: "Le roi a été couronné en 1066 à Londres par le pape") and more of them
    than English ones (``STOPWORDS``). A name with a particle ("Charles de Gaulle") or a bare value passes."""
    letters = [c for c in text if c.isalpha()]
    if not letters:
        return True
    latin = sum(1 for c in letters if c.isascii() or "LATIN" in unicodedata.name(c, ""))
    if latin < 0.5 * len(letters):
        return False
    words = [w.lower() for w in _WORD.findall(text)]
    foreign = sum(w in FOREIGN_FUNCTION_WORDS for w in words)
    return foreign < 2 or foreign <= sum(w in STOPWORDS for w in words)
