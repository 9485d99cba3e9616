"""How well does a judge agree with human correctness labels? (positive class = "correct")

From the confusion counts TP, FP, FN, TN (human label vs judge verdict), N = their sum:

* accuracy  = (TP + TN) / N
* precision = TP / (TP + FP)
* recall    = TP / (TP + FN)
* F1        = 2·TP / (2·TP + FP + FN)
* Cohen's κ = (p_o − p_e) / (1 − p_e), p_o = accuracy,
  p_e = ((TP+FP)(TP+FN) + (FN+TN)(FP+TN)) / N²

A statistic whose denominator is 0 (precision when the judge never says positive, recall when the human never
does, κ when p_e = 1) is undefined: NaN (n/a in a table, null in JSON; scikit-learn's ``zero_division=np.nan``),
never 0, which would read as a judge that is always wrong.

Each with a 95% bootstrap percentile interval: 1000 seeded resamples of whole questions
(a cluster bootstrap: a question's answers are not independent), statistic recomputed per resample; the resamples
where it is undefined are left out of its interval (counting them as 0 would drag the interval down to 0).
"""

from __future__ import annotations

import functools

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from evaluations.core.errors import EvaluationsError
from evaluations.judging.correctness import lexical
from evaluations.judging.labels.data import LabelledAnswer

if TYPE_CHECKING:
    from evaluations.core.config import Config

__all__ = ["METRICS", "JUDGES", "REFERENCE_FREE", "F1_THRESHOLD", "confusion", "metrics", "bootstrap_ci", "wilson",
           "agreement", "run_judges", "offline_batch", "payload", "check_references"]

METRICS = ("accuracy", "precision", "recall", "f1", "kappa")
#: verdict rule of the token-F1 judge: correct iff F1 >= F1_THRESHOLD
F1_THRESHOLD = 0.5

Progress = Callable[[int], None]
BatchJudge = Callable[[Sequence[LabelledAnswer], "Progress | None"], np.ndarray]


def confusion(labels: Sequence[bool] | np.ndarray, verdicts: Sequence[bool] | np.ndarray) -> np.ndarray:
    """[TP, FP, FN, TN] with positive = correct (label = human, verdict = judge)."""
    y, v = np.asarray(labels, dtype=bool), np.asarray(verdicts, dtype=bool)
    return np.array([np.sum(y & v), np.sum(~y & v), np.sum(y & ~v), np.sum(~y & ~v)], dtype=np.int64)


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """num / den, NaN where den is 0 (the statistic is undefined there, not 0)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)


def metrics(counts: np.ndarray) -> dict[str, np.ndarray]:
    """The five statistics (module docstring) of confusion counts of shape (..., 4); NaN where undefined."""
    counts = np.asarray(counts, dtype=np.float64)
    tp, fp, fn, tn = (counts[..., i] for i in range(4))
    n = tp + fp + fn + tn
    accuracy = _ratio(tp + tn, n)
    p_e = _ratio((tp + fp) * (tp + fn) + (fn + tn) * (fp + tn), n * n)
    with np.errstate(divide="ignore", invalid="ignore"):
        kappa = np.where(p_e < 1, (accuracy - p_e) / np.where(p_e < 1, 1 - p_e, 1), np.nan)
    return {
        "accuracy": accuracy,
        "precision": _ratio(tp, tp + fp),
        "recall": _ratio(tp, tp + fn),
        "f1": _ratio(2 * tp, 2 * tp + fp + fn),
        "kappa": kappa,
    }


def bootstrap_ci(
    labels: Sequence[bool] | np.ndarray,
    verdicts: Sequence[bool] | np.ndarray,
    groups: Sequence[str] | np.ndarray,
    *,
    resamples: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> dict[str, tuple[float, float]]:
    """Percentile CI of every statistic, resampling whole groups (questions) with replacement; the resamples where
    a statistic is undefined (NaN, ``metrics``) are left out of its interval, NaN when none is left."""
    y, v = np.asarray(labels, dtype=bool), np.asarray(verdicts, dtype=bool)
    _, group_index = np.unique(np.asarray(groups), return_inverse=True)
    n_groups = int(group_index.max()) + 1 if len(group_index) else 0
    if n_groups == 0 or resamples <= 0:
        return {m: (float("nan"), float("nan")) for m in METRICS}
    cell = np.select([y & v, ~y & v, y & ~v], [0, 1, 2], default=3)
    per_group = np.zeros((n_groups, 4), dtype=np.int64)
    np.add.at(per_group, (group_index, cell), 1)
    rng = np.random.default_rng(seed)
    totals = np.empty((resamples, 4), dtype=np.int64)
    step = max(1, 2_000_000 // n_groups)
    for start in range(0, resamples, step):
        stop = min(resamples, start + step)
        picks = rng.integers(0, n_groups, size=(stop - start, n_groups))
        totals[start:stop] = per_group[picks].sum(axis=1)
    values = metrics(totals)
    alpha = (1 - level) / 2
    out = {}
    for name in METRICS:
        finite = values[name][np.isfinite(values[name])]
        if finite.size == 0:
            out[name] = (float("nan"), float("nan"))
        else:
            lo, hi = np.quantile(finite, [alpha, 1 - alpha])
            out[name] = (float(lo), float(hi))
    return out


@dataclass
class Agreement:
    """One judge's agreement with the human labels."""

    judge: str
    n: int
    confusion: dict[str, int]
    values: dict[str, float]
    ci: dict[str, tuple[float, float]]
    judge_positive_rate: float
    human_positive_rate: float

    def to_dict(self) -> dict:
        def clean(x: float) -> float | None:
            return None if x != x else round(x, 6)

        return {
            "judge": self.judge,
            "n": self.n,
            "confusion": self.confusion,
            "human_positive_rate": clean(self.human_positive_rate),
            "judge_positive_rate": clean(self.judge_positive_rate),
            **{m: {"value": clean(self.values[m]), "ci95": [clean(c) for c in self.ci[m]]} for m in METRICS},
        }


