"""Fit a reference-free judge on your labelled rows, through the checker your runs use (``calibrate-judge
--judges context_relevance|faithfulness --judge MODEL``).

The shipped parameters (``judges/context_relevance.json``, ``judges/faithfulness.json``) were fitted on the
embedded model's P(yes). Another checker (a served model, or the same model behind a server's prompt format)
gives other probabilities for the same question: through llama.cpp's server the same Qwen2.5-Coder-1.5B with the
shipped context-relevance weights agreed with the labels on 0.758 of 120 pairs, the embedded path on 0.817
(``docs/measured.md``). So the judge is refitted on the checker it will run with:

1. measure (``Refitter.measure``): every labelled row's signals through the checker, exactly as a run computes
   them (the checker's P(yes) under the current parameters' wording; the lexical and alignment signals). Context
   relevance: one passage per row, its features (``context_relevance.features``). Faithfulness: the answer's
   claims (the served decomposition when the checker has one, else the splitter) and each claim's features
   (``faithfulness.claim_evidence``); a row the judge finds not applicable (an empty, refused or echoed answer,
   no claim, no passage) is counted and left out, as in ``judge-agreement``.
2. validate (``refit``): question-grouped k-fold CV (scikit-learn ``GroupKFold``; ``StratifiedGroupKFold`` where a
   training fold of it would hold one label only). In each fold the same model form
   as the shipped fit (``context_relevance.fit``: standardised L2 logistic regression, threshold maximising
   training accuracy; ``faithfulness.fit_params`` on the answers' worst-claim features, threshold 0.5) is fitted
   on the training questions and its verdicts on the held-out questions are pooled. Beside it, the current
   parameters' verdicts on the same rows. Both with ``agreement.agreement`` (accuracy, κ, bootstrap CIs over
   questions).
3. fit (``refit``): the same fit on every row; the parameters keep the current wording (``ask``, ``top_m``) and
   record the checker, the training rows and the validation.

The result is only as good as the labels: they must be read by a person under a written rubric (this project's:
``datasets/labels/FAITHFULNESS_RUBRIC.md``, ``datasets/labels/CONTEXT_RUBRIC.md``), never produced by a judge.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

import numpy as np

from evaluations.core.errors import EvaluationsError
from evaluations.judging.validation.agreement import Agreement, agreement
from evaluations.judging.labels.rows import LabelledAnswer

__all__ = ["REFITS", "Measured", "Refit", "Refitter", "RowsFailed", "checker_name", "checker_note", "fitted_through",
           "refit"]

Progress = Callable[[int], None]


@dataclass
class Measured:
    """The labelled rows the judge applies to, as the fit reads them."""

    claims: list[np.ndarray]  # per row: one row of features per claim (context relevance: the passage's one row)
    y: np.ndarray  # the labels (bool)
    groups: np.ndarray  # the question of each row: the CV and bootstrap unit
    sources: list[str]  # file:line of each row
    not_applicable: int = 0  # labelled rows the judge does not apply to (left out)
    calls: int = 0  # model calls made (0 when every verdict was cached)
    names: Sequence[str] = field(default=())  # the feature names of the columns
    failed: list[tuple[str, str]] = field(default_factory=list)  # (file:line, why) of rows the checker failed on
    rows: int = 0  # labelled rows measured: fitted + not applicable + failed

    @cached_property
    def x(self) -> np.ndarray:
        """The fitting rows: an answer's worst-claim features (``faithfulness.worst``); a passage's one row is its
        own worst."""
        from evaluations.judging.grounded.faithfulness import worst

        return np.array([worst(c, self.names) for c in self.claims])


@dataclass(frozen=True)
class Refitter:
    """How one judge is measured, fitted, applied and written."""

    file: str  # the parameters file name runs read (``$EVALUATIONS_JUDGES_DIR/<file>``)
    current: Callable[[], Any]  # the parameters runs use now
    measure: Callable[..., Measured]
    fit: Callable[[np.ndarray, np.ndarray, Any], Any]  # (x, y, current params) -> params
    verdicts: Callable[[Any, Measured, np.ndarray], np.ndarray]  # (params, measured, row mask) -> bool per row
    dump: Callable[[Any, dict], dict]  # (params, info) -> the file's JSON
    #: a served checker's own parameters file and its reader, when a served checker asks another question
    #: (context relevance's conversation form); None: the same file for every checker
    served_file: str | None = None
    served_current: Callable[[], Any] | None = None

    def check(self, served: bool) -> None:
        """Read (and so check) the parameters files a run reads: the judge's, and a served checker's own when
        ``served``. A file that is missing or wrong is one EvaluationsError naming it."""
        self.current()
        if served and self.served_current is not None:
            self.served_current()

    def for_checker(self, served: bool) -> Refitter:
        """This refitter for a served checker (``served``; ``yesno.is_served``) or the embedded one: a served
        checker's file and parameters where the judge has its own."""
        if self.served_file is None or self.served_current is None or not served:
            return self
        return replace(self, file=self.served_file, current=self.served_current, served_file=None,
                       served_current=None)


