"""Options and parsers shared by several commands: the run options of every dataset command (``common_options``),
``--k`` cut-offs (``parse_ks``) and ``--judges`` names (``parse_judges``)."""

from __future__ import annotations

from pathlib import Path

import click

from evaluations.core.errors import EvaluationsError

__all__ = ["MAX_RESAMPLES", "common_options", "parse_judges", "parse_ks"]

#: bootstrap resamples at most (a tester's 10 million took 1.5 GB of memory)
MAX_RESAMPLES = 100_000


def common_options(func):
    """The options of a run (``repliqa``, ``wix``, ``beir``, ``run``, ``golden``), in ``--help`` order."""
    options = [
        click.option("--config", "config_path", type=click.Path(dir_okay=False), help="haiku.rag.yaml to use."),
        click.option("--db", type=str, help="LanceDB folder or URI (s3://…, gs://…, db://…) for the index."),
        click.option("--skip-db", is_flag=True, help="Use the existing index as is (no indexing)."),
        click.option("--skip-retrieval", is_flag=True, help="Do not score retrieval (still retrieves for QA)."),
        click.option("--skip-qa", is_flag=True, help="Do not answer questions or judge answers."),
        click.option("--limit", type=click.IntRange(min=1),
                     help="Evaluate the first N queries (after --tags and the dataset's filters)."),
        click.option("--name", help="Run name (default: <dataset>-<mode>)."),
        click.option("--k", "ks", help="Cut-offs, comma separated (default: evaluation.k, 1,3,5,10,100)."),
        click.option("--search-mode", type=click.Choice(["vector", "fts", "hybrid"]), help="Default: search.mode."),
        click.option("--embedder", help="provider:name, e.g. ollama:nomic-embed-text (default: embeddings.model)."),
        click.option("--qa-model", help="provider:name for the QA agent, e.g. ollama:qwen3, or 'embedded'."),
        click.option("--judge", "judge_model", help="provider:name for the LLM judge, e.g. ollama:qwen3."),
        click.option("--concurrency", type=click.IntRange(min=1), help="Parallel cases (QA/judge calls)."),
        click.option("--split", help="Dataset split (BEIR qrels split; default test)."),
        click.option("--out", type=click.Path(path_type=Path),
                     help="Output folder (default runs/<name>-<timestamp>/); must be new or empty."),
        click.option("--resume", type=click.Path(path_type=Path),
                     help="Finish the interrupted run in this folder (same command and flags)."),
        click.option("--overwrite", is_flag=True, help="Replace the run in a non-empty --out folder."),
        click.option("--max-failures", default="0",
                     help="Cases that may fail (N or P%) before the exit code says so (default 0)."),
        click.option("--repeat", type=click.IntRange(min=1), default=1, help="Run every case N times."),
        click.option("--tags", help="Only the cases with any of these tags, comma separated."),
        click.option("--system", help="A system under test instead of the built-in pipeline: "
                                      "module:function or an http(s):// endpoint."),
        click.option("--json", "as_json", is_flag=True, help="Print summary.json to stdout."),
        click.option("--no-progress", is_flag=True, help="No progress bars."),
        click.option("--executor", help="Where cases and indexing embeddings run: local (default), ray (start or "
                                        "join a local Ray cluster) or ray:ADDRESS (default: executor)."),
        click.option("--no-cache", is_flag=True, help="Call the models again instead of reusing cached replies "
                                                      "(cache.enabled: false)."),
        click.option("--reference-free/--no-reference-free", "reference_free", default=None,
                     help="Run (or not) the reference-free judges: faithfulness, answer_relevance, "
                          "context_relevance (default: judge.reference_free, auto: all three, context "
                          "relevance only when the dataset has no relevance labels)."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def parse_ks(text: str) -> list[int]:
    """``--k 1,5,10`` -> [1, 5, 10] (sorted, unique, all positive)."""
    try:
        ks = sorted({int(part) for part in text.split(",") if part.strip()})
    except ValueError:
        ks = []
    if not ks or ks[0] < 1:
        raise EvaluationsError(f"--k {text!r} is not a list of positive integers", where="--k", fix="e.g. --k 1,5,10")
    return ks


def parse_judges(value: str) -> list[str]:
    """``--judges keyword,f1`` -> the names, each one of the judge registry (``judging.validation.registry.JUDGES``)."""
    import difflib

    from evaluations.judging.validation.registry import JUDGES

    known = JUDGES
    names = list(dict.fromkeys(n.strip() for n in value.split(",") if n.strip()))  # a judge named twice runs once
    unknown = [n for n in names if n not in known]
    if unknown or not names:
        meant = [f"{n} (did you mean {close[0]}?)" if (close := difflib.get_close_matches(n, known, n=1, cutoff=0.8))
                 else n for n in unknown]
        raise EvaluationsError(
            f"unknown judge(s) {', '.join(meant) or '(none given)'}",
            where="--judges",
            fix=f"choose from {','.join(known)}",
        )
    from evaluations.core.config import REFERENCE_FREE_ALIASES

    judged: dict[str, str] = {}  # the judge each name runs -> the first name given for it (a judge named by its
    for name in names:           # other name too, "groundedness" and "faithfulness", runs once)
        judged.setdefault(REFERENCE_FREE_ALIASES.get(name, name), name)
    return list(judged.values())
