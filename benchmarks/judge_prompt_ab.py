"""Does the embedded judge's prompt do better with worked examples in its cached prefix? (issue 16, item 4)

Variants, all with the shipped rubric (``judges/answer_equivalence_yesno.md``, which names the non-answers):

- ``plain``: the rubric alone (what ships);
- ``system``: the rubric followed by six worked examples (yes/no, two of them non-answers) in the system prompt;
- ``turns``: four worked examples as earlier chat turns in the exact format of a real verdict (user: question,
  references, candidate, "Correct (yes/no)?"; assistant: yes/no).

Every variant stays one forward pass per verdict with the examples in the KV-cached prefix. Measured on rows the
non-answer screen passes (the LLM never sees the others): a seeded stratified sample of EVOUNA's strong-system
answers (20 per (dataset, system) cell, seed 7, the first 160 screened in) and the hand-labelled weak-model answers
(``datasets/labels/weak_answers.jsonl``). Reported: ROC AUC of P(yes) against the human labels, the best accuracy
over thresholds, seconds per verdict.

    EVALUATIONS_LLM_THREADS=2 python benchmarks/judge_prompt_ab.py [--variants plain,system,turns] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
from sklearn.metrics import roc_auc_score

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

import evaluations.judging.correctness.embedded as E  # noqa: E402
from evaluations.judging.validation.heldout import load_evouna, stratified_sample  # noqa: E402
from evaluations.judging.correctness.nonanswer import screen  # noqa: E402
from evaluations.judging.labels.weak_labels import load_weak_labels  # noqa: E402

OUT = ROOT / "benchmarks" / "results" / "judge_prompt_ab.json"
SYSTEM_EXAMPLES = [  # (question, references, candidate, verdict)
    ("Who designed the new library building in Eastport?", ["Maria Okafor"],
     "The new library building in Eastport was designed by architect Maria Okafor.", "yes"),
    ("Who designed the new library building in Eastport?", ["Maria Okafor"],
     "The new library building in Eastport was designed by a local architect.", "no"),
    ("What did the council decide about the harbour bridge?",
     ["The council decided to close the harbour bridge for repairs until March."],
     "Harbour Bridge Decision: What the Council Decided", "no"),
    ("How many people attended the opening concert?", ["about 12,000", "twelve thousand"],
     "Roughly twelve thousand people came to the opening concert.", "yes"),
    ("On which date did the festival open?", ["June 4, 2021"], "2021", "no"),
    ("What caused the delay of the rocket launch?", ["a fuel leak"],
     "The context does not say what caused the delay.", "no"),
]
TURN_EXAMPLES = [SYSTEM_EXAMPLES[0], SYSTEM_EXAMPLES[1],
                 ("How many people attended the opening concert?", ["about 12,000"], "twelve thousand", "yes"),
                 SYSTEM_EXAMPLES[2]]


def _block(q: str, refs: list[str], a: str) -> str:
    return E._QUESTION.format(question=q, refs=" | ".join(refs), answer=a)


def judge(variant: str) -> E.YesNoJudge:
    j = E.YesNoJudge(E.embedded_judge_path())
    if variant == "system":
        text = j.rubric + "\n\nExamples:\n\n" + "\n".join(_block(q, r, a) + f"Correct: {v}\n" for q, r, a, v in
                                                            SYSTEM_EXAMPLES)
        j.prefix = j._tokens(f"<|im_start|>system\n{text.strip()}<|im_end|>\n<|im_start|>user\n")
    elif variant == "turns":
        text = f"<|im_start|>system\n{j.rubric}<|im_end|>\n"
        for q, r, a, v in TURN_EXAMPLES:
            text += "<|im_start|>user\n" + _block(q, r, a) + E._ASK + v + "<|im_end|>\n"
        j.prefix = j._tokens(text + "<|im_start|>user\n")
    return j


def measure(j: E.YesNoJudge, rows) -> dict:
    y = np.array([e.label for e in rows])
    t0 = time.perf_counter()
    p = np.array([j.probability(e.question, e.references, e.answer)[0] for e in rows])
    seconds = (time.perf_counter() - t0) / len(rows)
    best = max(float(np.mean((p >= t) == y)) for t in np.arange(0.01, 1, 0.01))
    return {"n": len(rows), "positive_rate": float(y.mean()), "auc": float(roc_auc_score(y, p)),
            "best_accuracy": best, "seconds_per_verdict": seconds}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--variants", default="plain,system,turns")
    parser.add_argument("--out", type=Path, default=OUT, help="JSON file to write (default: the stored result).")
    args = parser.parse_args()
    evouna = load_evouna(ROOT.parent / "shared" / "data" / "evouna")
    strong = [evouna[i] for i in stratified_sample(evouna, 20, seed=7)]
    strong = [e for e in strong if screen(e.question, e.references, e.answer).decided is None][:160]
    weak = [e for e in load_weak_labels(ROOT / "datasets" / "labels" / "weak_answers.jsonl")
            if screen(e.question, e.references, e.answer, answerable=e.answerable).decided is None]
    results = {}
    for variant in args.variants.split(","):
        j = judge(variant)
        results[variant] = {"prefix_tokens": len(j.prefix), "strong": measure(j, strong), "weak": measure(j, weak)}
        print(variant, json.dumps(results[variant]), flush=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
