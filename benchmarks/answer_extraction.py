"""Answer relevance by naming: can the embedded model be made to *name* the answer a reply gives? (issue 44)

The probe the naming screen of answer relevance came from (``judging.grounded.naming``, shipped on 2026-12-05;
``naming`` below is that screen as first shipped, a threshold on P(named); in the twenty-fourth session the screen
read a probe of the model's hidden state at this prompt instead, and since the twenty-fifth at a yes/no rubric
prompt, ``scripts/fit_answer_probe.py``). Before it, the answer-relevance
judge was a stack of wording rules (and MiniLM): on answers written by other writers than the embedded Qwen models
(``datasets/relevance/answers_writers*``, written by helper agents in ten kinds, each labelled blind under
``RUBRIC.md``) it rejects few restatements, vague sentences and refusals in wordings it was not written from. Yes/no
questions to the embedded Qwen-1.5B ("Does the reply give an answer?", with or without worked examples) say yes to
restatements too (``benchmarks/NOTES.md``, twenty-second session). This probe asks the model to *copy* the words of the
reply that answer the question, or to write NONE (``SYSTEM``, then eight worked examples, ``SHOTS``, written for this
probe from no split). Two readings of that one prompt:

* ``naming`` (one forward pass, batched and cached like every yes/no verdict, ``YesNoScorer.next_logits``):
  P(named) = 1 − the probability of the first token spelling NONE ("N", "NON", "None", "NONE"); the verdict is
  the shipped rules' and P(named) ≥ ``NAMING_THRESHOLD`` (0.15, read off the design splits ``writers``,
  ``design``, ``clapnq3`` and ``heldout3`` at the least cost to their gold answers);
* ``extraction`` (``--generate``; greedy, at most ``MAX_TOKENS`` tokens): the reply answers when the copy is not
  NONE and holds a word (stem) the reply has and the question has not (so a copy of the question's own words, or
  a value the model brought from its own knowledge, does not count), or is a bare yes or no; ``hybrid``: the
  rules, and for a question that asks for a short value (``DESCRIPTIVE`` does not match it) the extraction too;
  ``naming_copy`` (twenty-third session): the screen, then the copy of each answer it keeps: rejected when the
  model copied words (not NONE, not yes or no) that hold nothing of the reply's beyond the question's (a
  restatement); ``--screened-only`` extracts from those answers alone.

Reported per kind and label (share the verdict gets right, Wilson 95% interval) beside ``rules`` (the shipped
judge, ``answer_relevance_batch``), with seconds per answer of the naming pass, the model's load included.

    python benchmarks/answer_extraction.py --split writers [--n 1000] [--generate]

``writers`` is design material (its rows were read while writing this probe); ``writers2``, its held-out half, was
read once, after ``NAMING_THRESHOLD`` was set; ``writers3`` (68 more questions, the same brief) was read once by
the shipped screen (``relevance_outside.py answer_controls``). Writes ``benchmarks/results/answer_extraction.json``
(the entry of the split run is replaced, the others kept).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]
from relevance_outside import _wilson, labelled_answers  # noqa: E402

from evaluations.judging.grounded.naming import QUESTION_CHARS, REPLY_CHARS  # noqa: E402

#: the copy prompt the naming screen read from 2026-12-05 until the twenty-fifth session (its rubric prompt since)
SYSTEM = ("You find the answer inside a reply. Given a question and a reply, copy the words of the reply that answer "
          "the question: a name, place, date, number, choice, yes or no, reason or way, even if it looks wrong or is "
          "said casually. Write NONE only when the reply gives no answer: it repeats or describes the question, says "
          "it does not know or cannot find it, is a title, or talks about something else.")
SHOTS = (  # (question, reply, what to write), written for the screen
    ("When did the museum open?", "It opened its doors in 1998, after years of delay.", "1998"),
    ("When did the museum open?", "You would like to know the year the museum first opened.", "NONE"),
    ("Who wrote the report?", "Probably Dana Li, if I remember right.", "Dana Li"),
    ("Who wrote the report?", "Sorry, I have no details about who authored it.", "NONE"),
    ("Why did the bridge close?", "Cracks were found in its main support, so it was shut.",
     "Cracks were found in its main support"),
    ("Why did the bridge close?", "The bridge is one of the busiest crossings in the region.", "NONE"),
    ("How do I reset my password?", "Open Settings, choose Security, then click Reset.",
     "Open Settings, choose Security, then click Reset"),
    ("How do I reset my password?", "Resetting Your Account Password", "NONE"),
)
#: the spellings of NONE the model writes as one token (a first token "N" also begins "Nikkei")
NONE_SPELLINGS = ("NONE", " NONE", "None", " None")

RESULTS = ROOT / "benchmarks" / "results" / "answer_extraction.json"
#: the threshold on P(named) the naming screen used from 2026-12-05 until its probe replaced it (twenty-fourth session)
NAMING_THRESHOLD = 0.15
MAX_TOKENS = 24
#: a question that asks for a description, a reason or a way (or states a problem): the extraction is not used
DESCRIPTIVE = re.compile(r"\b(why|how(?!\s+(many|much|long|old|far|often|tall|big|large))|difference|differ|mean|"
                         r"meaning|impact|effect|consequences?|happens?|explain|describe|help|trouble|need)\b", re.I)
POLAR = frozenset("yes no yep nope yeah".split())


def extractor():
    """(question, reply) -> the model's copy of the reply's answer, or "NONE"."""
    from evaluations.judging.correctness.embedded import embedded_judge_path
    from evaluations.models.llamacpp import load_llama, n_threads

    llm = load_llama(Path(embedded_judge_path()), n_ctx=2048, n_threads=n_threads())
    opening = [{"role": "system", "content": SYSTEM}]
    for q, a, e in SHOTS:
        opening += [{"role": "user", "content": f"Question: {q}\nReply: {a}"}, {"role": "assistant", "content": e}]

    def extract(question: str, reply: str) -> str:
        turn = {"role": "user", "content": f"Question: {question[:QUESTION_CHARS]}\nReply: {reply}"}
        out = llm.create_chat_completion([*opening, turn], temperature=0, max_tokens=MAX_TOKENS)
        return out["choices"][0]["message"]["content"].strip()

    return extract


def naming():
    """[(question, reply)] -> P(named) of each, read side by side on the embedded judge model
    (``YesNoScorer.next_logits``), without the verdict store: 1 − the probability of a token spelling NONE."""
    import numpy as np

    from evaluations.judging.checkers.yesno import load_scorer

    system = SYSTEM + "\n\nExamples:\n" + "\n".join(f"Question: {q}\nReply: {a}\nCopy: {e}\n" for q, a, e in SHOTS)
    scorer = load_scorer(system)
    none = sorted({ids[0] for ids in map(scorer.tokens, NONE_SPELLINGS) if len(ids) == 1})

    def named(logits: np.ndarray) -> float:
        p = np.exp(logits - logits.max())
        return float(1 - p[none].sum() / p.sum())

    return lambda pairs: [named(row) for row in scorer.next_logits(
        [("", scorer.fit_tail(f"Question: {q[:QUESTION_CHARS]}\nReply: {a[:REPLY_CHARS]}")) for q, a in pairs])]


def answers(question: str, reply: str, copy: str) -> bool:
    """Whether the model's copy names an answer the reply gives (module docstring)."""
    from evaluations.judging.basics.lexicon import stems

    if copy.strip(" .!").lower() in POLAR:
        return True
    return not copy.upper().startswith("NONE") and bool((stems(copy) - stems(question)) & stems(reply))


