"""Shared test fixtures: where the real data lives, and small real subsets of it written to tmp."""

from __future__ import annotations

import contextlib
import gzip
import json
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from llama_server import llama_server  # noqa: F401  (fixture: a real llama.cpp OpenAI-compatible server)
from reports_data import answers_run, matrix_dir, report_runs  # noqa: F401  (report test run folders)

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
SCIFACT = DATA / "scifact"
WIX_SAMPLE = DATA / "wixqa_expertwritten_sample" / "wixqa_expertwritten_sample160.jsonl.gz"
REPLIQA_NEWS = DATA / "repliqa_samples" / "repliqa3_news_questions50.jsonl.gz"
REPLIQA_20 = DATA / "repliqa_samples" / "repliqa_sample20.jsonl.gz"


@pytest.fixture(autouse=True, scope="session")
def _model_call_cache_per_session(tmp_path_factory):
    """Module/session fixtures (and the CLI processes they start) use a session cache, never the user's."""
    mp = pytest.MonkeyPatch()
    mp.setenv("EVALUATIONS_CACHE_PATH", str(tmp_path_factory.mktemp("cache") / "model_calls.sqlite"))
    yield
    mp.undo()


#: what one thread per pytest-xdist worker means: llama.cpp (the embedded models and the llama.cpp servers the tests
#: start read EVALUATIONS_LLM_THREADS), torch, OpenMP and the BLAS libraries
_ONE_THREAD = ("EVALUATIONS_LLM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def pytest_configure(config):
    """Under pytest-xdist (``-n 2``) each worker computes on one thread: two workers each spinning two threads on 2
    cores wait on each other (``models/llamacpp.py``: 5-10x slower for llama.cpp). Set before a worker imports
    torch or numpy; a serial run keeps the defaults (one thread per core), and a variable already set wins."""
    import os

    if hasattr(config.option, "loadscopereorder"):
        # pytest-xdist (3.x) otherwise hands out ``--dist loadfile``'s files by their number of tests, most first,
        # whatever the collection order: the long files of few tests (a model, a cluster, a server) went last and
        # one worker ran them while the other had finished. Off, it hands them out in LONGEST_FIRST's order.
        config.option.loadscopereorder = False
    if os.environ.get("PYTEST_XDIST_WORKER"):
        for name in _ONE_THREAD:
            os.environ.setdefault(name, "1")


def sigint_default() -> None:
    """``preexec_fn`` of a child process a test will interrupt with SIGINT: SIGINT back to its default action. A
    shell without job control that starts the suite in the background hands its children SIGINT ignored, and Python
    keeps an ignored SIGINT ignored: the child would never see the test's Ctrl-C."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


#: the modules that take longest (wall time per module on 2 cores, 2026-12-06; longest first): run first, so that
#: under pytest-xdist (``--dist loadfile`` hands out whole modules in collection order, its reorder off:
#: ``pytest_configure``) no worker starts a long module while the other has nothing left to do (longest-first
#: scheduling; ``test_naming.py``, left out of this list, once ran last for a minute while the other worker idled)
LONGEST_FIRST = ("test_served_checker.py", "test_naming.py", "test_judge_embedded.py", "test_ray.py",
                 "test_embedded_models.py", "test_answer_relevance.py", "test_matrix.py", "test_cli_answers.py",
                 "test_score_log_out.py", "test_context_relevance.py", "test_object_store.py",
                 "test_reference_free_runs.py", "test_faithfulness.py", "test_reports_browser.py", "test_score.py",
                 "test_judge_check.py", "test_review.py", "test_judge_changes.py", "test_minilm.py",
                 "test_cli_retrieval.py", "test_compare.py", "test_served_qa.py", "test_wheel.py",
                 "test_judge_refit.py", "test_judge_calibration.py", "test_systems.py", "test_yesno.py",
                 "test_synth.py", "test_index.py", "test_scored_log_as_run.py", "test_run_lifecycle.py",
                 "test_long_passages.py", "test_retries.py", "test_run_survives.py", "test_llm_protocol.py",
                 "test_reports_reference_free.py", "test_golden.py", "test_ann.py", "test_pairs.py",
                 "test_terminal_output.py", "test_comparison.py", "test_judge_command_faults.py")


def pytest_collection_modifyitems(items):
    """Longest modules first (``LONGEST_FIRST``), the others after them in their own order; tests within a module
    keep theirs. Only the order changes: every collected test runs."""
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))


@pytest.fixture(autouse=True, scope="session")
def _reference_free_judges_off_by_default():
    """Runs of the suite (and the CLI processes they start) do not load the embedded judge model for the
    reference-free judges (faithfulness, context relevance, answer relevance's naming screen) unless a test asks
    for them (``judge.reference_free``, ``--reference-free``, ``EVALUATIONS_REFERENCE_FREE``)."""
    mp = pytest.MonkeyPatch()
    mp.setenv("EVALUATIONS_REFERENCE_FREE", "none")
    yield
    mp.undo()


@pytest.fixture(autouse=True, scope="session")
def _run_reports_off_by_default():
    """Runs of the suite (and the CLI processes they start) write no report.html/report.md after the run (drawing
    the charts is about half of a small run) unless a test asks for them: ``run_reports`` (the env variable the
    product reads, ``EVALUATIONS_REPORTS``; tests/test_reports_off.py checks both settings)."""
    mp = pytest.MonkeyPatch()
    mp.setenv("EVALUATIONS_REPORTS", "none")
    yield
    mp.undo()


@contextlib.contextmanager
def reports_written():
    """Runs inside write report.html/report.md after the run, as a user's do (for a module- or session-scoped
    fixture's runs; a test takes ``run_reports``)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("EVALUATIONS_REPORTS", "all")
        yield


@pytest.fixture
def run_reports():
    """This test's runs write report.html/report.md after the run (``reports_written``)."""
    with reports_written():
        yield


@pytest.fixture(autouse=True, scope="session")
def _judge_cache_per_session(tmp_path_factory):
    """The judges' verdicts and embeddings (``Config.judge_cache_dir``) go to a session folder, never the user's data
    home: the suite's time and verdicts do not depend on how warm the machine is. A test about that cache sets its
    own ``EVALUATIONS_CACHE_DIR``."""
    mp = pytest.MonkeyPatch()
    mp.setenv("EVALUATIONS_CACHE_DIR", str(tmp_path_factory.mktemp("judge_cache")))
    yield
    mp.undo()


@pytest.fixture
def fresh_model_cache(tmp_path_factory, monkeypatch) -> Path:
    """An empty model-call cache for this test (and the CLI processes it starts), for tests about the calls
    themselves (how many, what a re-run asks). Other tests share the session's: a model answer one test paid for
    is not paid again."""
    path = tmp_path_factory.mktemp("cache") / "model_calls.sqlite"
    monkeypatch.setenv("EVALUATIONS_CACHE_PATH", str(path))
    return path


def _read_jsonl_gz(path: Path) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def write_scifact_subset(folder: Path, n_queries: int, n_distractors: int) -> Path:
    """A BEIR folder with the first ``n_queries`` SciFact test queries, their relevant docs and the first
    ``n_distractors`` other corpus docs: real text and qrels, small enough to embed in a test."""
    qrels_lines = (SCIFACT / "qrels" / "test.tsv").read_text().splitlines()
    header, rows = qrels_lines[0], [line.split("\t") for line in qrels_lines[1:]]
    keep_q: list[str] = []
    for qid, _, _ in rows:
        if qid not in keep_q:
            keep_q.append(qid)
        if len(keep_q) == n_queries:
            break
    kept_rows = [r for r in rows if r[0] in keep_q]
    relevant_docs = {r[1] for r in kept_rows}
    corpus = _read_jsonl_gz(SCIFACT / "corpus.jsonl.gz")
    distractors = [d for d in corpus if d["_id"] not in relevant_docs][:n_distractors]
    docs = [d for d in corpus if d["_id"] in relevant_docs] + distractors
    queries = [q for q in _read_jsonl_gz(SCIFACT / "queries.jsonl.gz") if q["_id"] in keep_q]
    (folder / "qrels").mkdir(parents=True, exist_ok=True)
    (folder / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    (folder / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    (folder / "qrels" / "test.tsv").write_text("\n".join([header, *("\t".join(r) for r in kept_rows)]) + "\n")
    return folder


@pytest.fixture(scope="session")
def scifact_small(tmp_path_factory) -> Path:
    """20 real SciFact test queries over ~80 real documents (their relevant ones + 60 distractors)."""
    return write_scifact_subset(tmp_path_factory.mktemp("scifact_small"), 20, 60)


class SciFactRuns(Mapping[str, Path]):
    """The shared SciFact run folders by name, each made by the CLI the first time a test reads it: a session whose
    tests read only ``fts`` and ``worse`` (BM25) never loads the embedder for ``hybrid``."""

    RUNS = {"fts": ("fts", "base"), "hybrid": ("hybrid", "base"), "worse": ("fts", "worse")}

    def __init__(self, root: Path):
        self.root = root
        self.subset = write_scifact_subset(root / "data", 30, 30)
        base_config = f"storage: {{data_dir: {root / 'home'}}}\nhistory: {{path: {root / 'history.sqlite'}}}\n"
        (root / "base.yaml").write_text(base_config)
        (root / "worse.yaml").write_text(base_config + "processing: {chunk_size: 8, chunk_overlap: 0}\n")
        self._made: dict[str, Path] = {}

    def __getitem__(self, name: str) -> Path:
        if name not in self._made:
            from evaluations.cli.root import main

            mode, config = self.RUNS[name]
            out = self.root / name
            args = ["beir", str(self.subset), "--search-mode", mode, "--skip-qa", "--no-progress", "--name",
                    f"scifact-{name}", "--config", str(self.root / f"{config}.yaml"), "--db",
                    str(self.root / f"db-{config}"), "--out", str(out)]
            # in a thread of its own: a test may read a run while an event loop runs in this one (playwright's sync
            # API keeps one running for the session), and the run starts its own
            with ThreadPoolExecutor(1) as pool, reports_written():  # the report tests read their pages
                pool.submit(main, args).result()
            self._made[name] = out
        return self._made[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.RUNS)

    def __len__(self) -> int:
        return len(self.RUNS)


@pytest.fixture(scope="session")
def scifact_runs(tmp_path_factory) -> SciFactRuns:
    """Three real run folders over one 30-query SciFact subset (~60 documents), made by the CLI (retrieval only) when
    first read: ``fts`` (BM25), ``hybrid`` (BM25 + all-MiniLM-L6-v2, RRF) and ``worse`` (BM25 over 8-token chunks,
    a deliberately worse system). Used by the compare / gate / history / report tests."""
    return SciFactRuns(tmp_path_factory.mktemp("scifact_runs"))


@pytest.fixture
def cli(capsys):
    """Run the `evaluations` CLI in-process: ``cli([...]) -> (exit code, stdout, stderr)``."""
    from evaluations.cli.root import main

    def run(args: list[str]) -> tuple[int, str, str]:
        capsys.readouterr()
        try:
            main(args)
            code = 0
        except SystemExit as exc:
            code = int(exc.code or 0)
        out, err = capsys.readouterr()
        return code, out, err

    return run


def assert_one_error(code: int, output: str, *needles: str) -> None:
    """The bad-input contract: exit 2, no traceback, exactly one "error: " line, a fix, and every needle named."""
    assert code == 2, output
    assert "Traceback" not in output, output
    assert [line.startswith("error: ") for line in output.splitlines()].count(True) == 1, output
    assert "fix:" in output, output
    for needle in needles:
        assert needle in output, f"{needle!r} not in {output!r}"


PROBE = Path(__file__).resolve().parents[1] / "datasets" / "labels" / "multihop_faithfulness.jsonl"


def multihop_probe() -> list[dict]:
    """The rows of the multi-hop probe (``datasets/labels/multihop_faithfulness.jsonl``, ``MULTIHOP.md``)."""
    return [json.loads(line) for line in PROBE.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture(scope="session")
def passage_scorer():
    """The embedded checker (Qwen2.5-Coder-1.5B) with the passage system prompt: a real model, never skipped."""
    from evaluations.judging.correctness.embedded import embedded_judge_path
    from evaluations.judging.checkers.yesno import PASSAGE_SYSTEM, load_scorer

    if not embedded_judge_path().is_file():
        pytest.fail("the embedded judge model is not assembled: run `evaluations models fetch qwen2.5-coder-1.5b`")
    return load_scorer(PASSAGE_SYSTEM)


def assert_rule_decides(rows: list[dict], scorer, cache_path: Path, rule: str) -> None:
    """Each row (``query``, ``generated_answer``, ``context``: passages, ``label``) through ``judge_faithfulness``
    with the real checker: the verdict is the label, and every claim says the rule decided it (``rule`` starts
    with the given words) while keeping the model's P(supported)."""
    from evaluations.judging.correctness.embedded import VerdictCache
    from evaluations.judging.grounded.faithfulness import judge_faithfulness
    from evaluations.judging.basics.passages import Passage

    cache = VerdictCache(cache_path)
    for row in rows:
        verdict = judge_faithfulness(row["query"], row["generated_answer"],
                                     [Passage(id=f"p{i}", text=t) for i, t in enumerate(row["context"])],
                                     cache=cache, scorer=scorer)
        assert verdict.applicable and verdict.score == float(row["label"]), row
        assert all(c.rule and c.rule.startswith(rule) and 0.0 <= c.p <= 1.0 for c in verdict.claims), verdict


@pytest.fixture(scope="session")
def qwen_server(tmp_path_factory):
    """Qwen2.5-Coder-0.5B-Instruct behind llama-cpp-python's OpenAI-compatible server (tests/llama_server.py),
    started once per session for every test that asks a real served checker."""
    from llama_server import start_llama_server, stop_llama_server

    from evaluations.models.llamacpp import gguf_path

    server = start_llama_server(gguf_path("qwen2.5-coder-0.5b"), tmp_path_factory.mktemp("qwen_server") / "server.log")
    try:
        yield server
    finally:
        stop_llama_server(server.process)


@pytest.fixture(scope="session")
def repliqa_db(tmp_path_factory) -> Path:
    """One ``--db`` folder for the runs over the RepliQA sample (``REPLIQA_20``, default chunking and embedder): the
    first run indexes and embeds its 20 documents, later runs find their chunks and vectors there (a run re-embeds
    nothing the index holds). For tests that are not about indexing."""
    return tmp_path_factory.mktemp("repliqa_db") / "db"


def short_context_labels(root: Path) -> Path:
    """The hand-labelled rows of ``datasets/labels/context_relevance.jsonl`` of its two questions with the shortest
    passages (each question has a relevant and an irrelevant one; rows 126-127 and 142-143, SQuAD 2.0, 473 and 665
    characters): real rows that cost a checker a fraction of the first rows' (2 SciFact questions, 4,972 characters).
    Written as ``root/repo/datasets/labels/context_relevance.jsonl`` beside ``root/shared`` (a link to the shared
    data), where a labels file finds the data its rows refer to."""
    source = Path(__file__).resolve().parents[1] / "datasets" / "labels" / "context_relevance.jsonl"
    rows = [json.loads(line) for line in source.read_text(encoding="utf-8").splitlines() if line.strip()]
    by_question: dict[str, list[dict]] = {}
    for row in rows:
        by_question.setdefault(json.dumps(row["question_ref"], sort_keys=True), []).append(row)
    pairs = [group for group in by_question.values() if {r["label"] for r in group} == {True, False}]
    pairs.sort(key=lambda group: sum(r["passage_chars"] for r in group))
    kept = [r for group in pairs[:2] for r in group]
    assert len(kept) == 4 and max(r["passage_chars"] for r in kept) < 600, kept
    return labels_beside_shared(root, "context_relevance.jsonl", [json.dumps(r) for r in kept])


def labels_beside_shared(root: Path, name: str, lines: list[str]) -> Path:
    """``lines`` as ``root/repo/datasets/labels/<name>`` beside ``root/shared`` (a link to the shared data), where a
    labels file finds the data its rows refer to."""
    (root / "repo" / "datasets" / "labels").mkdir(parents=True)
    (root / "shared").symlink_to(DATA.parent, target_is_directory=True)
    labels = root / "repo" / "datasets" / "labels" / name
    labels.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return labels


@pytest.fixture(autouse=True)
def _ladders_learn_per_test():
    """What the output ladders learnt about served models (``models.ladder.known_failures``, per process) starts
    empty in every test: fake servers reuse ports and model names across tests."""
    from evaluations.models.ladder import forget_failures

    forget_failures()
    yield
    forget_failures()
