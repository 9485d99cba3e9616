"""The non-answer screen (``judging.correctness.nonanswer``) and every correctness judge behind it.

Expected kinds are written by hand from reading each answer; the EVOUNA bound is the requirement (a screen
that rejects correct answers of strong systems is worse than none), measured on the human labels.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_evals import Case, Dataset

from evaluations.judging.validation.heldout import load_evouna
from evaluations.evaluators.llm_judges import AnswerEquivalenceJudge
from evaluations.judging.correctness.nonanswer import KINDS, screen
from evaluations.evaluators.answers import OfflineJudge
from evaluations.core.types import Answer, CaseMetadata, CaseOutput, RetrievalInputs

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"

# (question, gold alternatives, answer, expected kind or None for "left to the judge")
CASES = [
    # the README main job's failure modes (answers as SmolLM2 wrote them; golds paraphrased)
    ("What initiative did InnovateGreen Co. launch to promote eco-friendly commuting among its employees?",
     ["A bike-to-work programme with free bicycle repairs."],
     "InnovateGreen Co. launched a new initiative to promote eco-friendly commuting among its employees.",
     "restatement"),
    ("What did Clara Johnson proclaim concerning the role of AI in startups?",
     ["That AI levels the playing field for small firms."], "The Advent of AI in Startups", "heading"),
    ("On which date did the Silent Majority lead a day of commemoration?", ["October 10, 2023"], "2023",
     "fragment"),
    ("who got the first nobel prize in physics", ["Wilhelm Conrad Röntgen"],
     "who got the first nobel prize in physics?", "echo"),
    ("who got the first nobel prize in physics", ["Wilhelm Conrad Röntgen"], "I don't know.", "refusal"),
    ("who got the first nobel prize in physics", ["Wilhelm Conrad Röntgen"], "   ", "empty"),
    ("Is the capital of Australia Sydney or Canberra?", ["Canberra"], "Sydney or Canberra", "options"),
    ("how many moons does mars have", ["2", "two"], "Mars has moons orbiting the planet.", "fragment"),
    ("how many moons does mars have", ["2", "two"], "Mars has moons.", "restatement"),
    # answers the screen must leave to the judge
    ("who got the first nobel prize in physics", ["Wilhelm Conrad Röntgen"], "Wilhelm Röntgen", None),
    ("who got the first nobel prize in physics", ["Wilhelm Conrad Röntgen"],
     "The first Nobel Prize in Physics was awarded to Wilhelm Röntgen in 1901.", None),
    ("who got the first nobel prize in physics", ["Wilhelm Conrad Röntgen"], "Albert Einstein", None),
    ("Is the capital of Australia Sydney or Canberra?", ["Canberra"], "Canberra", None),
    ("how many moons does mars have", ["2", "two"], "two", None),
    ("what is the name of the fab four band", ["The Beatles"], "The Beatles", None),
    ("which organelle is the site of atp production", ["mitochondrion"],
     "The mitochondria is the organelle that is the site of ATP production.", None),
    ("when did the first pokemon game come out", ["1996", "February 27, 1996"], "It came out in 1996.", None),
    # without gold: picking one of the question's options is an answer; repeating them all is not
    ("Who was born first, Kiefer Sutherland or Christian Slater?", [], "Kiefer Sutherland", None),
    ("In which country was Marie Curie born? Poland, Austria or Switzerland?", [], "Marie Curie was born in Poland.",
     None),
    ("Is the capital of Australia Sydney or Canberra?", [], "Sydney or Canberra", "options"),
    ("Which magazine was started first, Arthur's Magazine or First for Women?", [], "The magazine was started first.",
     "restatement"),
    # an "or" that offers no choice exempts nothing (restatements of the question's words)
    ("What served as a justification for imposing imperialistic policies on certain peoples or regions?", [],
     "Served as a justification for imposing imperialistic policies on certain regions.", "restatement"),
    ("What committee corresponds with one or more departments in the Spanish Government?", [],
     "The committee that corresponds with departments in the Spanish Government.", "restatement"),
    ("roman god of the underworld also called orcus or pluto", [], "Pluto", "restatement"),
    # a yes/no answer to a yes/no question adds its polarity (TechQA's style; without gold)
    ("Does DataPower support SHA-2?", [], "No, DataPower does not support SHA-2.", None),
    ("Does DataPower support SHA-2?", [], "DataPower SHA-2 support", "restatement"),
    # a statement of the question's proposition answers it "yes"; the question with its auxiliary dropped
    # (judge-check's restatement control) states nothing
    ("Does DataPower support SHA-2?", [], "DataPower supports SHA-2.", None),
    # options of several lowercase words; a noun the two share ("public or private company") tells neither apart
    ("Should I press the red button or the green button?", [], "The red button.", None),
    ("Should I press the red button or the green button?", [], "The button.", "restatement"),
    ("Is Coca-Cola a public or private company?", [], "A private company.", None),
    ("Is Coca-Cola a public or private company?", [], "A company.", "restatement"),
    ("Is Paris the capital of France?", [], "Paris is the capital of France.", None),
    ("Did Marie Curie win two Nobel prizes?", [], "Marie Curie did win two Nobel prizes.", None),
    ("Is Paris the capital of France?", [], "Paris the capital of France.", "restatement"),
    ("Does DataPower support SHA-2?", [], "DataPower support SHA-2.", "restatement"),
    ("Is Paris the capital of France?", [], "Is Paris the capital of France.", "echo"),
    # a refusal in the third person ("they cannot provide a specific answer"), not only "I cannot ..."
    ("who got the first nobel prize in physics", [],
     "The user asked about the first Nobel Prize in Physics, but the assistant cannot provide a specific answer.",
     "refusal"),
    ("who got the first nobel prize in physics", [], "We could not provide an exact answer to that.", "refusal"),
]


@pytest.mark.parametrize(("question", "gold", "answer", "kind"), CASES)
def test_screen_kinds(question, gold, answer, kind):
    result = screen(question, gold, answer)
    assert result.kind == kind, result
    assert result.decided is (None if kind is None else False)
    if kind:
        assert result.reason.startswith(KINDS[kind])


def test_unanswerable_questions_reverse_the_refusal_rule():
    assert screen("What colour was the car?", [], "The document does not say.", answerable=False).decided is True
    assert screen("What colour was the car?", [], "I don't know", answerable=False).decided is True
    assert screen("What colour was the car?", [], "It was red.", answerable=False).decided is False
    assert screen("What colour was the car?", [], "", answerable=False).decided is False


def test_screen_keeps_strong_systems_correct_answers():
    """On EVOUNA's human labels: the screen rejects < 1% of the answers people marked correct and catches
    more than 5% of the ones they marked incorrect (it is a screen for non-answers, not a judge)."""
    rows = load_evouna(SHARED / "evouna")
    correct = [e for e in rows if e.label]
    wrong = [e for e in rows if not e.label]
    false_rejections = sum(screen(e.question, e.references, e.answer).decided is False for e in correct)
    caught = sum(screen(e.question, e.references, e.answer).decided is False for e in wrong)
    assert false_rejections / len(correct) < 0.01, false_rejections
    assert caught / len(wrong) > 0.05, caught


def _run(evaluator, question: str, gold: list[str], answer: str, answerable: bool = True):
    case = Case(name="c", inputs=RetrievalInputs(query=question),
                metadata=CaseMetadata(query_id="c", answers=gold, answerable=answerable))
    output = CaseOutput(answer=Answer(answer=answer))

    async def task(_inputs):
        return output

    report = Dataset(name="screen", cases=[case], evaluators=[evaluator]).evaluate_sync(task, progress=False)
    return report.cases[0]


def _always_yes() -> tuple[FunctionModel, list[int]]:
    calls = [0]

    def reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        calls[0] += 1
        if info.output_tools:
            tool = info.output_tools[0]
            return ModelResponse(parts=[ToolCallPart(tool.name, {"reason": "same", "pass": True, "score": 1.0})])
        return ModelResponse(parts=[TextPart("yes")])

    return FunctionModel(reply), calls


def test_served_judge_rejects_a_restatement_without_asking_the_model():
    model, calls = _always_yes()
    judge = AnswerEquivalenceJudge(model=model, rubric="rubric")
    case = _run(judge, "What initiative did InnovateGreen Co. launch to promote eco-friendly commuting?",
                ["A bike-to-work programme."], "InnovateGreen Co. launched an initiative to promote eco-friendly commuting.")
    assert case.assertions["llm_judge"].value is False
    assert case.assertions["llm_judge"].reason.startswith("screen:")
    assert case.labels["answer_kind"].value == "restatement"
    assert calls[0] == 0
    case = _run(judge, "who got the first nobel prize in physics", ["Wilhelm Conrad Röntgen"], "Wilhelm Röntgen")
    assert case.assertions["llm_judge"].value is True and calls[0] == 1


def test_offline_judge_rejects_non_answers_and_judges_unanswerable_questions():
    case = _run(OfflineJudge(cache=False), "who got the first nobel prize in physics", ["Wilhelm Conrad Röntgen"],
                "The first Nobel Prize in Physics")
    assert case.assertions["offline_correct"].value is False
    assert case.scores["offline_p_correct"].value == 0.0
    assert case.labels["answer_kind"].value == "restatement"
    case = _run(OfflineJudge(cache=False), "What colour was the car?", [], "The text does not say.", answerable=False)
    assert case.assertions["offline_correct"].value is True


def test_a_hedge_word_refuses_only_an_answer_that_says_nothing_else():
    """"Unknown." and "Its origin is unknown." (only the question's words beside the hedge) decline the question;
    an answer that states something around "unclear" (SQuAD's gold for the Huguenot question is about the term's
    unclear origin) is no refusal: the screen leaves it to the judge and faithfulness keeps its claim."""
    from evaluations.judging.grounded.claims import split_claims
    from evaluations.judging.correctness.nonanswer import is_refusal

    question = "What is the origin of the name Huguenot?"
    for refusal in ("Unknown.", "It is unclear.", "The answer is unknown.", "Its origin is unknown.",
                    "The origin of the name Huguenot is unclear."):
        assert is_refusal(refusal, question), refusal
        assert screen(question, ["uncertain origin"], refusal).kind == "refusal", refusal
    answer = "A term used originally in derision, Huguenot has unclear origins."
    assert not is_refusal(answer, question) and screen(question, ["uncertain origin"], answer).kind != "refusal"
    assert split_claims(question, answer) and not split_claims(question, "Its origin is unknown.")
