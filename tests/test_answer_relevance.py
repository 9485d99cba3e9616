"""``answer_relevance`` (``judging.grounded.answer_relevance``): the reference-free judge of "does the answer address the question".

Validated without labels, as issue 20 asks: on controls built from real data (``judging.validation.controls``) it rejects
≥ 95% of each non-answer category and accepts ≥ 95% of gold answers in every form. The off-topic score was fitted on
SQuAD 2.0 and TechQA (``scripts/fit_answer_relevance.py``): CLAPNQ and WixQA below are held out. Every expected
verdict and kind below is written by hand from the texts; the run's and the log's numbers are counted by hand from
the cases they make, and the CIs computed here with statsmodels from those counts.

The 95% of every category is measured on the controls of the first 300 answerable questions of each file:
``benchmarks/judge_accuracy.py answer_relevance_controls`` (``benchmarks/results/judge_accuracy.json``). The tests
build the controls of the first 30 only, and ask each category for 90% of them (at most 3 misses of 30): a judge at
95% misses more than 3 of 30 about one time in 16 (binomial), so 95% itself cannot be asked of 30 rows, while a
judge at 85% misses more than 3 of 30 about two times in three. Every EVOUNA choice answer is section
``answer_relevance_choice``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from evaluations.judging.validation.agreement import JUDGES
from evaluations.judging.validation.controls import CATEGORIES, build_controls, run_controls
from evaluations.judging.labels.questions import load_questions
from evaluations.judging.grounded.answer_relevance import answer_relevance, asked_type
from inprocess import run_evaluations

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
MIN_RATE = 0.9  # of the controls of the first LIMIT questions (0.95 of the first 300: the benchmark)
LIMIT = 30  # answerable questions per file the controls are built from (the benchmark uses 300)
NEGATIVE = [c for c, (kind, _, _) in CATEGORIES.items() if kind == "negative"]
POSITIVE = [c for c, (kind, _, _) in CATEGORIES.items() if kind == "positive"]


def _rates(file: str, limit: int = LIMIT) -> dict[str, tuple[float, int]]:
    items = load_questions(SHARED / file, limit=limit)
    report = run_controls(build_controls(items), {"answer_relevance": JUDGES["answer_relevance_rules"](0.0)})
    return {r.category: (r.rate, r.n) for r in report.judges["answer_relevance"]}


@pytest.mark.parametrize(("file", "n_min"), [
    ("clapnq_dev/clapnq_dev_answerable.jsonl.gz", 28),
    ("wixqa_expertwritten_sample/wixqa_expertwritten_sample160.jsonl.gz", 20),
])
def test_held_out_sets_every_control_category_on_a_sample(file, n_min):
    """CLAPNQ (Wikipedia passage) and WixQA (help-centre article), neither used to fit the off-topic score: every
    non-answer category rejected, every form of the gold accepted, another question's gold included: each category
    at 90% of its controls built from the first 30 questions (95% of those of the first 300, benchmark section
    answer_relevance_controls, but WixQA's question given back beside a remark, 0.931: "Many people ask this." uses
    words its help articles use)."""
    rates = _rates(file)
    for category in NEGATIVE + POSITIVE:
        rate, n = rates[category]
        if category == "options":
            assert n == 0  # their golds are sentences and their questions offer no options: no such control
            continue
        if category == "off_topic_sentence":  # needs another passage sharing no keyword: WixQA's 30 share few
            assert n >= 5 and rate >= MIN_RATE, (category, rate, n)
            continue
        assert n >= n_min and rate >= MIN_RATE, (category, rate, n)


def test_squad_controls_and_its_other_gold_from_the_same_article():
    """SQuAD 2.0 (a fit set): every category at 95% but another question's gold, which comes from another paragraph
    of the same article (its words are often in this paragraph): measured 0.947, 284 of 300 (floor 0.93; benchmark
    section answer_relevance_controls). Here the controls of the first 30 questions, every category at 90%."""
    rates = _rates("squad2_dev_cs224n/questions.jsonl.gz")
    for category in NEGATIVE + POSITIVE:
        rate, n = rates[category]
        assert n >= 23 and rate >= MIN_RATE, (category, rate, n)


def test_without_a_context_another_questions_gold_cannot_be_told_from_an_answer():
    """EVOUNA NQ has no context: every other category at 95% but two, measured on the first 300 questions (benchmark
    section answer_relevance_controls). Another question's gold (a bare value) is only rejected by the asked-type
    rule ("1995" to "who …"): 0.21, reported apart, never counted as passing. The question given back beside a
    remark: 0.927 (278 of 300), as without a context a remark before it ("Thanks for asking.") reads as a short value
    does. Here the controls of the first 30: every other category at 90%, other_gold below 0.5."""
    rates = _rates("evouna/NQ.jsonl.gz")
    for category in NEGATIVE + POSITIVE:
        rate, n = rates[category]
        if category == "off_topic_sentence":
            assert n == 0  # no passages: no other passage's sentence to give
        elif category != "other_gold":
            assert n >= 25 and rate >= MIN_RATE, (category, rate, n)
    assert rates["other_gold"][0] < 0.5
    result = answer_relevance("who wrote the declaration of independence", "the Pacific Ocean")
    assert result.verdict and "no context" in result.reason
    result = answer_relevance("who wrote the declaration of independence", "the Pacific Ocean",
                              "The Declaration of Independence was drafted by Thomas Jefferson in 1776.")
    assert not result.verdict and result.kind == "off_topic"


def test_the_context_decides_only_when_it_is_about_the_question():
    """A right answer the context does not hold, when the context is about something else (retrieval failed), is not
    rejected (no sentence is about the question); a number is found as that number ("$1,000,000" in
    "US$1,000,000"); the same value off the context's topic is rejected."""
    unrelated = "The Pacific Ocean is the largest and deepest of Earth's oceans."
    assert answer_relevance("Who wrote Dracula?", "Bram Stoker", unrelated).verdict
    prize = "The Clay Institute offers a prize of US$1,000,000 for a solution of the P versus NP problem."
    assert answer_relevance("What is the prize offered for a solution to P versus NP?", "$1,000,000", prize).verdict
    result = answer_relevance("What is the prize offered for a solution to P versus NP?", "the Amazon rainforest",
                              prize)
    assert (result.verdict, result.kind) == (False, "off_topic")