def wilson(hits: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """The Wilson score interval of the proportion hits / n (``statsmodels.stats.proportion.proportion_confint``,
    ``method="wilson"``), with its exact ends where floating point misses them: the lower end of 0 / n is 0 and the
    upper end of n / n is 1 (statsmodels gives e.g. 2.8e-17 and 0.9999999999999999). n must be > 0."""
    from statsmodels.stats.proportion import proportion_confint

    low, high = proportion_confint(hits, n, alpha=1 - level, method="wilson")
    return (0.0 if hits == 0 else float(low)), (1.0 if hits == n else float(high))


def agreement(
    judge: str,
    labels: Sequence[bool] | np.ndarray,
    verdicts: Sequence[bool] | np.ndarray,
    groups: Sequence[str] | np.ndarray,
    *,
    resamples: int = 1000,
    seed: int = 0,
) -> Agreement:
    """Point statistics and bootstrap CIs of one judge's verdicts against the labels."""
    counts = confusion(labels, verdicts)
    n = int(counts.sum())
    # nothing judged: no statistic (not the 0 of an empty confusion table)
    values = {k: float(v) if n else float("nan") for k, v in metrics(counts).items()}
    return Agreement(
        judge=judge,
        n=n,
        confusion=dict(zip(("tp", "fp", "fn", "tn"), map(int, counts))),
        values=values,
        ci=bootstrap_ci(labels, verdicts, groups, resamples=resamples, seed=seed),
        judge_positive_rate=float((counts[0] + counts[1]) / n) if n else float("nan"),
        human_positive_rate=float((counts[0] + counts[2]) / n) if n else float("nan"),
    )


# --- judges: name -> batch verdict function ---------------------------------------------------


def _per_example(rule: Callable[[LabelledAnswer], bool]) -> BatchJudge:
    def run(examples: Sequence[LabelledAnswer], progress: Progress | None = None) -> np.ndarray:
        verdicts = np.array([rule(e) for e in examples], dtype=bool)
        if progress is not None:
            progress(len(examples))
        return verdicts

    return run


def _embedding_cache(cache: bool, config: Config | None) -> Path | bool:
    """The judge-embedding cache file in ``config``'s ``judge_cache_dir()`` (default ``Config()``), False when
    ``cache`` is False."""
    from evaluations.core.config import Config
    from evaluations.judging.correctness.semantic import cache_file

    return cache_file(cache, (config or Config()).judge_cache_dir()) or False


def _semantic(examples: Sequence[LabelledAnswer], progress: Progress | None = None, *, cache: bool = True,
              config: Config | None = None) -> np.ndarray:
    from evaluations.judging.correctness.semantic import SEMANTIC_THRESHOLD, semantic_similarity_batch

    sims = semantic_similarity_batch([e.references for e in examples], [e.answer for e in examples], progress=progress,
                                     cache_path=_embedding_cache(cache, config))
    return sims >= SEMANTIC_THRESHOLD


def offline_batch(model: Any, *, cache_path: Path | bool = True) -> BatchJudge:
    """A batch judge running the ``OfflineJudgeModel`` ``model`` (non-answer screen first, as in a run);
    ``cache_path``: its embedding cache (True: the default file, False: none)."""

    def run(examples: Sequence[LabelledAnswer], progress: Progress | None = None) -> np.ndarray:
        _, verdicts = model.judge_batch(
            [e.references for e in examples], [e.answer for e in examples], progress=progress,
            questions=[e.question for e in examples], answerable=[e.answerable for e in examples],
            cache_path=cache_path,
        )
        return verdicts

    return run


def _offline(examples: Sequence[LabelledAnswer], progress: Progress | None = None, *, cache: bool = True,
             config: Config | None = None) -> np.ndarray:
    from evaluations.judging.correctness.offline import load_model

    return offline_batch(load_model(), cache_path=_embedding_cache(cache, config))(examples, progress)


def _keyword(threshold: float) -> BatchJudge:
    return _per_example(lambda e: lexical.keyword_correct(e.references, e.answer, threshold))


def _llm(examples: Sequence[LabelledAnswer], progress: Progress | None = None, *, cache: bool = True,
         config: Config | None = None) -> np.ndarray:
    """The default LLM judge: the embedded one (``judging.correctness.embedded``); ``run_judges(llm=...)`` picks another.
    ``config``: whose data folder holds the model and the verdict cache (default: ``Config()``)."""
    from evaluations.core.config import Config, LLMModel
    from evaluations.judging.correctness.llm import batch_judge

    return batch_judge(LLMModel(provider="embedded"), config or Config(), cache=cache)(examples, progress)


def _combined(examples: Sequence[LabelledAnswer], progress: Progress | None = None, *, cache: bool = True,
              config: Config | None = None) -> np.ndarray:
    """The combined judge (``judges/combined_judge.json``): offline features + the embedded judge's P(yes)."""
    from evaluations.core.config import Config
    from evaluations.judging.correctness.embedded import combined_params_path, judge_many, load_judge, verdict_cache
    from evaluations.judging.correctness.offline import load_model
    from evaluations.judging.basics.fitted import llm_logit

    config = config or Config()
    judge = load_judge(data_dir=config.data_dir())
    p = judge_many(judge, [(e.question, e.references, e.answer) for e in examples],
                   cache=verdict_cache(cache, config.judge_cache_dir()), progress=progress,
                   answerable=[e.answerable for e in examples])
    _, verdicts = load_model(combined_params_path()).judge_batch(
        [e.references for e in examples], [e.answer for e in examples], extras={"llm_logit": llm_logit(p)},
        questions=[e.question for e in examples], answerable=[e.answerable for e in examples],
    )
    return verdicts


def _relevance(examples: Sequence[LabelledAnswer], progress: Progress | None = None, *, cache: bool = True,
               config: Config | None = None, naming: bool = True) -> np.ndarray:
    """``judging.grounded.answer_relevance.judge_answer_relevance``: reference-free, from the question, the answer
    and the example's context (the references are not read: its label is "addresses the question", not
    "correct"); ``naming`` False: the rules alone (``answer_relevance_rules``: no model call)."""
    from evaluations.core.config import Config
    from evaluations.judging.correctness.embedded import verdict_cache
    from evaluations.judging.grounded.answer_relevance import judge_answer_relevance
    from evaluations.judging.grounded.naming import Naming

    config = config or Config()
    screen = Naming(cache=verdict_cache(cache, config.judge_cache_dir()), data_dir=config.data_dir()) if naming \
        else None
    cases = [(e.question, e.answer, e.context, e.answerable) for e in examples]
    verdicts = np.array([r.verdict for r in judge_answer_relevance(cases, screen,
                                                                   cache=_embedding_cache(cache, config))],
                        dtype=bool)
    if progress is not None:
        progress(len(examples))
    return verdicts


#: judge name -> factory(keyword_threshold, cache=True, config=None) -> batch judge. ``semantic``, ``offline`` and
#: ``answer_relevance`` embed texts; ``llm`` and ``combined`` run the embedded LLM judge. Embeddings and verdicts
#: are cached on disk in ``config.judge_cache_dir()`` (default ``Config()``) unless ``cache=False``.
#: ``answer_relevance`` does not read the references: its label is "addresses the question", not "correct"; it
#: asks the embedded judge model (its naming screen) about the answers its rules accept, ``answer_relevance_rules``
#: (the rules alone) asks no model.
#: A batch judge returns one verdict per example (bool, or float with NaN = the judge failed: not judged).
JUDGES: dict[str, Callable[..., BatchJudge]] = {
    "llm": lambda _t, cache=True, config=None: functools.partial(_llm, cache=cache, config=config),
    "combined": lambda _t, cache=True, config=None: functools.partial(_combined, cache=cache, config=config),
    "keyword": lambda t, **_: _keyword(t),
    "f1": lambda _t, **_: _per_example(lambda e: lexical.token_f1(e.references, e.answer) >= F1_THRESHOLD),
    "em": lambda _t, **_: _per_example(lambda e: lexical.exact_match(e.references, e.answer)),
    "containment": lambda _t, **_: _per_example(lambda e: lexical.containment(e.references, e.answer)),
    "semantic": lambda _t, cache=True, config=None: functools.partial(_semantic, cache=cache, config=config),
    "offline": lambda _t, cache=True, config=None: functools.partial(_offline, cache=cache, config=config),
    "answer_relevance": lambda _t, cache=True, config=None: functools.partial(_relevance, cache=cache, config=config),
    "answer_relevance_rules": lambda _t, cache=True, config=None: functools.partial(_relevance, cache=cache,
                                                                                    config=config, naming=False),
}

#: the judges of ``JUDGES`` that never read the gold answer (the others compare the answer with it)
REFERENCE_FREE = frozenset({"answer_relevance", "answer_relevance_rules"})


def check_references(examples: Sequence[LabelledAnswer], judges: Sequence[str]) -> None:
    """An error naming the rows without a gold answer when one of ``judges`` compares the answer with it (a judge of
    ``JUDGES`` not in ``REFERENCE_FREE``): such a judge would call every answer of those rows incorrect, a wrong
    agreement said as a number. An unanswerable question's row (``answerable`` False) rightly has no gold."""
    readers = [j for j in dict.fromkeys(judges) if j in JUDGES and j not in REFERENCE_FREE]
    missing = [e.source for e in examples if readers and e.answerable and not e.references]
    if not missing:
        return
    files: dict[str, list[str]] = {}
    for source in missing:
        file, _, line = source.rpartition(":")
        files.setdefault(file or source, []).append(line)
    shown = "; ".join(f"{file} line(s) {', '.join(lines[:8])}{' …' if len(lines) > 8 else ''}"
                      for file, lines in files.items())
    raise EvaluationsError(
        f"{len(missing)} of {len(examples)} rows have no gold answer ('reference_answer'), which the judge(s) "
        f"{', '.join(readers)} compare the answer with: {shown}",
        where=missing[0],
        fix="give each row 'reference_answer' (a text or a list of texts; rename another tool's field such as "
            "'ground_truth', 'reference' or 'expected_output'), or ask only the reference-free judges "
            "(faithfulness, answer_relevance, context_relevance)",
    )


def run_judges(
    examples: Sequence[LabelledAnswer],
    judges: Sequence[str],
    *,
    keyword_threshold: float = lexical.KEYWORD_THRESHOLD,
    resamples: int = 1000,
    seed: int = 0,
    progress: Callable[[str, int], None] | None = None,
    llm: BatchJudge | None = None,
    cache: bool = True,
    batch: dict[str, BatchJudge] | None = None,
    config: Config | None = None,
) -> list[Agreement]:
    """Run each named judge over ``examples`` and measure its agreement with the human labels.

    ``llm``: the batch judge behind the name ``llm`` (default: the embedded LLM judge); ``batch``: batch judges by
    name that are not in ``JUDGES`` (``judging.validation.passage_judges``); ``config``: whose ``judge_cache_dir()`` holds
    the cached verdicts and embeddings (default ``Config()``). Examples a judge
    failed on (NaN verdict) are left out of that judge's statistics (its ``n`` says how many were judged).
    """
    labels = np.array([e.label for e in examples], dtype=bool)
    groups = np.array([e.group for e in examples])
    results = []
    for name in judges:
        step = (lambda k, _n=name: progress(_n, k)) if progress is not None else None
        if batch is not None and name in batch:
            run = batch[name]
        else:
            run = (llm if (name == "llm" and llm is not None)
                   else JUDGES[name](keyword_threshold, cache=cache, config=config))
        verdicts = np.asarray(run(examples, step), dtype=float)
        judged = ~np.isnan(verdicts)
        results.append(agreement(name, labels[judged], verdicts[judged] > 0.5, groups[judged],
                                 resamples=resamples, seed=seed))
    return results


def payload(files: Sequence[str], examples: Sequence[LabelledAnswer], results: Sequence[Agreement], *,
            resamples: int, seed: int, failed: dict[str, int] | None = None) -> dict[str, Any]:
    """``judge-agreement --json``'s document (and ``score``'s ``agreement`` block): per judge its statistics,
    ``failed`` (rows its model failed on; 0 when not given) and ``not_applicable`` = rows − n − failed."""
    failed = failed or {}
    return {
        "files": list(files),
        "examples": len(examples),
        "questions": len({e.group for e in examples}),
        "bootstrap": {"resamples": resamples, "seed": seed, "unit": "question"},
        "judges": [{**r.to_dict(), "failed": failed.get(r.judge, 0),
                    "not_applicable": len(examples) - r.n - failed.get(r.judge, 0)} for r in results],
    }