# -- context relevance ---------------------------------------------------------------------------------------
def _context_current() -> Any:
    from evaluations.judging.grounded.context_relevance import params

    return params()


def _context_served() -> Any:
    from evaluations.judging.grounded.context_relevance import params

    return params(served=True)


def _measure(examples: Sequence[LabelledAnswer], one: Callable[[LabelledAnswer], tuple[np.ndarray | None, int]],
             names: Sequence[str], progress: Progress | None) -> Measured:
    """``one(row)`` -> (its claims' feature rows, or None when the judge does not apply; model calls) per row. A
    row the checker fails on (``core.errors.JudgeFailed``: a served checker's error, an input longer than the
    embedded model's window) is counted in ``failed``, never dropped."""
    from evaluations.core.errors import JudgeFailed

    rows, y, groups, sources, skipped, calls, failed = [], [], [], [], 0, 0, []
    for e in examples:
        try:
            features, called = one(e)
        except JudgeFailed as exc:
            failed.append((e.source, str(exc)))
        else:
            calls += called
            if features is None:
                skipped += 1
            else:
                rows.append(features)
                y.append(e.label)
                groups.append(e.group)
                sources.append(e.source)
        if progress is not None:
            progress(1)
    return Measured(rows, np.array(y, bool), np.array(groups), sources, skipped, calls, names=names, failed=failed,
                    rows=len(examples))


def _context_measure(examples: Sequence[LabelledAnswer], *, scorer: Any, decompose: Any, cache: Any, current: Any,
                     progress: Progress | None = None) -> Measured:
    from evaluations.judging.grounded import context_relevance as cr

    for e in examples:  # before any model call
        if len(e.passages) > 1:
            raise EvaluationsError(
                f"a context-relevance row needs exactly one passage to fit on, this one has {len(e.passages)}",
                where=e.source, fix="write one row per passage, each with its own label (is this passage needed?)")

    def one(e: LabelledAnswer) -> tuple[np.ndarray | None, int]:
        if not e.passages or not e.passages[0].strip():
            return None, 0
        if current.form == "conversation":  # the passage as the QA conversation's one passage
            from evaluations.judging.basics.passages import Passage

            asked = cr.ask_in_conversation(e.question, [Passage(id="1", text=e.passages[0])], current.wording,
                                           cache=cache, scorer=scorer)[0]
            assert asked is not None  # the passage has text
            p_yes, called = asked
        else:
            p_yes, called = cr.ask(e.question, e.passages[0], current.wording, cache=cache, scorer=scorer)
        return np.array([cr.features(e.question, e.passages[0], p_yes)]), int(called)

    return _measure(examples, one, cr.FEATURES, progress)


def _context_fit(x: np.ndarray, y: np.ndarray, current: Any) -> Any:
    from evaluations.judging.grounded.context_relevance import fit

    return fit(x, y, current.wording, form=current.form)