@pytest.mark.parametrize(("question", "answer", "context", "kind", "reason"), [
    ("Who wrote Dracula?", "", None, "empty", "empty"),
    ("Who wrote Dracula?", "I don't know.", None, "refusal", "refusal"),
    ("Who wrote Dracula?", "Who wrote Dracula?", None, "echo", "echo"),
    ("Is Canberra or Sydney the capital of Australia?", "Sydney or Canberra", None, "options", "options"),
    ("Who ruled the duchy of Normandy?", "The person who ruled the duchy of Normandy.", None, "restatement",
     "reuses 3 of the question's 3 keywords"),
    # a word standing for the asked thing without naming it adds nothing
    ("Who ranked Warsaw as the 32nd most liveable city in the world?",
     "An organisation ranked Warsaw as the 32nd most liveable city in the world.", None, "restatement", "adds none"),
    ("Who ranked Warsaw as the 32nd most liveable city in the world?",
     "Somebody ranked Warsaw 32nd among the world's most liveable cities.", None, "restatement", "adds none"),
    ("What happens when the immune system is less active than normal?",
     "When the immune system is less active than normal, something happens.", None, "restatement", "adds none"),
    # ... and an answer that is only such a word says nothing, whatever the question's words
    ("Who ranked Warsaw as the 32nd most liveable city in the world?", "Somebody.", None, "restatement",
     "only as somebody"),
    ("Who ranked Warsaw as the 32nd most liveable city in the world?", "Someone did.", None, "restatement",
     "only as someone"),
    ("Where was Barack Obama born?", "Somewhere.", None, "restatement", "only as somewhere"),
    # a particular thing asked, only its kind given (an indefinite article before a noun of a kind of thing)
    ("What is the capital of Australia?", "The capital of Australia is a city.", None, "restatement",
     "only by its kind (city)"),
    ("What is the capital of Australia?", "A city.", None, "restatement", "only by its kind"),
    ("Who wrote Hamlet?", "Hamlet was written by a man.", None, "restatement", "only by its kind"),
    ("When was the Eiffel Tower completed?", "It was completed in a certain year.", None, "restatement",
     "only by its kind"),
    ("Where was Frederic Chopin born?", "In a village.", None, "restatement", "only by its kind"),
    ("What did Clara Johnson proclaim about AI in startups?", "Johnson Proclaim AI Startups: An Overview", None,
     "heading", "heading"),
    # the main job's SmolLM2 answer (a section title of its document): no question word in common is needed
    ("What did Clara Johnson, CEO of TechFrontier, proclaim concerning the role of AI in startups on October 15, "
     "2023?", "The Advent of AI in Startups", None, "heading", "the question does not ask for one"),
    ("How many moons does Mars have?", "Phobos and Deimos", None, "wrong_type", "asks for a number"),
    ("When did the Berlin Wall fall?", "East Germany", None, "wrong_type", "asks for a time"),
    ("Who wrote Dracula?", "1897", None, "wrong_type", "asks for a person or place"),
    ("Is Paris the capital of France?", "1789", None, "wrong_type", "asks for a polar"),
    ("What is the capital of Australia?", "Mount Everest in Nepal",
     "Canberra is the capital city of Australia.", "off_topic", "0 of 3 answer keywords"),
])
def test_each_rejection_rule_names_itself(question, answer, context, kind, reason):
    result = answer_relevance(question, answer, context)
    assert (result.verdict, result.kind) == (False, kind)
    assert result.reason.startswith(f"{kind}:") and reason in result.reason


@pytest.mark.parametrize(("question", "answer", "context", "asked"), [
    ("How many moons does Mars have?", "two", None, "number"),
    ("How many moons does Mars have?", "Mars has 2 moons, Phobos and Deimos.", None, "number"),
    ("When did the Berlin Wall fall?", "9 November 1989", None, "time"),
    ("when do you need to blind bake pastry", "when the filling will not be baked", None, "time"),
    ("Who wrote Dracula?", "Bram Stoker", "Dracula is an 1897 novel by Bram Stoker.", "person or place"),
    ("Who ranked Warsaw as the 32nd most liveable city in the world?",
     "The Economist Intelligence Unit ranked Warsaw as the 32nd most liveable city in the world.", None,
     "person or place"),
    ("Is Paris the capital of France?", "Yes.", None, "polar"),
    ("Is Paris the capital of France?", "Paris is the capital of France.", None, "polar"),  # "yes", stated
    ("Does DataPower support SHA-2?", "DataPower supports SHA-2.", None, "polar"),
    ("Did Ada Lovelace and Mary Somerville have a shared tutor?", "Ada Lovelace and Mary Somerville had a shared "
     "tutor.", None, "polar"),  # "had" of "have": "yes", stated
    ("Is a problem instance abstract or concrete?", "concrete", None, None),  # picks one of the question's words
    ("What is the capital of Australia?", "Canberra", "Canberra is the capital city of Australia.", None),
    ("Which novel did Hemingway publish in 1952?", "The Old Man and the Sea", None, None),  # a title, as asked
    ("Where was Barack Obama born?", "Somewhere in Hawaii.", None, "person or place"),  # "somewhere", then named
    ("Who wrote To Kill a Mockingbird?", "Someone named Harper Lee.", None, "person or place"),
    # a kind beside the particular thing, or a kind as the answer to a question asking what sort of thing it is
    ("What is the capital of Australia?", "Canberra, a city in the Australian Capital Territory.", None, None),
    ("Where was Frederic Chopin born?", "In a village near Warsaw.", None, "person or place"),
    ("What is a koala?", "A koala is an animal.", None, None),
    ("What kind of animal is a koala?", "A marsupial.", None, None),
])
def test_answers_of_the_asked_type_are_relevant(question, answer, context, asked):
    assert asked_type(question) == asked
    result = answer_relevance(question, answer, context)
    assert (result.verdict, result.kind) == (True, "relevant"), result.reason


@pytest.mark.parametrize("question, answer, kind", [
    ("Which magazine was started first, Arthur's Magazine or First for Women?", "Arthur's Magazine", "relevant"),
    ("Which magazine was started first, Arthur's Magazine or First for Women?",
     "Arthur's Magazine was started first.", "relevant"),
    ("Which magazine was started first, Arthur's Magazine or First for Women?",
     "Arthur's Magazine or First for Women", "options"),
    ("Which magazine was started first, Arthur's Magazine or First for Women?", "Magazine", "heading"),
    ("Who was born first, Kiefer Sutherland or Christian Slater?", "Christian Slater", "relevant"),
    ("In which country was Marie Curie born? Poland, Austria or Switzerland?", "Marie Curie was born in Poland.",
     "relevant"),
    ("Is Kenneth Lee a musician or an actor?", "Kenneth Lee is an actor.", "relevant"),
    ("Which is taller, the Kessel Tower or the Brandt Building?", "The Kessel Tower", "relevant"),
    ("Which is taller, the Kessel Tower or the Brandt Building?", "The Kessel Tower and the Brandt Building",
     "heading"),
    ("Who was born first, Kiefer Sutherland or Christian Slater?", "Early life of Christian Slater", "heading"),
    ("Who was born first, Kiefer Sutherland or Christian Slater?", "Christian Slater or Kiefer Sutherland, probably",
     "options"),
    # lowercase options of several words: "red button" / "green button" (the first word alone was taken: "button"
    # on the left, so "the red button" picked nothing and was a restatement)
    ("Should I press the red button or the green button?", "the red button", "relevant"),
    ("Is the file kept in local storage or cloud storage?", "It is kept in local storage.", "relevant"),
    ("Do I need a static IP address or a dynamic IP address?", "a static IP address", "relevant"),
    # two names joined by "and" in a question that asks to choose between them (HotpotQA's wordings; were headings)
    ("Between two tennis players Kim Clijsters and Mary Pierce, who is older?", "Mary Pierce", "relevant"),
    ("El Nuevo Cojo and Golf Magazine are both special interest publications but which one is owned by Time Inc?",
     "Golf Magazine", "relevant"),
    ("Of Anna Berg and Tomas Lind, which was born first?", "Tomas Lind was born first.", "relevant"),
    ("Between two tennis players Kim Clijsters and Mary Pierce, who is older?", "Kim Clijsters and Mary Pierce",
     "heading"),
    # options in quotes, and names with "v." (court cases)
    ('Which decision occurred first, "Everson v. Board of Education" or "Rasul v. Bush"?',
     "Everson v. Board of Education", "relevant"),
    ("Which court case, Gonzales v. Carhart or Lawrence v. Texas, struck down the sodomy law?", "Lawrence v. Texas",
     "relevant"),
    ('Was development of this concept originally considered "classified" or a secret?', "a secret", "relevant"),
    # not a choice between the two: the question asks for a band
    ("Which band did John Lennon and Paul McCartney form first?", "John Lennon", "heading"),
    # an option named whole, though its words are all the rest of the question's or like the other option's
    # (found on HaluEval: these were "the question restated")
    ("Which Cathedral is the seat of the Bishop of Portsmouth, Portsmouth Cathedral or Ely Cathedral?",
     "Portsmouth Cathedral", "relevant"),
    ("Who was born later: Andre Dubus III, or Andrew Vachss?", "Andre Dubus III", "relevant"),
    ("Which is in Brazil, Memorial University of Newfoundland or Universidade Positivo?", "Universidade Positivo",
     "relevant"),
    ("Which person is older, Ivan Bella, or Frank De Winne?", "Ivan Bella is older than Frank.", "relevant"),
    ("Which Cathedral is the seat of the Bishop of Portsmouth, Portsmouth Cathedral or Ely Cathedral?",
     "Portsmouth Cathedral or Ely Cathedral", "options"),
    # a statement naming both options decides for its subject (were restatements: both options' words held)
    ("Which river is longer, the Danube or the Rhine?", "The Rhine is shorter than the Danube.", "relevant"),
    ("Who died first, Georg Solti or Carlos Kleiber?", "Carlos Kleiber died before Georg Solti.", "relevant"),
    ("Which opened first, Grand Central Terminal or Penn Station?",
     "Grand Central Terminal opened first, then Penn Station.", "relevant"),
    # a capitalised joiner inside a name, and a question's capitalised auxiliary, are no option's edge
    ("Which painter is older, Del Sarto or Fra Bartolomeo?", "Del Sarto is older than Fra Bartolomeo.", "relevant"),
    ("Is Lake Baikal or Lake Tanganyika deeper?", "Lake Baikal is deeper than Lake Tanganyika.", "relevant"),
    # ... but a subject joined to the other option picks nothing
    ("Which river is longer, the Danube or the Rhine?", "The Danube and the Rhine are rivers.", "restatement"),
    ("Which river is longer, the Danube or the Rhine?", "The Danube or the Rhine is longer.", "options"),
])
def test_an_answer_that_picks_one_of_the_questions_options_addresses_it(question, answer, kind):
    """A choice question's answer is made of the question's own words: picking one option is an answer, naming
    them all (or the question's other words) is not (expected kinds by reading)."""
    assert answer_relevance(question, answer).kind == kind


