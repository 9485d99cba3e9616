"""The naming screen of ``answer_relevance``: does the embedded judge model's reading of the reply hold an answer?

The wording rules of ``answer_relevance`` reject the non-answers they were written from; a refusal, a restatement or a
vague sentence in another writer's words passes them. After the rules accept an answer to an answerable question (one of
``MIN_WORDS`` words or more: a bare value or label is not read), the embedded judge model (Qwen2.5-Coder-1.5B-Instruct)
is asked whether the reply gives what the question asks for (``SYSTEM``: the information asked, even if wrong, against
a restatement, a description of the question, talk around the subject, another fact, a refusal, a title or another
subject; ten worked examples, ``SHOTS``, written for the screen from no labelled split). Nothing is generated: one
forward pass gives the readings at the position where the model would say yes or no: P(yes) (``YesNoScorer.yes``)
and h, what the model has read of the question and the reply just before it decides: the outputs of two of its 28
layers there (16 and 20, 1,536 numbers each, read as llama.cpp computes them: ``models.llamacpp.LayerTap``; the probe
file names the layers). A logistic probe (``judges/answer_relevance_probe.json``, fitted by
``scripts/fit_answer_probe.py`` on labelled answers of ``datasets/relevance``: other writers' splits and
Qwen-written ones, the held-out splits left out) reads (h, logit P(yes)) and gives

    P(answers) = σ(intercept + Σ coef_j · (x_j − mean_j) / scale_j);

the answer is rejected (kind ``no_answer``) when P(answers) < the probe's threshold (set so that, read split by split
with the probe fitted on the other splits, 98% of the labelled relevant answers the rules accept pass). A reply of
more than ``LONG_SENTENCES`` sentences is read by a second probe of the same form (the file's ``long``), fitted with
long replies too (4-8 sentences, ``datasets/relevance/answers_long*``), its threshold keeping 96% of their relevant
answers: read whole by the first, talk around the subject reads as more of an answer the longer it is. No verdict
rests on a list of phrasings: the probe reads what the model made of the pair. (The model's own yes is not enough:
it says yes to many restatements; its inner state still tells them apart, and a linear read of it carries to
wordings it was not fitted on. Layers in the middle of the model tell vague talk and other facts from answers better
than its last hidden state, which is shaped for the next token: ``benchmarks/NOTES.md``, thirty-first session.)

Many answers are read side by side in one batched pass (``YesNoScorer.next_logits``); each P(answers) is kept in the
verdict store (``VerdictCache``, P(yes) beside it) under (``naming``, the scorer's id, the probe's id, the prompt), so
a re-run makes no model call. The question is cut to ``QUESTION_CHARS`` characters, the reply to ``REPLY_CHARS`` (its
answer is near its start) and the prompt to the model's window. The screen always reads the embedded judge model,
whichever model ``judge.model`` names for the other judges (as the rules always read the embedded MiniLM): the probe
was fitted on its hidden states.

What it takes (``benchmarks/NOTES.md``, twenty-fifth session): refusals, the question given back, off-topic
sentences, most restatements and headings in wordings the rules were not written from, about half of the vague
sentences and more of the other facts of a passage; it costs a few of the relevant answers the rules accept. (Until
the twenty-fifth session the prompt asked the model to copy the reply's answer or write NONE; the probe of that
reading rejected fewer: ``benchmarks/answer_extraction.py`` keeps it.)
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from evaluations.judging.basics.fitted import LogisticParams, llm_logit

__all__ = ["SYSTEM", "SHOTS", "ASK", "MIN_WORDS", "OVERRULES", "OVERRULE_KEYWORDS", "PROBE_FILE", "QUESTION_CHARS",
           "REPLY_CHARS", "LONG_SENTENCES", "Naming", "Probe", "Reading", "blocks", "features", "is_long", "prompt",
           "system_prompt"]

PROBE_FILE = "answer_relevance_probe.json"
#: a reply of fewer words is a bare value or label: not read. On bare golds the probe reads the model's knowledge of
#: the value as much as its kind (judge-check's first 30 questions: 0.13 of SQuAD's and 0.14 of EVOUNA's bare golds
#: rejected, "Sunset Blvd" to a question about a Lloyd Webber musical), and a restatement or vague sentence is longer
MIN_WORDS = 3
#: P(answers) at which the screen overrules the rules' ``off_topic`` (an answer whose meaning MiniLM puts far from
#: the question, or whose words the context lacks): the answers other writers wrote, each split scored by a probe
#: fitted on the others, keep 0.953 of their golds instead of 0.904, and reject 0.997 of off-topic sentences instead
#: of 1.000 (Qwen-written splits: off-topic 0.988, another question's answer 0.977; benchmarks/NOTES.md)
OVERRULES = 0.5
#: the screen overrules the off-topic rules only on an answer of at most this many keywords (kw(A) − ``GENERIC``),
#: where their evidence is thin: a casual answer's few words ("That'd be 1946.", "Twice, I believe.") say little of
#: its subject. A longer answer the rules find about something else is judged by its words: the probe reads a fluent
#: answer to another question as an answer (judge-check's other golds and off-topic sentences, 15-96 keywords, were
#: overruled at P 0.50-0.99). The writers' golds it overrules have 2-13 keywords but one (twenty-seventh session)
OVERRULE_KEYWORDS = 13
QUESTION_CHARS = 600
REPLY_CHARS = 1200  # a reply's answer is near its start: the rest is not read (a long reply costs no more)
#: a reply of more sentences (``claims.sentences``: lines, bullets, sentence ends) is long: the probe file's ``long``
#: probe reads it. Read whole by the probe of short replies, a long reply reads as more of an answer than a short
#: one, whatever it says: five sentences around the subject pass where one would not (``benchmarks/NOTES.md``,
#: twenty-sixth session)
LONG_SENTENCES = 3
BATCH = 64  # prompts handed to one ``next_logits`` call (it decodes as many side by side as the context holds)
SYSTEM = ("You judge whether a reply answers a question. Say yes when the reply gives the information the question "
          "asks for: the date, name, place, number, choice, yes or no, reason or steps asked about, even if it may be "
          "wrong or is said casually. Say no when the reply only repeats, rewords or describes the question, talks "
          "around the subject without giving the asked-for information, gives some other fact about the subject, "
          "says it does not know, is a title, or is about something else.")
SHOTS = (  # (question, reply, verdict), written for the screen
    ("In what year did the ferry service start?", "Ferries began crossing in 1923, run by a local family.", "yes"),
    ("In what year did the ferry service start?", "The ferry service's start date is what you are after.", "no"),
    ("In what year did the ferry service start?", "The ferry service has a long and storied past on the lake.", "no"),
    ("Who designed the clock tower?", "I believe it was an engineer called Ravi Mehta.", "yes"),
    ("Who designed the clock tower?", "The clock tower stands 40 metres tall and chimes hourly.", "no"),
    ("Who designed the clock tower?", "I could not find anything about its designer.", "no"),
    ("How many players are on a team?", "Each side fields eleven.", "yes"),
    ("How do I export my contacts?", "Exporting Contacts: A Guide", "no"),
    ("How do I export my contacts?", "Go to Contacts, tap the menu and pick Export to file.", "yes"),
    ("Why was the match delayed?", "Heavy rain flooded the pitch, so kick-off was pushed back.", "yes"),
)
ASK = "Does the reply give what the question asks for?"


def system_prompt() -> str:
    """The system prompt: ``SYSTEM`` and the worked examples."""
    return SYSTEM + "\n\nExamples:\n" + "\n".join(f"Question: {q}\nReply: {a}\nAnswer: {e}\n" for q, a, e in SHOTS)


def is_long(answer: str) -> bool:
    """Whether ``answer`` has more than ``LONG_SENTENCES`` sentences (``claims.sentences``)."""
    from evaluations.judging.grounded.claims import sentences

    return len(sentences(answer)) > LONG_SENTENCES


def prompt(question: str, answer: str) -> str:
    """The user turn of one answer."""
    return f"Question: {question[:QUESTION_CHARS]}\nReply: {answer[:REPLY_CHARS]}\n{ASK}"


class ProbeParams(LogisticParams):
    """A fitted logistic probe (``fitted.LogisticParams``): ``features`` are blocks of the model's reading
    (``feature_names``: ``l16_0`` … for layer 16's output, ``hidden_0`` … for its last hidden state) and
    ``logit_p_yes``; ``scorer``: the id of the scorer (model and system prompt) whose readings it was fitted on;
    ``long``: the probe of a reply of more than ``LONG_SENTENCES`` sentences, on features of its own (fitted with long
    replies; None: this one reads every reply)."""

    scorer: str
    long: LogisticParams | None = None

    def for_reply(self, long: bool) -> LogisticParams:
        """The parameters that read a reply: ``long``'s for a long one when there are such."""
        return self.long if long and self.long is not None else self


def feature_names(width: int, reads: Sequence[str] = ("hidden",)) -> list[str]:
    """A probe's feature names: each block of ``reads`` (``hidden``: the last hidden state; ``l<K>``: the output
    of layer K) as ``<block>_0`` … ``<block>_{width-1}``, then ``logit_p_yes``."""
    return [f"{block}_{i}" for block in reads for i in range(width)] + ["logit_p_yes"]


def blocks(names: Sequence[str]) -> tuple[str, ...]:
    """The blocks that feature ``names`` read, in order (``feature_names``)."""
    return tuple(dict.fromkeys(name.rsplit("_", 1)[0] for name in names if name != "logit_p_yes"))


def _expected(names: Sequence[str]) -> list[str]:
    reads = blocks(names)
    return feature_names((len(names) - 1) // max(len(reads), 1), reads)


def features(reading: Reading, reads: Sequence[str] = ("hidden",)) -> np.ndarray:
    """The probe's inputs of one reading: the blocks ``reads`` names (the last hidden state, layers' outputs), then
    logit P(yes) (``fitted.llm_logit``)."""
    parts = [reading.hidden if block == "hidden" else reading.layers[int(block[1:])] for block in reads]
    return np.concatenate([*(np.asarray(v, dtype=np.float64) for v in parts), [float(llm_logit(reading.p_yes))]])


@dataclass(frozen=True)
class Reading:
    """What the judge model made of one (question, reply) at the position where it would say yes or no: P(yes),
    its last hidden state, and the outputs of inner layers there (layer -> vector)."""

    p_yes: float
    hidden: np.ndarray
    layers: dict[int, np.ndarray]


@dataclass(frozen=True)
class Probe:
    """A probe file's ``ProbeParams``; ``id``: a hash of its parameters (part of each verdict-store key)."""

    params: ProbeParams
    id: str

    def probability(self, reading: Reading, long: bool = False) -> float:
        """P(answers) of one reading; ``long``: of a long reply (``is_long``), read by the long replies' probe."""
        params = self.params.for_reply(long)
        return float(params.probability(features(reading, blocks(params.features)))[0])

    @property
    def layers(self) -> tuple[int, ...]:
        """The inner layers whose outputs it reads (either probe)."""
        probes = [self.params, *([self.params.long] if self.params.long is not None else [])]
        return tuple(sorted({int(b[1:]) for p in probes for b in blocks(p.features) if b != "hidden"}))


def _width_problem(params: ProbeParams) -> str | None:
    for names in [params.features, *([params.long.features] if params.long is not None else [])]:
        reads = blocks(names)
        if not reads or any(b != "hidden" and not re.fullmatch(r"l\d+", b) for b in reads) or (
                names != _expected(names)):
            return ("features must be blocks of n each (hidden_0 … hidden_{n-1} for the last hidden state, l<K>_0 … "
                    "l<K>_{n-1} for layer K's output), then logit_p_yes, in that order")
    return None


def load_probe(path: Path | None = None) -> Probe:
    """The probe in ``path`` (default: ``$EVALUATIONS_JUDGES_DIR/answer_relevance_probe.json`` if there, else the
    shipped ``judges/answer_relevance_probe.json``), checked (``fitted.read_params``)."""
    from evaluations.judging.basics.fitted import default_params_path

    path = Path(path) if path else default_params_path(PROBE_FILE)
    try:
        version = path.stat().st_mtime_ns
    except OSError:
        version = 0
    return _read_probe(str(path), version)


@functools.lru_cache(maxsize=8)
def _read_probe(name: str, version: int) -> Probe:
    """The probe in the file ``name`` as of ``version`` (its mtime): read and checked once per file version."""
    from evaluations.judging.basics.fitted import read_params

    params = read_params(Path(name), ProbeParams, what="answer-relevance probe",
                         known=lambda p: _expected(p.features),
                         unwrap=lambda doc: doc.get("params", doc), extra=_width_problem,
                         refit="python scripts/fit_answer_probe.py")
    digest = hashlib.sha256(json.dumps(params.model_dump(), sort_keys=True).encode()).hexdigest()[:16]
    return Probe(params, digest)


@dataclass
class Naming:
    """P(answers) of (question, answer) pairs on the embedded judge model (module docstring). ``cache``: the verdict
    store (a ``VerdictCache``; None: none); ``data_dir``: where the embedded model's file is assembled (None: the
    default); ``probe_path``: the probe's file (None: ``load_probe``'s default); ``reader``: only ``readings``, no
    probe (what the probe is fitted from). The model loads at the first pair not in the store; the probe file is
    read (and checked) when the screen is made."""

    cache: Any = None
    data_dir: Path | str | None = None
    probe_path: Path | str | None = None
    reader: bool = False
    _scorer: Any = field(default=None, init=False, repr=False)
    probe: Probe | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if not self.reader:
            self.probe = load_probe(Path(self.probe_path) if self.probe_path else None)

    @property
    def threshold(self) -> float:
        return self._probe().params.threshold

    def threshold_for(self, answer: str) -> float:
        """The threshold ``answer`` is held to: the long replies' probe's when it is long (``LONG_SENTENCES``)."""
        return self._probe().params.for_reply(is_long(answer)).threshold

    def _probe(self) -> Probe:
        if self.probe is None:
            raise ValueError("a Naming(reader=True) reads the model only; it has no probe")
        return self.probe

    @property
    def scorer(self) -> Any:
        if self._scorer is None:
            from evaluations.judging.checkers.yesno import load_scorer

            scorer = load_scorer(system_prompt(), data_dir=Path(self.data_dir) if self.data_dir else None)
            self._probe_fits(scorer)
            self._scorer = scorer
        return self._scorer

    @property
    def loaded(self) -> bool:
        """Whether the model has been loaded (a fully cached re-run loads none)."""
        return self._scorer is not None

    def _probe_fits(self, scorer: Any) -> None:
        from evaluations.core.errors import EvaluationsError

        if self.probe is not None and scorer.id != self.probe.params.scorer:
            raise EvaluationsError(
                f"the answer-relevance probe was fitted on another judge model or prompt (scorer "
                f"{self.probe.params.scorer}, this one {scorer.id})", where=str(scorer.path),
                fix="unset EVALUATIONS_JUDGE_GGUF (the screen reads the shipped embedded model), or fit a probe "
                    "for this model with scripts/fit_answer_probe.py into $EVALUATIONS_JUDGES_DIR")

    def check_model(self) -> None:
        """Refuse, before any pair is read, a probe fitted on another model than the one ``$EVALUATIONS_JUDGE_GGUF``
        names (that model is loaded here); without the variable the screen reads the shipped model its shipped probe
        was fitted on (loaded, and checked, at the first pair judged). A probe that reads inner layers is refused
        here too when this llama-cpp-python cannot give them (``layers_readable``), not at the first pair."""
        from evaluations.core.env import env_file
        from evaluations.core.errors import EvaluationsError
        from evaluations.judging.basics.fitted import default_params_path
        from evaluations.models.llamacpp import NO_GGML, layers_readable

        if self.probe is not None and self.probe.layers and not layers_readable():
            raise EvaluationsError(
                f"the answer-relevance screen reads layers {', '.join(map(str, self.probe.layers))} of the judge "
                f"model, and {NO_GGML}",
                where=str(self.probe_path or default_params_path(PROBE_FILE)),
                fix="reinstall llama-cpp-python from PyPI (pip install --force-reinstall llama-cpp-python), or leave "
                    "answer_relevance out of the reference-free judges")
        if self.probe is not None and env_file("EVALUATIONS_JUDGE_GGUF") is not None:
            self._probe_fits(self.scorer)

    def key(self, question: str, answer: str) -> str:
        """The verdict-store key of a pair: the scorer the probe was fitted on (the model read must be that one:
        ``_probe_fits``, when it loads), the probe and the prompt. Worked out without the model, so a fully cached
        re-run loads none."""
        probe = self._probe()
        return hashlib.sha256(json.dumps(["naming", probe.params.scorer, probe.id, prompt(question, answer)]
                                         ).encode()).hexdigest()

    def readings(self, pairs: Sequence[tuple[str, str]], layers: tuple[int, ...] = ()) -> list[Reading]:
        """The model's reading of each (question, answer), read side by side, no verdict store (the probe's inputs:
        ``scripts/fit_answer_probe.py``): P(yes), the last hidden state, and ``layers``' outputs at that position."""
        # the prompt as the tail: the system prompt and its worked examples are the prefix read once and kept (the
        # next case's answer reuses it); cut from its end (the reply's) when it overflows the window
        rows = self.scorer.next_logits([("", self.scorer.fit_tail(prompt(q, a))) for q, a in pairs], hidden=True,
                                       layers=layers)
        return [Reading(self.scorer.yes(row[0]), row[1], row[2] if layers else {}) for row in rows]

    def probabilities(self, pairs: Sequence[tuple[str, str]],
                      progress: Callable[[int], None] | None = None) -> list[float]:
        """P(answers) of each (question, answer): the verdict store's where it has one, the rest read side by side."""
        from evaluations.judging.checkers.yesno import cached_batch

        def ask(missing: list[int]) -> list[tuple[float, dict[str, Any]]]:
            probe = self._probe()
            read = self.readings([pairs[i] for i in missing], probe.layers)
            return [(probe.probability(r, is_long(pairs[i][1])),
                     {"judge": "answer_relevance_naming", "p_yes": round(r.p_yes, 6)})
                    for i, r in zip(missing, read)]

        keys = [self.key(q, a) for q, a in pairs]
        return [float(p) for p, _ in cached_batch(keys, ask, self.cache, batch=BATCH, progress=progress)]

    @staticmethod
    def reads(answer: str) -> bool:
        """Whether the screen reads ``answer`` (``MIN_WORDS``)."""
        return len(answer.split()) >= MIN_WORDS

    def names(self, pairs: Sequence[tuple[str, str]]) -> list[tuple[bool, float, float]]:
        """(P(answers) ≥ the probe's threshold for the answer, P(answers), that threshold) of each pair."""
        limits = [self.threshold_for(a) for _, a in pairs]
        return [(p >= t, p, t) for p, t in zip(self.probabilities(pairs), limits)]