def _context_verdicts(params: Any, measured: Measured, mask: np.ndarray) -> np.ndarray:
    out = np.zeros(len(measured.y), bool)
    rows = np.flatnonzero(mask)
    if len(rows):
        out[rows] = params.probability(measured.x[rows]) >= params.threshold
    return out


def _context_dump(params: Any, info: dict) -> dict:
    return {"params": params.model_dump(), **info}


# -- faithfulness ----------------------------------------------------------------------------------------------
def _faith_current() -> Any:
    from evaluations.judging.grounded.faithfulness import load_params

    return load_params()


def _faith_served() -> Any:
    from evaluations.judging.grounded.faithfulness import load_params

    return load_params(served=True)


def _faith_measure(examples: Sequence[LabelledAnswer], *, scorer: Any, decompose: Any, cache: Any, current: Any,
                   progress: Progress | None = None) -> Measured:
    from evaluations.judging.grounded import faithfulness as fa
    from evaluations.judging.basics.passages import Passage

    def one(e: LabelledAnswer) -> tuple[np.ndarray | None, int]:
        passages = [Passage(id=str(rank), text=text) for rank, text in enumerate(e.passages, 1)]
        kind, claims = fa.applicability(e.question, e.answer, passages, decompose)
        if kind is not None:
            return None, 0
        evidence = [fa.claim_evidence(e.question, c, passages, scorer=scorer, cache=cache, ask=current.ask,
                                      top_m=current.top_m, form=current.form) for c in claims]
        return np.array([ev.features for ev in evidence], dtype=np.float64), sum(ev.calls for ev in evidence)

    return _measure(examples, one, fa.FEATURES, progress)


def _faith_columns(params: Any) -> list[int]:
    from evaluations.judging.grounded.faithfulness import FEATURES

    return [FEATURES.index(f) for f in params.features]


def _faith_fit(x: np.ndarray, y: np.ndarray, current: Any) -> Any:
    from evaluations.judging.grounded.faithfulness import fit_params

    columns = _faith_columns(current)
    return fit_params(x[:, columns], y, names=current.features, ask=current.ask, top_m=current.top_m,
                      form=current.form)


def _faith_verdicts(params: Any, measured: Measured, mask: np.ndarray) -> np.ndarray:
    """Every claim supported (P ≥ threshold per claim), as the judge decides an answer."""
    columns = _faith_columns(params)
    out = np.zeros(len(measured.y), bool)
    for i in np.flatnonzero(mask):
        out[i] = bool((params.probability(measured.claims[i][:, columns]) >= params.threshold).all())
    return out


def _faith_dump(params: Any, info: dict) -> dict:
    params = params.model_copy(update={"info": info})
    return params.model_dump()


#: judge name -> how it is refitted (``groundedness`` is faithfulness's other name)
REFITS: dict[str, Refitter] = {
    "context_relevance": Refitter("context_relevance.json", _context_current,
                                  _context_measure, _context_fit, _context_verdicts, _context_dump,
                                  served_file="context_relevance_served.json", served_current=_context_served),
    "faithfulness": Refitter("faithfulness.json", _faith_current, _faith_measure,
                             _faith_fit, _faith_verdicts, _faith_dump,
                             served_file="faithfulness_served.json", served_current=_faith_served),
}
REFITS["groundedness"] = REFITS["faithfulness"]


class RowsFailed(Exception):
    """The checker failed on some labelled rows (``measured.failed``): nothing is fitted on the rest, since the
    rows it left out are not a random sample of the labels (the caller says so and writes nothing)."""

    def __init__(self, judge: str, measured: Measured):
        self.judge, self.measured = judge, measured
        super().__init__(f"{judge}: the checker failed on {len(measured.failed)} of {measured.rows} labelled rows")