def copies_only_the_question(question: str, reply: str, copy: str) -> bool:
    """The model copied words (not NONE, not a bare yes or no) but none the reply has beyond the question's."""
    if copy.upper().startswith("NONE") or copy.strip(" .!").lower() in POLAR:
        return False
    return not answers(question, reply, copy)


def run(split: str, n: int, generate: bool = False, all_rows: bool = True) -> dict:
    from evaluations.judging.grounded.answer_relevance import answer_relevance_batch

    questions, rows = labelled_answers(split, n)
    rules = answer_relevance_batch([(r["question"], r["answer"], "\n\n".join(r["context"]), True) for r in rows])
    started = time.perf_counter()
    named = naming()
    p_named = [p for i in range(0, len(rows), 64)
               for p in named([(r["question"], r["answer"]) for r in rows[i:i + 64]])]
    seconds = (time.perf_counter() - started) / max(len(rows), 1)
    verdicts = {"rules": [r.verdict for r in rules],
                "naming": [rule.verdict and p >= NAMING_THRESHOLD for rule, p in zip(rules, p_named)]}
    if generate:
        extract = extractor()
        copies = [extract(r["question"], r["answer"]) if (all_rows or kept) else "NONE"
                  for r, kept in zip(rows, verdicts["naming"])]
        if all_rows:
            verdicts["extraction"] = [answers(r["question"], r["answer"], c) for r, c in zip(rows, copies)]
            verdicts["hybrid"] = [rule.verdict and (e or bool(DESCRIPTIVE.search(r["question"][:300])))
                                  for r, rule, e in zip(rows, rules, verdicts["extraction"])]
        # the screen, and a copy that holds only the question's words is a restatement (a NONE copy is not read:
        # the model writes NONE for descriptive golds)
        verdicts["naming_copy"] = [kept and not copies_only_the_question(r["question"], r["answer"], c)
                                   for r, kept, c in zip(rows, verdicts["naming"], copies)]
    out: dict = {"questions": len(questions), "answers": len(rows), "naming_threshold": NAMING_THRESHOLD,
                 "seconds_per_answer_naming": round(seconds, 3)}
    for name, said in verdicts.items():
        kinds: dict[str, dict] = {}
        for r, s in zip(rows, said):
            kind = f"{r['kind']}:{'relevant' if r['label'] else 'not_relevant'}"
            k = kinds.setdefault(kind, {"n": 0, "right": 0})
            k["n"] += 1
            k["right"] += s == r["label"]
        for k in kinds.values():
            k["rate"], k["ci95"] = round(k["right"] / k["n"], 4), _wilson(k["right"], k["n"])
        right = sum(s == r["label"] for r, s in zip(rows, said))
        out[name] = {"accuracy": round(right / len(rows), 4), "kinds": dict(sorted(kinds.items()))}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", default="writers", help="a labelled answer split of datasets/relevance "
                        "(writers: design; writers2: held out, read once)")
    parser.add_argument("--n", type=int, default=1000, help="the first N questions of the split")
    parser.add_argument("--generate", action="store_true", help="also the greedy extraction (0.6 s an answer)")
    parser.add_argument("--screened-only", action="store_true",
                        help="with --generate: extract only from the answers the screen keeps (naming_copy alone)")
    args = parser.parse_args()
    result = run(args.split, args.n, args.generate, all_rows=not args.screened_only)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout
    result |= {"split": args.split, "commit": commit.strip(), "date": dt.date.today().isoformat()}
    doc = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    doc[args.split + (":screened" if args.screened_only else "")] = result
    RESULTS.write_text(json.dumps(doc, indent=1) + "\n")
    for name in (n for n in ("rules", "naming", "extraction", "hybrid", "naming_copy") if n in result):
        print(f"{name}: {result[name]['accuracy']}  " + "  ".join(
            f"{k} {v['right']}/{v['n']}" for k, v in result[name]["kinds"].items()))
    print(f"{result['seconds_per_answer_naming']} s an answer (naming)")


if __name__ == "__main__":
    main()