def test_a_bare_yes_to_a_yes_no_question_is_on_topic():
    """"Yes" shares no word with any context, yet it answers a yes/no question as asked (it was rejected as
    off-topic while "No", a stopword, passed); an answer about something else is still off-topic."""
    question = "Were Anna Berg and Tomas Lind born in the same country?"
    context = "Anna Berg is a Swedish painter born in Uppsala. Tomas Lind is a Danish sculptor born in Aarhus in 1950."
    assert [answer_relevance(question, a, context).kind for a in ("Yes", "No", "Yes, both were born in Sweden.")] \
        == ["relevant"] * 3
    assert answer_relevance(question, "Bananas are a yellow fruit rich in potassium.", context).kind == "off_topic"
    # a complete negative answer is made of the question's words and its polarity: no restatement
    assert answer_relevance(question, "No, Anna Berg and Tomas Lind were not born in the same country.").verdict


def test_human_judged_correct_answers_to_choice_questions_are_relevant():
    """EVOUNA (NQ and TriviaQA): every answer its annotators judged correct addresses the question. On the
    questions that say "or" (choices such as "Poland, Austria or Switzerland?", and others), at least 90% of those
    answers pass the form rules (86.9% before options were read as picks; 90.6% measured after)."""
    import gzip
    import re

    rows = []
    for name in ("NQ", "TQ"):
        with gzip.open(SHARED / "evouna" / f"{name}.jsonl.gz", "rt", encoding="utf-8") as f:
            for line in f:
                row = json.loads(line)
                if row.get("improper") or not re.search(r"\bor\b", row["question"]):
                    continue
                rows += [(row["question"], row[f"answer_{m}"]) for m in ("fid", "gpt35", "chatgpt", "gpt4", "newbing")
                         if row.get(f"answer_{m}") and row.get(f"judge_{m}") is True]
    assert len(rows) >= 250
    judged = [(q, a, answer_relevance(q, a).kind) for q, a in rows]  # each answer judged once
    rejected = [(q, a, kind) for q, a, kind in judged if kind != "relevant"]
    assert 1 - len(rejected) / len(rows) >= 0.90, rejected


def test_a_refusal_answers_a_question_marked_unanswerable():
    assert answer_relevance("What colour was the car?", "The context does not say.", answerable=False).verdict
    assert not answer_relevance("What colour was the car?", "The context does not say.").verdict


SYSTEM = '''
ANSWERS = {"q1": "Bram Stoker wrote it.", "q2": "How many moons does Mars have?", "q3": "Phobos and Deimos",
           "q4": "I don't know.", "q5": "Sydney is the capital of Australia."}
DOCS = {"q1": "d1", "q2": "d2", "q3": "d3", "q4": "d4", "q5": "d4"}
TEXTS = {"d1": "Dracula is an 1897 novel by Bram Stoker.", "d2": "Mars has two moons.",
         "d3": "The Berlin Wall fell on 9 November 1989.", "d4": "Canberra is the capital city of Australia."}

def answer(request):
    case = request["case_id"]
    if case == "q6":
        raise RuntimeError("the system is down")
    doc = DOCS[case]
    return {"retrieved": [{"id": doc, "text": TEXTS[doc], "score": 1.0}], "answer": ANSWERS[case]}
'''


def _wilson(hits: int, n: int) -> list[float]:
    from statsmodels.stats.proportion import proportion_confint

    return [float(x) for x in proportion_confint(hits, n, alpha=0.05, method="wilson")]