# -- the whole refit -----------------------------------------------------------------------------------------------
@dataclass
class Refit:
    """A refit and its validation: the new parameters' question-grouped CV beside the current parameters."""

    judge: str
    checker: str
    measured: Measured
    folds: int
    cv: Agreement  # the refit, out of fold
    current: Agreement  # the current parameters on the same rows
    params: Any  # fitted on every row
    file: str  # the parameters file name runs read for this judge through this checker

    @property
    def better(self) -> bool:
        """The refit's held-out accuracy is at least the current parameters' on the same rows."""
        return self.cv.values["accuracy"] >= self.current.values["accuracy"]

    def document(self) -> dict:
        """The parameters file's JSON, with what it was fitted on and how it was validated."""
        m = self.measured
        checker = self.checker.split(" (")[0]  # the checker's name, without its id

        def stats(a: Agreement) -> dict:
            return {"n": a.n, **{k: round(a.values[k], 4) for k in ("accuracy", "kappa")},
                    "accuracy_ci95": [round(v, 4) for v in a.ci["accuracy"]]}

        info = {
            "checker": self.checker,
            "fitted": dt.date.today().isoformat(),
            "written_by": f"evaluations calibrate-judge --judges {self.judge}" + (
                "" if checker == "embedded" else f" --judge {checker}"),
            "model": "the shipped model form refitted on the checker's signals (evaluations.judging.validation.refit)",
            "training_data": {"files": sorted({s.rsplit(':', 1)[0] for s in m.sources}), "rows": int(len(m.y)),
                              "questions": int(len(set(m.groups.tolist()))), "positive": int(m.y.sum()),
                              "not_applicable_rows_left_out": m.not_applicable},
            "validation": {"method": f"question-grouped {self.folds}-fold CV (GroupKFold), out-of-fold verdicts "
                                     "pooled; bootstrap 95% CIs over questions",
                           "refit_cv": stats(self.cv), "previous_parameters_same_rows": stats(self.current)},
        }
        return REFITS[self.judge].dump(self.params, info)


def refit(judge: str, examples: Sequence[LabelledAnswer], *, scorer: Any, decompose: Any = None, cache: Any = None,
          checker: str, folds: int = 5, resamples: int = 1000, seed: int = 0,
          progress: Progress | None = None) -> Refit:
    """Measure ``examples`` through ``scorer``, cross-validate the refit, and fit it on every row (module
    docstring). ``RowsFailed`` when the checker failed on a row (after every row was asked: the verdicts it gave
    are cached); EvaluationsError when the rows cannot support ``folds``-fold CV."""
    from evaluations.judging.checkers.yesno import is_served

    spec = REFITS[judge].for_checker(is_served(scorer))
    current = spec.current()
    measured = spec.measure(examples, scorer=scorer, decompose=decompose, cache=cache, current=current,
                            progress=progress)
    if measured.failed:
        raise RowsFailed(judge, measured)
    counts = {label: int((measured.y == label).sum()) for label in (True, False)}
    questions = len(set(measured.groups.tolist()))
    if min(counts.values()) < folds or questions < folds:
        raise EvaluationsError(
            f"{judge}: too few labelled rows to fit and cross-validate on ({counts[True]} positive, "
            f"{counts[False]} negative, {questions} questions; {measured.not_applicable} not applicable)",
            where=", ".join(sorted({e.source.rsplit(':', 1)[0] for e in examples})) or "the files",
            fix=f"label at least {folds} rows of each label over at least {folds} questions (a few dozen of each "
                "for a fit worth using), or lower --folds")
    x, y = measured.x, measured.y
    pooled = np.zeros(len(y), bool)
    for train in _folds(judge, examples, y, measured.groups, folds, seed):
        pooled[~train] = spec.verdicts(spec.fit(x[train], y[train], current), measured, ~train)[~train]
    everything = np.ones(len(y), bool)
    kw = {"resamples": resamples, "seed": seed}
    return Refit(
        judge=judge, checker=checker, measured=measured, folds=folds,
        cv=agreement(f"{judge} refit", y, pooled, measured.groups, **kw),
        current=agreement(f"{judge} current", y, spec.verdicts(current, measured, everything), measured.groups, **kw),
        params=spec.fit(x, y, current), file=spec.file)


