"""``answer_relevance``: does the answer address the question, whether or not it is right? No gold answer needed.

Reference-free: it reads the question, the answer and (when there is one) the context the system was given. Its
rules 1-2 are lexical; rule 3 adds a small sentence-embedding model (all-MiniLM-L6-v2, in process) when there is a
context. It is deliberately *not* RAGAS's "questions generated back from the answer" similarity, which an echo of
the question passes.

The rules, checked in this order (the first that applies rejects the answer; ``KINDS`` is the registry):

0. the question given back beside other words (``beside_echo``): an answer holding ≥ ``EMBED_COVER`` of the
   question's words in a row that still ask (a "?" ends them, or they are all of a question without one, standing
   as a sentence) is judged by what it says beside them, asides dropped (``_aside``: a lead-in before a colon or a
   comma, a part with no keyword, a short part none of whose words the context or the question has, or without a
   context one that speaks of the asking, "I will need to check."). Nothing left, or a non-answer left, is an
   ``echo`` ("Good question! When was Montreal captured?"); "When was Montreal captured? In 1760." is "In 1760.".

1. non-answers. From the screen without gold (``nonanswer.screen(question, (), answer)``, ``SCREEN_KINDS``):
   ``empty``, ``refusal``, ``echo``, ``options`` (a hedge "A or B", unless the question asks for several things:
   "two", "three", "both", "list"), and the screen's gold-free ``heading`` (4-10 words shaped like a title) that
   shares a word with the question, unless the question asks for a title, a name (``TITLE_ASKED``: "called",
   "more commonly known", a work in its asking phrase, "which 2004 novel", not one it only mentions, "who sings the
   song ...") or an entity ("which X" / "what X", ``ENTITY_ASKED``), whose name may look like a title, or the
   heading names something of its own (two capitalised words of its own that the context does not write in lower
   case, ``own_name``: "Bedhead and Hinder: Rock Bands in the United States").
   On a question marked unanswerable a refusal is accepted (it is the answer).
   Then the question's own words given back (``restates``; the screen's restatement and heading rules read the
   gold, so they are replaced here): with kw = ``lexicon.stems`` and novel = kw(A) − ``GENERIC`` −
   ``PLACEHOLDERS`` (words standing for the asked thing without naming it: "somebody", "an organisation", the
   attribute nouns ``ATTRIBUTE_NOUNS`` "type", "occupation", "nationality" and the fact nouns ``FACT_NOUNS``
   "birthplace", "location", "tenure") less the stems similar to one of kw(Q) (Q also split at punctuation and
   without possessives), the answer restates the question when novel = ∅ and it reuses ≥ min(``RESTATE_WORDS``,
   ``RESTATE_COVER``·|kw(Q)|) of the question's keywords (≥ 1; one is enough for a title, and for a phrase with no
   verb holding a placeholder and one of the question's names: "Marshall Neilan's nationality"), or when its only
   keywords are ``lexicon.VAGUE`` pronouns ("Somebody.", "Someone did."): ``heading`` when it is shaped like a
   title (no final period, every word of more than 3 letters capitalised), else ``restatement``. An answer that is
   one question adding no value is a restatement too (``asks_back``: "What genre of music do Catherine and X have
   in common?"), and so is one wh-question, alone or after a title's colon, whatever it names ("Who took New York
   from the Dutch?": it asks instead of answering). An answer that picks one of the options the question offers
   (``question_forms.picks_option``: "concrete" to "abstract or concrete?", "Arthur's Magazine was started first." to
   "Which magazine was started first, Arthur's Magazine or First for Women?") is neither, and nor is the question
   given back with its asked part filled by a name or a number (``fills_slot``: "... a personal favorite of Robert
   Smigel." to "... a personal favorite of what American television executive ...?", even with a name the question
   has: a wrong answer of the asked kind is still an answer; the question's own words re-inflected, "Neilan's" for
   "Neilan", fill nothing). Where the asked part comes last (a final "... regarding what?", or a question ending in a
   preposition, "... published for?", "... such as?") a common noun of the answer's own fills it too ("... for
   adults."), but not some one of a kind or a possessive ("... with another presenter.", "... for his work."), nor,
   after a final preposition, the question's own name. A statement of a yes/no question's proposition, with or
   without its final period, answers it (``affirms_question``; "X and Y belong to one family." to "Do X and Y belong
   to one family?"). Nor is a title in quotation marks that the question does not hold, to a question asking for a
   title, a name or an entity (``quotes_a_name``). A hyphenated compound of the question's words is those words
   ("team-based" of "team based"), a word one letter from a question's word of six or more is that word misspelt
   (``lexicon.alike``: "immigrant" of "immagrant"), a long reply cut off in the middle of a question's word is that
   word (``_uncut``: "... Prince Rain" of "Rainier"), a run of capitalised words whose initials spell a word of the
   question is that word (``as_asked``: "United States" of "us"), and a word that only describes the asked
   phrase's noun after an indefinite article names nothing ("a French aviator" to "... starred which English
   aviator?", ``_only_a_kind``). The question given back and then declined ("... is not known to me.") is a ``refusal``
   (``declines_after_restating``), and an answer that keeps the question's asking phrase ("... during which late
   period.", ``keeps_asking``) or is one wh-question (``one_wh_question``) answers nothing, whatever option it
   names or part it fills. A word of the answer's own after a
   naming verb is a value, a common noun too ("... is called melanin.", ``calls_it``). Nor,
   with a context, an answer holding a name made of
   the question's words that the context writes and the question does not (``context_name``: "Windsor Airport" to
   "... serves Windsor, Ontario and which airport?"). A "which" question for an attribute asks for a common noun,
   not a name ("actors" to "have which occupation in common?"), so ``gives_back`` leaves it.
2. ``wrong_type``: a bare yes or no ("No.", "Yes, it is.") to a question that asks with a wh-word and not for an
   answer, an output or a word (``bare_polar``: "no" to "... written by which American writer?"); or the question
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
   (``scripts/fit_answer_relevance.py``); CLAPNQ, WixQA and RepliQA are held out (``docs/measured.md``).
   Grounding is over the whole context (grounding near the question only measured worse: SQuAD's other golds come
   from the same article). A context with no sentence about the question (about < ``MIN_ABOUT``: retrieval
   failed) cannot say what is on topic, so an answer from the model's own knowledge is not rejected then; but a
   sentence (``claims.has_verb``) made only of that context's and the question's words, whose meaning is far from
   the question's (asked < ``FAR_COS``), is about what the context is about: ``off_topic`` ("The Sabres lost the
   series in six games." to "Who designed the Sydney Opera House?" over a context about hockey).
   With a context about the question, a title-shaped answer (``title_shaped``, no verb) whose keywords beyond the
   question's occur nowhere in the context is a ``heading`` (``ungrounded_title``: "Charles Runnington's
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
   none of the question's and says no yes or no (``another_subject``: "Nicholls is a suburb of Canberra." to "Are
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
are in ``docs/measured.md``.
"""

from __future__ import annotations

from evaluations.judging.grounded.answer_relevance.judge import (KINDS, Relevance, answer_form, answer_relevance,
                                                                 answer_relevance_batch, judge_answer_relevance)
from evaluations.judging.grounded.answer_relevance.topic import (FAR_COS, FAR_MIN_WORDS, FAR_SHARE, MIN_ABOUT,
                                                                 NEAR_TOP, TOPIC_BIAS, TOPIC_THRESHOLD,
                                                                 TOPIC_WEIGHTS, Topic, topic)
from evaluations.judging.grounded.answer_relevance.words import (ASKED, GENERIC, POLAR_MIN_WORDS, asked_type,
                                                                 sentences)

__all__ = ["KINDS", "ASKED", "GENERIC", "FAR_MIN_WORDS", "FAR_COS", "FAR_SHARE", "NEAR_TOP", "MIN_ABOUT",
           "TOPIC_WEIGHTS", "TOPIC_BIAS", "TOPIC_THRESHOLD", "POLAR_MIN_WORDS", "Relevance", "Topic", "topic",
           "sentences", "answer_relevance_batch", "judge_answer_relevance", "answer_relevance", "answer_form",
           "asked_type"]