def test_a_run_reports_answer_relevance_as_a_score_outside_the_disagreement_count(tmp_path):
    """Rows with only id and query (q1 and q5 also have a gold answer), a callable system that answers. Hand
    count: q1 relevant, q2 echo, q3 a name to "when" (wrong_type), q4 refusal, q5 relevant but wrong (Sydney),
    q6 failed (the system raised: counted as failed) -> answer_relevance 2 of 5, n 5, Wilson CI of 2/5, one failed,
    none not applicable. It is a
    score: not a verdict, not the primary judge, and the "judges disagree" count is that of the correctness verdicts
    alone, although answer_relevance (1) and keyword_correct (False) differ on q5."""
    rows = [{"id": "q1", "query": "Who wrote Dracula?", "answers": ["Bram Stoker"]},
            {"id": "q2", "query": "How many moons does Mars have?"},
            {"id": "q3", "query": "When did the Berlin Wall fall?"},
            {"id": "q4", "query": "What is the capital of Australia?"},
            {"id": "q5", "query": "What is the capital of Australia?", "answers": ["Canberra"]},
            {"id": "q6", "query": "Who painted it?"}]
    data = tmp_path / "questions.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"id": f"d{i}", "text": f"document {i}"}) + "\n" for i in range(1, 5)))
    (tmp_path / "relsys.py").write_text(SYSTEM)
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(tmp_path)]),
           "EVALUATIONS_REFERENCE_FREE": "answer_relevance"}
    proc = run_evaluations(["run", str(data), "--corpus", str(corpus),
                           "--system", "relsys:answer", "--out", str(out), "--no-progress"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 3, proc.stderr[-2000:]  # one case failed (--max-failures 0)
    summary = json.loads((out / "summary.json").read_text())
    judge = summary["answers"]["judges"]["answer_relevance"]
    assert (judge["n"], judge["not_applicable"], judge["failed"]) == (5, 0, 1) and judge["mean"] == pytest.approx(2 / 5)
    assert judge["kinds"]["case failed"] == 1
    assert judge["ci95"] == pytest.approx(_wilson(2, 5))
    assert "accuracy" not in judge  # a score, not a verdict
    records = {r["name"]: r for r in map(json.loads, (out / "cases.jsonl").read_text().splitlines())}
    kinds = {name: r["judge_labels"].get("answer_relevance_kind") for name, r in records.items()}
    assert kinds == {"q1": "relevant", "q2": "echo", "q3": "wrong_type", "q4": "refusal", "q5": "relevant",
                     "q6": None}
    assert {n: r["judges"].get("answer_relevance") for n, r in records.items()} == {
        "q1": 1.0, "q2": 0.0, "q3": 0.0, "q4": 0.0, "q5": 1.0, "q6": None}
    assert records["q3"]["judge_reasons"]["answer_relevance"].startswith("wrong_type: the question asks for a time")

    answers = summary["answers"]
    assert answers["primary_judge"] != "answer_relevance"
    assert records["q5"]["judges"]["keyword_correct"] is False  # it would disagree if it were counted
    compared = answers["disagreements"]["judges"]
    assert "answer_relevance" not in compared
    split = [n for n, r in records.items()
             if len({r["judges"][j] for j in compared if isinstance(r["judges"].get(j), bool)}) > 1]
    of = [n for n, r in records.items() if sum(isinstance(r["judges"].get(j), bool) for j in compared) >= 2]
    assert (answers["disagreements"]["n"], answers["disagreements"]["of"]) == (len(split), len(of))
    assert set(of) == {"q1", "q5"}

    from evaluations.results import measures
    from evaluations.results.rundata import load_run

    run = load_run(out)
    family = measures.family_of("answer_relevance", run)
    # 0/1 per case (McNemar in compare, zero_tolerance in gate), yet not a correctness verdict
    assert family is not None and family.binary("answer_relevance", run)
    assert not measures.is_verdict_name("answer_relevance")
    assert measures.run_value("answer_relevance", run) == pytest.approx(2 / 5)


def test_answer_relevance_is_no_primary_judge_candidate():
    """Neither chosen (``plan.VERDICTS``) nor accepted as ``judge.primary`` (the config refuses it)."""
    from pydantic import ValidationError

    from evaluations.core.config import Config
    from evaluations.pipeline.plan import VERDICTS

    assert "answer_relevance" not in {v.name for v in VERDICTS}
    with pytest.raises(ValidationError, match="judge.primary"):
        Config.model_validate({"judge": {"primary": "answer_relevance"}})


def test_score_log_judges_each_querys_last_answer_with_its_logged_context(tmp_path, monkeypatch):
    """Query a: the last of two attempts (Bram Stoker, in its context) is relevant; b: an answer about a mountain
    with a context about Canberra is off topic; c: no query logged (not applicable, kind no_query). Mean 1/2, Wilson CI
    of 1/2."""
    log = [{"query_id": "a", "attempt": 0, "query": "Who wrote Dracula?", "answer": "I don't know.",
            "retrieved": [{"id": "d1", "text": "Dracula is an 1897 novel by Bram Stoker."}]},
           {"query_id": "a", "attempt": 1, "query": "Who wrote Dracula?", "answer": "Bram Stoker",
            "retrieved": [{"id": "d1", "text": "Dracula is an 1897 novel by Bram Stoker."}]},
           {"query_id": "b", "query": "What is the capital of Australia?", "answer": "Mount Everest is in Nepal.",
            "retrieved": [{"id": "d4", "text": "Canberra is the capital city of Australia."}, {"id": "d9"}],
            "context": ["d4"]},
           {"query_id": "c", "answer": "Blue."}]
    path = tmp_path / "log.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in log))
    from click.testing import CliRunner

    from evaluations.cli.root import cli as main

    monkeypatch.setenv("EVALUATIONS_REFERENCE_FREE", "answer_relevance")
    result = CliRunner().invoke(main, ["score", str(path), "--format", "log", "--json"])
    assert result.exit_code == 0, result.output
    relevance = json.loads(result.stdout)["answer_relevance"]
    assert "1 of 3 queries logged no 'query'" in result.stderr  # c: said, not silently left unjudged
    assert (relevance["n"], relevance["not_applicable"], relevance["mean"]) == (2, 1, 0.5)
    assert relevance["kinds"] == {"no_query": 1, "off_topic": 1, "relevant": 1}
    assert relevance["ci95"] == pytest.approx(_wilson(1, 2))
    table = CliRunner().invoke(main, ["score", str(path), "--format", "log"])
    assert table.exit_code == 0 and "answer_relevance.mean" in table.output


def test_judge_agreement_reads_rows_without_gold_and_a_list_of_passages(tmp_path):
    """Rows of query, context (a list of passages), generated_answer and label (addresses the question), no
    reference answer. Hand verdicts: relevant, echo, off topic, relevant; labels 1, 0, 0, 0 -> accuracy 3/4."""
    context = ["Dracula is an 1897 novel.", "It was written by Bram Stoker."]
    rows = [{"query": "Who wrote Dracula?", "context": context, "generated_answer": "Bram Stoker", "label": 1},
            {"query": "Who wrote Dracula?", "context": context, "generated_answer": "Who wrote Dracula?", "label": 0},
            {"query": "Who wrote Dracula?", "context": context, "generated_answer": "the Amazon rainforest",
             "label": 0},
            {"query": "Who wrote Dracula?", "context": context, "generated_answer": "Bram Stoker wrote it in 1897.",
             "label": 0}]
    path = tmp_path / "labels.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    from click.testing import CliRunner

    from evaluations.cli.root import cli as main

    result = CliRunner().invoke(main, ["judge-agreement", str(path), "--judges", "answer_relevance", "--json",
                                       "--resamples", "0"])
    assert result.exit_code == 0, result.output
    judge = json.loads(result.output)["judges"][0]
    assert judge["judge"] == "answer_relevance" and judge["accuracy"]["value"] == pytest.approx(3 / 4)


def test_a_number_is_found_in_the_context_as_the_keywords_write_it():
    """"16-year-old" is the keyword "16yearold" and "0.9 s" the keyword "09": both were looked for in the raw
    context text, where they are written "16-year-old" and "0.9 s", so two right answers (HaluEval's) were found
    nowhere in their own passages and rejected as off-topic."""
    catching = ('Catching Fire is a 2009 science fiction young adult novel by the American novelist Suzanne Collins, '
                'the second book in "The Hunger Games trilogy". It is written in the voice of 16-year-old Katniss '
                'Everdeen, who lives in the future, post-apocalyptic nation of Panem in North America.')
    deal = ("Deal Timeball is a Victorian maritime Greenwich Mean Time signal on the roof of a waterfront tower in "
            "Deal, Kent. Today GMT is considered equivalent to UTC for UK civil purposes and for navigation is "
            "considered equivalent to UT1; these two meanings can differ by up to 0.9 s.")
    assert answer_relevance("How old is the female main protagonist of Catching Fire?", "16-year-old",
                            catching).verdict
    assert answer_relevance("Up to how far off can the Deal Timeball be from Coordinated Universal Time?", "0.9 s.",
                            deal).verdict
    # the number must still be the context's: 116 is not 16, 10.9 is not 0.9
    assert topic_found("How old is the female main protagonist of Catching Fire?", "116-year-old", catching) == 0
    assert topic_found("Up to how far off can the Deal Timeball be?", "10.9 s", deal) == 0


def test_a_number_written_in_words_is_the_number_the_context_writes_in_digits_and_back():
    """"About four hundred people." to a context that says 400 was found nowhere in it and rejected as off-topic
    (a probe written for it, 2026-12-04): a number spelled out in the answer or in the context is matched as
    digits. The expected numbers are written by hand; a run of words that is not one number stays words."""
    from evaluations.judging.grounded.answer_relevance.words import numerals

    question = "How many employees were affected by the move?"
    digits = ("Northwind Tools moved its headquarters from San Jose to Austin in 2021. Executives cited lower taxes "
              "and a larger pool of engineers. The move affected 400 employees, most of whom relocated.")
    words = digits.replace("400", "four hundred")
    for answer, context in (("About four hundred people.", digits), ("400 of them.", words),
                            ("Four hundred.", words)):
        assert answer_relevance(question, answer, context).verdict, (answer, context)
        assert topic_found(question, answer, context) >= 1
    assert topic_found(question, "About four hundred and one people.", digits) == 0  # 401 is not 400
    assert {t: numerals(t, keep_words=False) for t in (
        "four hundred", "twenty-five years", "two thousand and ten", "seven hundred fifty thousand", "one of them",
        "a hundred men", "two three", "twenty thirty")} == {
        "four hundred": "400", "twenty-five years": "25 years", "two thousand and ten": "2010",
        "seven hundred fifty thousand": "750000", "one of them": "one of them", "a hundred men": "a hundred men",
        "two three": "two three", "twenty thirty": "twenty thirty"}


def topic_found(question: str, answer: str, context: str) -> int:
    from evaluations.judging.grounded.answer_relevance import topic
    from evaluations.judging.correctness.semantic import embed_texts

    return topic(question, answer, context, embed_texts).found


@pytest.mark.parametrize("answer", [
    "Regarding where the base of one of the three main British intelligence agencies is, the document has the details.",
    "The answer relates to where the base of one of the three main British intelligence agencies is.",
    "That depends on where is the base of one of the three main British intelligence agencies.",
    "Our records cover where the base of one of the three main British intelligence agencies is located.",
])
def test_the_question_given_back_in_any_wording_is_a_restatement(answer):
    """Wordings none of the rules names: the answer holds the question (as an indirect question here) and adds
    only words whose meaning is not the question's, no name and no number."""
    question = "Where is the base of one of the three main British intelligence agencies?"
    result = answer_relevance(question, answer)
    assert (result.verdict, result.kind) == (False, "restatement"), result.reason


@pytest.mark.parametrize(("question", "answer"), [
    ("Where is the base of one of the three main British intelligence agencies?",
     "Cheltenham is where the base of one of the three main British intelligence agencies is."),
    ("What is the substance that causes irritation from a sting by a nettle or an ant?",
     "The substance that causes irritation from a sting by a nettle or an ant is formic acid."),
    ("What is the gap between two front teeth called?", "The gap between two front teeth is called a diastema."),
])
def test_an_answer_that_completes_the_question_is_relevant(question, answer):
    """The question's words with the value added (a name, or words of the question's subject) answer it."""
    result = answer_relevance(question, answer)
    assert result.verdict, result.reason


def test_a_fluent_sentence_about_something_else_is_off_topic_with_or_without_a_context():
    """The first sentence of an unrelated document (HotpotQA passages of ``datasets/multihop``) answers no
    question: rejected without a context, and with the unrelated document as the context it fits."""
    import gzip

    with gzip.open(ROOT / "datasets" / "multihop" / "design.jsonl.gz", "rt", encoding="utf-8") as f:
        sets = [json.loads(next(f)) for _ in range(2)]
    question = sets[0]["question"]  # Arthur's Magazine or First for Women
    other = next(p["text"] for p in sets[1]["passages"] if p["needed"])
    for context in (None, other):
        result = answer_relevance(question, other.split(". ")[0] + ".", context)
        assert (result.verdict, result.kind) == (False, "off_topic"), result.reason
        assert "meaning far from the question" in result.reason or "context" in result.reason
    short = answer_relevance("Who wrote Dracula?", "The answer is Bram Stoker.")  # a bare value in a sentence
    assert short.verdict, short.reason


@pytest.mark.parametrize("answer", [
    "Marie Curie's Native Town",  # ("Birthplace" is a placeholder: rule 1 takes it first)
    "Marie Curie Birth City Facts",
    "Marie Curie: Early Life and Origins",
])
def test_a_title_adding_only_words_the_context_never_uses_is_a_heading(answer):
    """A title-shaped answer that names the question's things and words the context has nowhere (the fact asked
    for named, not given) is a heading, even to a question asking for an entity (headings written for this test)."""
    context = ("Marie Curie was born in Warsaw in 1867. She studied at the clandestine Flying University before "
               "moving to Paris, where she enrolled at the Sorbonne in 1891.")
    result = answer_relevance("In which city was Marie Curie born?", answer, context)
    assert (result.verdict, result.kind) == (False, "heading"), result.reason
    assert "the context never uses" in result.reason


@pytest.mark.parametrize("answer", ["Warsaw", "Warsaw, Poland", "The Sorbonne in Paris"])
def test_a_title_shaped_value_the_context_has_is_relevant(answer):
    """The same question answered by a name the context has, right or wrong, bare or title-shaped."""
    context = ("Marie Curie was born in Warsaw in 1867. She studied at the clandestine Flying University before "
               "moving to Paris, where she enrolled at the Sorbonne in 1891. Warsaw was then part of Poland.")
    result = answer_relevance("In which city was Marie Curie born?", answer, context)
    assert result.verdict, result.reason


@pytest.mark.parametrize(("answer", "kind"), [
    # the asked part filled with a name, even one the question has: an answer, right or wrong
    ("The Trial was written by Franz Kafka, published by Max Brod and dedicated to Max Brod.", "relevant"),
    ("The Trial was written by Franz Kafka, published by Max Brod and dedicated to Felice Bauer.", "relevant"),
    # the asked part left a kind, or dropped
    ("The Trial was written by Franz Kafka, published by Max Brod and dedicated to a friend of the author.",
     "restatement"),
    ("The Trial was written by Franz Kafka, published by Max Brod and dedicated to the friend of the author.",
     "restatement"),
])
def test_the_question_given_back_with_its_asked_part_filled_answers_it(answer, kind):
    """Written for this test: a statement that mirrors the question answers it when a name stands where the
    question has its wh-word, whether or not the question names it elsewhere."""
    question = "The Trial was written by Franz Kafka, published by Max Brod and dedicated to which friend of the author?"
    result = answer_relevance(question, answer)
    assert result.kind == kind, result.reason


def test_a_sentence_taken_from_a_context_about_something_else_is_off_topic():
    """Written for this test: retrieval failed (no sentence of the context is about the question). A sentence made
    of that context answers nothing; an answer from the model's own knowledge, or a bare value, is not judged by it."""
    question = "Who designed the Sydney Opera House?"
    context = ("The Buffalo Sabres reached the playoffs in 1999. The Sabres lost the series in six games. "
               "Their goaltender was named the league's best that season.")
    copied = answer_relevance(question, "The Sabres lost the series in six games.", context)
    assert (copied.verdict, copied.kind) == (False, "off_topic"), copied.reason
    assert "not about the question" in copied.reason
    assert answer_relevance(question, "Jørn Utzon designed it.", context).verdict
    assert answer_relevance(question, "Buffalo Sabres", context).kind != "off_topic"


@pytest.mark.parametrize(("question", "answer", "kind"), [
    # an attribute's value is a common noun: named, it answers; the attribute named again does not
    ("Marie Curie and Pierre Curie, have which occupation in common?", "Marie Curie and Pierre Curie are both "
     "physicists.", "relevant"),
    ("Marie Curie and Pierre Curie, have which occupation in common?", "Both were chemists.", "relevant"),
    ("Bourbon and rye, are which type of drink?", "Bourbon and rye are whiskeys.", "relevant"),
    ("Marie Curie and Pierre Curie, have which occupation in common?", "Marie Curie and Pierre Curie have a "
     "profession in common.", "restatement"),
    ("Bourbon and rye, are which type of drink?", "Bourbon and rye are both kinds of drinks.", "restatement"),
    # a which-question for a thing still wants its name
    ("Marie Curie studied at which university?", "Marie Curie studied at a university in the city.", "restatement"),
])
def test_a_question_for_an_attribute_is_answered_by_a_common_noun(question, answer, kind):
    """Written for this test: "which occupation", "which type" ask for a common noun ("physicists"), not a name,
    so an answer that adds one is no restatement; one that adds only another attribute noun ("a profession") is.
    (Not caught: "They share a profession.": "share" is a word the question lacks, and no rule tells it from a
    value without knowing parts of speech.)"""
    result = answer_relevance(question, answer)
    assert result.kind == kind, result.reason


@pytest.mark.parametrize(("answer", "verdict"), [
    ("Warsaw Airport", True),  # a name made of the question's words, written so in the context
    ("The new terminal served Warsaw and Warsaw Airport.", True),
    ("Chopin Airport", True),
    ("Warsaw Terminal Airport", False),  # a heading of the question's words: the context does not write it so
    ("Warsaw airport", True),
])
def test_a_name_of_the_questions_words_that_the_context_writes_is_a_value(answer, verdict):
    """Written for this test: "Warsaw Airport" adds no word to "... served Warsaw and which airport?", yet it is
    a name the context holds, so it answers; a title of the same words that the context lacks is a heading. (A
    lowercase "Warsaw airport" was never a restatement: it is judged like any bare value.)"""
    question = "The new terminal served Warsaw and which airport?"
    context = ("The new terminal was built in 2001. It served Warsaw and Warsaw Airport, the busiest in Poland. "
               "Chopin Airport is its other name.")
    result = answer_relevance(question, answer, context)
    assert result.verdict is verdict, result.reason
    without = answer_relevance(question, answer)  # no context: nothing vouches for the name
    if answer in ("Warsaw Airport", "Warsaw Terminal Airport"):
        assert (without.verdict, without.kind) == (False, "heading"), without.reason


@pytest.mark.parametrize(("question", "answer", "verdict"), [
    # the asked fact named, not given: a placeholder noun beside the question's names
    ("Where was the physicist Marie Curie born?", "Marie Curie's Birthplace", False),
    ("Where was the physicist Marie Curie born?", "Marie Curie's birthplace", False),
    ("How long did Marie Curie stay at the Sorbonne?", "Marie Curie's tenure at the Sorbonne", False),
    ("Ada Lovelace and Marie Curie, are of which nationality?", "Marie Curie's nationality", False),
    # a value beside them is an answer
    ("Ada Lovelace and Marie Curie, are of which nationality?", "Marie Curie was Polish.", True),
    ("How long did Marie Curie stay at the Sorbonne?", "Marie Curie's tenure at the Sorbonne lasted 28 years.", True),
    # an answer that is a question itself, adding no value; one that gives a value first is an answer
    ("Which element did Marie Curie discover first?", "Which was the first element that this scientist discovered?",
     False),
    ("Which element did Marie Curie discover first?", "Polonium. Which did she discover next?", True),
])
def test_the_asked_fact_named_or_asked_back_is_no_answer(question, answer, verdict):
    """Written for this test: a phrase that names the question's subject and the fact asked ("birthplace",
    "tenure", "nationality") without a value, and a question given back as a question, answer nothing."""
    result = answer_relevance(question, answer)
    assert result.verdict is verdict, result.reason
    if not verdict:
        assert result.kind in ("restatement", "heading", "echo"), result.reason


@pytest.mark.parametrize(("answer", "verdict"), [
    ("Nicholls is a suburb of Canberra in the district of Gungahlin.", False),  # another named subject
    ("Wayne Wang is a Hong Kong-born American film director.", False),
    ("Yes, both were born in Poland.", True),
    ("They were both born in Poland.", True),  # about the question's things, no name of its own first
    ("Marie Curie was born in Poland and Ada Lovelace in England.", True),
    ("To compare them, look at where each was born.", True),  # no name opens it: left to the other rules
])
def test_a_statement_about_another_named_thing_does_not_answer_a_yes_no_question(answer, verdict):
    """Written for this test: a yes/no question about named things is not answered by a sentence that opens with a
    name of its own and names none of the question's, however fluent ("Nicholls is a suburb ..." copied from a
    random document)."""
    result = answer_relevance("Were Marie Curie and Ada Lovelace born in the same country?", answer)
    assert result.verdict is verdict, result.reason
    if not verdict:
        assert result.kind == "off_topic" and "naming none of the question's" in result.reason


@pytest.mark.parametrize(("question", "answer", "verdict"), [
    # the asked part written after a question that ends in a preposition, or in place of a final "what"
    ("Which readers was the novel Small Gods written for?", "Small Gods was written for teenagers.", True),
    ("The physicist Marie Curie is often quoted in the press regarding what?",
     "Marie Curie is often quoted in the press regarding radium research.", True),
    ("Glaciers carve valleys through landscapes such as?", "Glaciers carve valleys through landscapes such as fjords.",
     True),
    # the asked part left unnamed: some one of a kind, the question's own words, or a possessive
    ("Which readers was the novel Small Gods written for?", "Small Gods was written for some readers.", False),
    ("The physicist Marie Curie shared a laboratory with who?",
     "The physicist Marie Curie shared a laboratory with another physicist.", False),
    ("The physicist Marie Curie shared a laboratory with who?",
     "The physicist Marie Curie shared a laboratory with a famous scientist.", False),
    ("Which venue, also called the Salle Pleyel, did Marie Curie lecture at?",
     "Marie Curie lectured at the Salle Pleyel.", False),
    ("The physicist Marie Curie was best known for what discovery?",
     "The physicist Marie Curie was best known for her discovery.", False),
])
def test_the_asked_part_filled_with_a_common_noun_answers_it(question, answer, verdict):
    """Written for this test: a question whose asked part comes last ("... written for?", "... regarding what?",
    "... such as?") is answered by a statement that writes a thing of its own there, a common noun or a name; one
    that writes "another physicist", "a famous scientist", "her discovery" or the question's own name there
    restates it."""
    result = answer_relevance(question, answer)
    assert result.verdict is verdict, result.reason
    if not verdict:
        assert result.kind == "restatement", result.reason


@pytest.mark.parametrize(("question", "answer", "verdict"), [
    ("Between Marie Curie and Ada Lovelace, which scientist was born first?", "Ada Lovelace", True),
    ("Between Marie Curie and Ada Lovelace, which scientist was born first?",
     "Ada Lovelace was born before Marie Curie.", True),
    ("Are Marie Curie and Pierre Curie both physicists?", "Marie Curie and Pierre Curie are both physicists", True),
    ("Are Marie Curie and Pierre Curie both physicists?", "Marie Curie and Pierre Curie: Physicists", False),
    ("What number film in the series was the first to be shot in colour?", "the twenty-first", True),
    ("When was the chemist who discovered radium born?", "the chemist's birth date", False),
    ("When was the chemist who discovered radium born?", "in 1867", True),
])
def test_options_named_with_between_polar_statements_ordinals_and_relative_clauses(question, answer, verdict):
    """Written for this test: "Between A and B, which ...?" offers options; a statement of a yes/no question's
    proposition answers it even without a final period; an ordinal answers "what number"; a relative "who" does not
    stop a "when" question asking for a time."""
    result = answer_relevance(question, answer)
    assert result.verdict is verdict, result.reason


@pytest.mark.parametrize(("question", "answer", "verdict", "kind"), [
    # a bare yes or no to a question that asks with a wh-word answers nothing; to one that asks for an answer or a
    # word it may be the value
    ("Which chemist, born in Warsaw, discovered polonium?", "No.", False, "wrong_type"),
    ("Radium was isolated by which physicist in 1910?", "yes", False, "wrong_type"),
    ("Which element did Marie Curie name first: polonium or radium?", "No", False, "wrong_type"),
    ("What answer does a valid proof checker give for a correct proof?", "yes", True, "relevant"),
    ("Did Marie Curie isolate radium?", "Yes.", True, "relevant"),
    # options written right after the asking words, and options with an en dash
    ("Which prize Nobel Prize in Physics or Nobel Prize in Chemistry was awarded to Marie Curie first?",
     "Nobel Prize in Physics", True, "relevant"),
    *[("Which season ended earlier in May, 2003–04 Ligue 1 or 2011–12 Ligue 1?", answer, True, "relevant")
      for answer in ("2011–12 Ligue 1", "Ligue 1 2011-12 ended earlier")],
    # a heading's value after its colon picks an option
    ("Which was discovered first: polonium or radium?", "Early Curie Discoveries: Polonium", True, "relevant"),
    # "Do X and Y ...?": the plural subject keeps the plain verb in the statement that answers it
    ("Do Marie Curie and Pierre Curie share a Nobel Prize?", "Marie Curie and Pierre Curie share a Nobel Prize.",
     True, "relevant"),
    # the asked part filled by a number word
    ("Marie Curie is regarded as one of the five most influential what?",
     "Marie Curie is regarded as one of the five most influential physicists.", True, "relevant"),
    # a number word the question gives is no date
    ("What is the birth date of the physicist who won two Nobel Prizes?",
     "The physicist who won two Nobel Prizes was Marie Curie.", False, "wrong_type"),
    # a compound of the question's words adds nothing
    ("Marie Curie was a physicist that was science driven and worked in Paris in which laboratory?",
     "Marie Curie was a science-driven physicist who worked in Paris in the laboratory.", False, "restatement"),
    ("Marie Curie's 1903 prize was shared with a 3 person team led by which physicist?",
     "Marie Curie's 1903 prize was shared with a 3-person team led by a physicist.", False, "restatement"),
])
def test_yes_or_no_to_wh_questions_inline_options_plural_do_and_compounds(question, answer, verdict, kind):
    """Written for this test (none of these sentences is in a labelled split): a bare yes or no to a wh-question is
    of the wrong type unless the question asks for an answer or a word; options written right after "which X" or
    with an en dash, or named after a heading's colon, are picked; "Do X and Y share ...?" is answered by "X and Y
    share ..."; a number word the question gives is no date; a hyphenated compound of the question's words adds
    nothing."""
    result = answer_relevance(question, answer)
    assert (result.verdict, result.kind) == (verdict, kind), result.reason


@pytest.mark.parametrize(("question", "answer", "verdict", "kind"), [
    # some one of a kind in the asked phrase's words: no name
    ("The film Radium Girls starred which English actress and former dancer?",
     "The film Radium Girls starred a Scottish actress and former dancer.", False, "restatement"),
    ("The film Radium Girls starred which English actress and former dancer?",
     "The film Radium Girls starred the English actress Joey King.", True, "relevant"),
    # a reply cut at the token limit in the middle of one of the question's words adds nothing
    ("Marie Curie, born in Warsaw in 1867 to a family of teachers, later studied at which university in Paris?",
     "Marie Curie, born in Warsaw in 1867 to a family of teachers, later studied at a university in Par", False,
     "restatement"),
    ("Who discovered polonium?", "an element named by Marie", True, "relevant"),
    # the question's misspelt word, spelt right, is still its word
    ("Marie Curie collaberated with which physicist on polonium?",
     "Marie Curie Collaborated With Physicist on Polonium", False, "heading"),
    # a title in quotation marks that the question does not hold names a thing of the asked kind
    ("In which book did Eve Curie write about her mother's life?",
     'Eve Curie wrote about her mother in the book "Life of Her Mother".', True, "relevant"),
    ("In which book did Eve Curie write about her mother?",
     'Eve Curie wrote about her mother in the book "Eve Curie".', False, "restatement"),
    # a noun that stands for the shared thing without naming it
    ("What do Marie Curie and Pierre Curie have in common?", "Marie Curie and Pierre Curie have a common trait.",
     False, "restatement"),
])
def test_kinds_cut_replies_misspellings_quoted_titles_and_placeholders(question, answer, verdict, kind):
    """Written for this test: an indefinite phrase describing the asked phrase's own noun ("a Scottish actress") names
    no one; a reply cut in the middle of one of the question's words adds nothing (a short reply ending in a name is
    not cut); a misspelling in the question does not make the right spelling new; a quoted title the question
    lacks is a value; "a common trait" names nothing."""
    result = answer_relevance(question, answer)
    assert (result.verdict, result.kind) == (verdict, kind), result.reason


def test_a_name_the_context_writes_with_a_possessive_is_grounded():
    """A bare name of the asked kind that the context writes as a possessive ("Rudyard Kipling's") is in the
    context: not off topic."""
    context = ("Baloo is a main fictional character featured in Rudyard Kipling's The Jungle Book from 1894. "
               "Raimond Aumann was nicknamed Balu after Baloo the bear in the Jungle Book.")
    result = answer_relevance("Raimond Aumann was nicknamed after a character from a book written by who?",
                              "Rudyard Kipling", context)
    assert result.verdict, result.reason


@pytest.mark.parametrize(("question", "answer", "verdict", "kind"), [
    # the question given back, then declined at the end
    ("Which laboratory in Paris did the physicist who discovered polonium with her husband work in after 1906?",
     "The laboratory in Paris that the physicist who discovered polonium with her husband worked in after 1906 is not "
     "known to me.", False, "refusal"),
    # the asking phrase kept in the answer leaves the question open, though the answer names one of its options
    ("Skłodowska, Sklodowska or Curie, was the last Polish physicist of the old school, during which late period?",
     "Curie was the last Polish physicist of the old school, during which late period.", False, "restatement"),
    # the asked phrase's own words written in its place fill nothing
    ("Pierre Curie was succeeded by which Nobel Prize-winning professor of the Sorbonne in 1906?",
     "Pierre Curie was succeeded by Nobel Prize-winning Nobel Prize-winning professor of the Sorbonne in 1906.",
     False, "restatement"),
    # a time word the question has is no time
    ("When was the physicist born who worked after Becquerel on uranium rays?",
     "The physicist who worked after Becquerel on uranium rays was Marie Curie.", False, "wrong_type"),
    # an ordinal in digits is the question's ordinal in words
    ("Which element was the fourth one Marie Curie named?", "Curie's 4th Element Named", False, "heading"),
    # a relative clause the answer keeps is no asking phrase
    ("Polonium is an element in which Curie found what property?",
     "Polonium is an element in which Curie found radioactivity.", True, "relevant"),
])
def test_declined_after_restating_kept_asking_phrases_time_words_and_ordinals(question, answer, verdict, kind):
    """Written for this test: a refusal after the question given back is a refusal; an answer that keeps the
    question's asking phrase ("during which late period") answers nothing, options or not; the asked phrase's own
    words in its place fill nothing; the question's own time words are no time; "4th" is the question's
    "fourth"; a relative "in which" kept is no asking phrase."""
    result = answer_relevance(question, answer)
    assert (result.verdict, result.kind) == (verdict, kind), result.reason


def test_the_question_given_back_then_declined_answers_a_question_marked_unanswerable():
    """A refusal written after the question given back is the relevant reply to a question that has no answer, and
    a refusal to one that has."""
    question = "Which laboratory in Paris did the physicist who discovered polonium work in after 1906?"
    answer = "The laboratory in Paris that the physicist who discovered polonium worked in after 1906 is not known."
    assert answer_relevance(question, answer, answerable=False).verdict
    assert answer_relevance(question, answer).kind == "refusal"


@pytest.mark.parametrize(("answer", "verdict"), [
    ("The element that gave Marie Curie her second Nobel Prize is called radium.", True),
    ("The element that gave Marie Curie her second Nobel Prize is called an element.", False),
])
def test_a_common_noun_after_a_naming_verb_names_the_asked_thing(answer, verdict):
    """Written for this test: "... is called radium." names the asked thing though it is a lowercase common noun; the
    question's own word after "called" names nothing."""
    result = answer_relevance("which element gave marie curie her second nobel prize", answer)
    assert result.verdict is verdict, result.reason


_MOON = ("The Moon's phases are caused by its position relative to the Earth and the Sun. Half of the Moon is always "
         "lit by the Sun, and as it orbits the Earth we see more or less of that lit half. A full orbit takes about "
         "29.5 days.")
_SKIN = ("Melanin is the pigment that determines the colour of human skin. Skin color varies with the amount and the "
         "kind of melanin that cells called melanocytes make.")
_DRAFT = ("Wayne Gretzky was drafted by the Indianapolis Racers of the World Hockey Association in 1978 and traded to "
          "the Edmonton Oilers the same year.")


@pytest.mark.parametrize(("question", "answer", "context", "verdict", "kind"), [
    # a word in -ed is no verb in a title: it adds no value the context has
    ("what causes the different phases of the moon", "Moon Phases Explained", _MOON, False, "heading"),
    # a British spelling in the question and an American one in the answer are one word: what the title adds is only
    # "understanding" and "role"
    ("which pigment determines the colour of human skin", "Understanding Skin Color: The Role of Pigments", _SKIN,
     False, "heading"),
    # a title with a name of its own gives a value, right or wrong, even when the context lacks it
    ("Which team drafted Wayne Gretzky in 1978?", "Wayne Gretzky Drafted by Boston Bruins", _DRAFT, True, "relevant"),
    # a number in a title is a value
    ("In what year was Wayne Gretzky drafted?", "Wayne Gretzky's Draft Year: 1979", _DRAFT, True, "relevant"),
    # "how long" asks for a number: "a period of time" gives none
    ("How long did Franklin Roosevelt serve as president?",
     "Franklin Roosevelt served as president for a period of time.", "", False, "wrong_type"),
    ("How long did Franklin Roosevelt serve as president?",
     "Franklin Roosevelt served as president for twelve years.", "", True, "relevant"),
])
def test_titles_with_participles_british_spellings_and_how_long(question, answer, context, verdict, kind):
    """Written for this test: a title whose only word in -ed is a participle ("Explained") and that adds nothing
    the context has is a heading; "colour" and "color" are one word; a title naming something of its own or a number
    holds a value; "how long" asks for a number."""
    result = answer_relevance(question, answer, context)
    assert (result.verdict, result.kind) == (verdict, kind), result.reason


@pytest.mark.parametrize(("question", "answer", "verdict", "kind"), [
    # a wh-question asks instead of answering, whatever it names
    ("who did the dutch buy manhattan from", "Who sold Manhattan to the Dutch West India Company in 1626?", False,
     "restatement"),
    # a title, then the question
    ("Did Leonardo or Michelangelo paint the Mona Lisa?", "Leonardo vs. Michelangelo: Who Painted the Mona Lisa?",
     False, "heading"),
    # a keyword query opening with "percentage of" asks for a number
    ("percentage of women in the united states senate", "The United States Senate has a large percentage of women.",
     False, "wrong_type"),
    ("percentage of women in the united states senate", "About a quarter of the senators are women, 25 percent.", True,
     "relevant"),
    # a work the question only mentions is not asked for: a title about it answers no "who"
    ("who sang the song hotel california", "Hotel California: Song of the Decade", False, "heading"),
    # "more commonly known" asks for a name, which may look like a title
    ("How was the European Recovery Program more commonly known?", "European Recovery Programme (The Marshall Plan)",
     True, "relevant"),
])
def test_questions_given_as_answers_number_queries_and_mentioned_works(question, answer, verdict, kind):
    """Written for this test: an answer that is itself a wh-question (alone, or after a title's colon) answers
    nothing; "percentage of ..." asks for a number; a title answers a "who" question about a work the question
    only mentions with nothing; a name asked as "more commonly known" may look like a title."""
    result = answer_relevance(question, answer)
    assert (result.verdict, result.kind) == (verdict, kind), result.reason


MONTREAL = "Montreal was captured by the British in 1760 after a short siege. The war in North America ended in 1763."
FORT = ("Tanaghrisson, a Mingo chief, travelled to the French fort and threatened Marin, who dismissed him. The "
        "French went on building forts along the river.")


@pytest.mark.parametrize(("question", "answer", "context", "verdict", "kind"), [
    # the question given back whole beside a remark, before or after it, with or without a context
    ("When was Montreal captured?", "Good question! When was Montreal captured?", MONTREAL, False, "echo"),
    ("When was Montreal captured?", "Hmm, when was Montreal captured?", MONTREAL, False, "echo"),
    ("The Suez Canal links the Mediterranean to which sea?", "Hmm, The Suez Canal links the Mediterranean to which "
     "sea?", "", False, "echo"),
    ("When was Montreal captured?", "When was Montreal captured? That is what I need to find out.", MONTREAL, False,
     "echo"),
    ("When was Montreal captured?", "I'd like to know that too: when was Montreal captured?", MONTREAL, False, "echo"),
    ("Who captured Montreal in the war?", "Who captured Montreal in the war? I will need to check.", "", False,
     "echo"),
    ("who captured montreal in the war", "You asked: who captured montreal in the war", "", False, "echo"),
    # beside the question, an answer: judged by what it says
    ("When was Montreal captured?", "When was Montreal captured? In 1760.", MONTREAL, True, "relevant"),
    ("When was Montreal captured?", "Good question! When was Montreal captured? It was taken in 1760.", MONTREAL,
     True, "relevant"),
    ("When was Montreal captured?", "You asked: When was Montreal captured? Answer: 1760", MONTREAL, True,
     "relevant"),
    ("What native chief travelled to the French fort and threatened Marin?",
     "Tanaghrisson. (What native chief travelled to the French fort and threatened Marin?)", FORT, True, "relevant"),
    ("Who captured Montreal in the war?", "Who captured Montreal in the war? I don't know.", MONTREAL, False, "echo"),
    # a question without "?" whose words go on in the same sentence is completed, not given back
    ("the latin phrase parens patriae was used to refer to",
     "The Latin phrase parens patriae was used to refer to the state as the guardian of those who cannot act.", "",
     True, "relevant"),
    # a part opening in lower case goes on with the sentence before it: the question given back inside a wrapper
    ("I want to know how to add a subscribe form to my site.",
     "The information about I want to know how to add a subscribe form to my site. is given above.", "", False,
     "restatement"),
])
def test_the_question_given_back_beside_a_remark_is_judged_by_what_is_left(question, answer, context, verdict, kind):
    """Written for this test: an answer that holds the question whole and still asking it (its "?", or all of a
    question that has none, standing as a sentence) is judged by what it says beside it, asides dropped (a lead-in
    before a colon or comma, a part with no keyword, a short part with no word of the context's, or without a
    context one that speaks of the asking); nothing left, or a non-answer left, is an echo."""
    result = answer_relevance(question, answer, context)
    assert (result.verdict, result.kind) == (verdict, kind), result.reason


@pytest.mark.parametrize(("question", "answer", "verdict", "kind"), [
    # a run of capitalised words whose initials spell one of the question's words is that word
    ("where is the headquarters of the un", "The headquarters of the United Nations.", False, "restatement"),
    ("who founded the nba", "Maurice Podoloff founded the National Basketball Association in 1946.", True,
     "relevant"),
    # a function word is no initials unless "the" goes before it: "Map Ecuador" is not "me"
    ("show me on a map where ecuador is", "Map Ecuador: An Overview", False, "heading"),
    # one wh-question asks, whatever part of the question its words fill
    ("who sang the opening of the show for what", "Who sang the opening of the show for the first season?", False,
     "restatement"),
])
def test_initials_spell_the_questions_word_and_a_wh_question_asks(question, answer, verdict, kind):
    """Written for this test: "United Nations" gives back the question's "un" (a function word of the question is
    initials only after "the"); a name beside it still answers; an answer that is one wh-question asks instead of
    answering even where its words fill the asked part."""
    result = answer_relevance(question, answer)
    assert (result.verdict, result.kind) == (verdict, kind), result.reason


POST = ("Why does the transaction time out when I delete a virtual portal? Transaction timeout occurs when I try to "
        "delete a virtual portal on Portal 8.5.0.0 CF12; the log at /opt/IBM/wp_profile/logs shows WTRN0006W.")


@pytest.mark.parametrize(("question", "answer", "verdict", "kind"), [
    # a yes/no question kept in its asking order inside a wrapper is still asked
    ("is the last game of thrones book written", "It concerns is the last game of thrones book written.", False,
     "restatement"),
    ("is the last game of thrones book written", "The last Game of Thrones book is not written yet.", True,
     "relevant"),
    # a whole support post given back inside a wrapper: its own versions and paths are no value of the answer's
    (POST, f"Regarding {POST[0].lower()}{POST[1:]} The document has the details.", False, "restatement"),
    (POST, "Increase the transaction timeout of the portal server to 300 seconds before deleting it.", True,
     "relevant"),
])
def test_a_yes_no_question_in_asking_order_and_a_whole_post_given_back_are_restatements(question, answer, verdict,
                                                                                         kind):
    """Written for this test: a wrapper around a yes/no question that keeps its opening words in order ("is the last
    ...") answers nothing, a statement of it does; a support post given back whole inside a wrapper is judged by
    the wrapper's words, not by the versions and paths the post holds."""
    result = answer_relevance(question, answer)
    assert (result.verdict, result.kind) == (verdict, kind), result.reason