def _folds(judge: str, examples: Sequence[LabelledAnswer], y: np.ndarray, groups: np.ndarray, folds: int,
           seed: int) -> list[np.ndarray]:
    """The training masks of question-grouped ``folds``-fold CV: scikit-learn's GroupKFold, or, where one of its
    training folds would hold one label only (a label's questions gathered in one fold), StratifiedGroupKFold,
    which spreads each label's questions over the folds; EvaluationsError when that cannot either."""
    from sklearn.model_selection import GroupKFold, StratifiedGroupKFold

    def masks(splitter: Any) -> list[np.ndarray]:
        out = []
        for train_idx, _ in splitter.split(np.zeros(len(y)), y, groups=groups):
            train = np.zeros(len(y), bool)
            train[train_idx] = True
            out.append(train)
        return out

    for splitter in (GroupKFold(n_splits=folds), StratifiedGroupKFold(n_splits=folds, shuffle=True, random_state=seed)):
        trains = masks(splitter)
        if all(len(set(y[t].tolist())) == 2 for t in trains):
            return trains
    raise EvaluationsError(f"{judge}: a training fold holds only one label, however the questions are split",
                           where=", ".join(sorted({e.source.rsplit(':', 1)[0] for e in examples})) or "the files",
                           fix="label rows of both kinds for more questions, or lower --folds")


# -- which checker parameters belong to ------------------------------------------------------------------------------
def fitted_through(judge: str, file: str | None = None) -> str:
    """The checker (``embedded``, ``openai:NAME``, ``ollama:NAME``) the parameters runs read for ``judge`` (from
    ``file``; default: the judge's file for the embedded checker) were fitted through: the ``checker`` a refit
    records; the shipped files without one were fitted on the embedded model."""
    from evaluations.judging.basics.fitted import default_params_path

    try:
        doc = json.loads(default_params_path(file or REFITS[judge].file).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return "embedded"  # the judge itself reports an unreadable file when it loads it
    if not isinstance(doc, dict):
        return "embedded"  # likewise a file that is not an object (``judging.basics.fitted.read_params``)
    recorded = doc.get("checker") or (doc.get("info") or {}).get("checker") or "embedded"
    return str(recorded).split(" ", 1)[0]


def checker_name(model: Any) -> str:
    """The checker a judge model config (``LLMModel`` or None) asks: ``embedded`` for the default embedded judge
    (what the shipped parameters were fitted through), ``embedded:NAME`` for another embedded model, else
    ``provider:name``."""
    from evaluations.core.errors import EvaluationsError
    from evaluations.judging.correctness.embedded import DEFAULT_JUDGE
    from evaluations.judging.correctness.llm import embedded_judge_name
    from evaluations.models.gguf import resolve

    if model is None or model.provider == "embedded":
        name = DEFAULT_JUDGE if model is None else embedded_judge_name(model)
        try:
            name = resolve(name).name  # an alias ("Qwen2.5-Coder-1.5B-Instruct") is its registry name
        except EvaluationsError:
            pass  # an unknown name is reported where the model loads
        return "embedded" if name == DEFAULT_JUDGE else f"embedded:{name}"
    return f"{model.provider}:{model.name}"


def checker_note(judge: str, checker: str, fitted: str | None = None) -> str | None:
    """A note when ``judge``'s parameters were fitted through another checker than ``checker`` (the one asked now),
    else None: its verdicts are then not validated on this checker. ``fitted``: ``fitted_through(judge)`` when
    the caller already read it."""
    if fitted is None:  # ``checker_name`` spells every embedded checker "embedded[:NAME]"
        fitted = fitted_through(judge, REFITS[judge].for_checker(not checker.startswith("embedded")).file)
    if fitted == checker:
        return None
    return (f"{judge}: its parameters were fitted through {fitted}, the verdicts come from {checker}; its numbers "
            f"are not validated on this checker (fit them on labelled rows: evaluations calibrate-judge FILE "
            f"--judges {judge} --judge {checker})")
