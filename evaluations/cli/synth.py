"""``evaluations synth CORPUS --n N``: write a labelled dataset file from a corpus with an LLM.

Exit codes: 0 when the file is written, also when fewer than N questions survived the filters before the corpus
(or ``--max-docs``) ran out: then a warning says so and the JSON summary's ``shortfall`` is N - kept; 2 for bad
input, an unreachable model, or no question kept at all (nothing is written then).
"""

from __future__ import annotations

import asyncio
import json
import statistics
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from evaluations.core.console import make_console
from evaluations.core.errors import EvaluationsError
from evaluations.core.progress import progress_bar
from evaluations.synth.core import EASY_OVERLAP, REASONS, SynthOptions, SynthResult

OUT_SUFFIXES = (".jsonl", ".json")
_CORPUS_SUFFIXES = (".gz", ".jsonl", ".json", ".csv", ".tsv", ".parquet")


def default_out(corpus: Path) -> Path:
    """``synth-<corpus name>.jsonl`` in the current folder (``corpus.jsonl.gz`` -> ``synth-corpus.jsonl``)."""
    name = corpus.resolve().name
    while name.lower().endswith(_CORPUS_SUFFIXES):
        name = name.rsplit(".", 1)[0]
    return Path(f"synth-{name or 'corpus'}.jsonl")


def _at_least(value: int | None, minimum: int, flag: str, example: str) -> None:
    if value is not None and value < minimum:
        raise EvaluationsError(f"{flag} {value} is below {minimum}", where=flag, fix=f"e.g. {flag} {example}")


def _check_out(out: Path, overwrite: bool) -> None:
    from evaluations.core.fsutil import check_writable_dir

    if not out.name.lower().endswith(OUT_SUFFIXES):
        raise EvaluationsError("the output file must end in .jsonl or .json", where=str(out),
                               fix="e.g. --out synth.jsonl")
    if out.is_dir():
        raise EvaluationsError("is a folder, expected a file name", where=str(out), fix="e.g. --out synth.jsonl")
    if out.exists() and not overwrite:
        raise EvaluationsError("the output file exists", where=str(out),
                               fix="choose another --out, or pass --overwrite to replace it")
    check_writable_dir(out.parent if str(out.parent) else Path("."))


def _documents(corpus: Path, min_doc_chars: int) -> list:
    from evaluations.datasets.generic import read_documents
    from evaluations.synth.core import sample_order

    if not corpus.exists():
        raise EvaluationsError("corpus not found", where=str(corpus),
                               fix="give a corpus file (JSONL/JSON/CSV rows id, text) or a folder of .txt/.md files")
    documents = read_documents(corpus)
    if not documents:
        raise EvaluationsError("the corpus has no documents", where=str(corpus), fix="add rows with 'id' and 'text'")
    if not sample_order(documents, 0, min_doc_chars):
        raise EvaluationsError(f"no document has {min_doc_chars} characters or more ({len(documents)} documents)",
                               where=str(corpus), fix="lower --min-doc-chars or use a corpus with longer documents")
    return documents


def _check_model(model_cfg: Any, config: Any) -> None:
    """The server answers and serves the model (``models.chat.check_model``), with this command's flag in the fix."""
    from evaluations.models.chat import check_model

    try:
        check_model(model_cfg, config, key="qa.model")
    except EvaluationsError as exc:
        raise EvaluationsError(exc.message, where=exc.where, fix=(exc.fix or "").replace("--qa-model", "--model")) \
            from None


def write_dataset(out: Path, records: list[dict[str, Any]]) -> None:
    """``records`` as JSONL (one per line) or a JSON array (by ``out``'s suffix), written atomically."""
    from evaluations.core.fsutil import atomic_write_text

    if out.name.lower().endswith(".json"):
        text = json.dumps(records, indent=2, ensure_ascii=False) + "\n"
    else:
        text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    atomic_write_text(out, text)


def summary_dict(result: SynthResult, options: SynthOptions, **context: Any) -> dict[str, Any]:
    """What ``--json`` prints: counts (every reason listed, 0 included), where they came from, time."""
    return {
        "requested": options.n, "kept": len(result.records), "shortfall": options.n - len(result.records),
        "tried": result.tried, "generated": result.generated,
        "dropped": {reason: result.dropped.get(reason, 0) for reason in REASONS},
        "stopped": result.stopped, "eligible_documents": result.eligible, **context,
        "seed": options.seed, "max_doc_chars": options.max_doc_chars, "min_doc_chars": options.min_doc_chars,
        "max_docs": options.doc_budget(), "concurrency": options.concurrency,
        "question_overlap": _overlap(result.overlaps),
        "output_modes": dict(result.modes), "tokens": result.tokens, "seconds": round(result.seconds, 2),
        "examples": result.examples,
    }


def _overlap(values: list[float]) -> dict[str, Any] | None:
    """Mean and median share of a kept question's keywords found in its passage (``core`` docstring)."""
    if not values:
        return None
    mean = statistics.fmean(values)
    return {"mean": round(mean, 4), "median": round(statistics.median(values), 4), "easy_above": EASY_OVERLAP,
            "easy": mean >= EASY_OVERLAP}


def show_summary(console: Console, summary: dict[str, Any]) -> None:
    table = Table(title=f"synth: {summary['kept']} of {summary['requested']} questions kept", show_header=False)
    for key in ("requested", "tried", "generated", "kept"):
        table.add_row(key, str(summary[key]))
    for reason, count in summary["dropped"].items():
        if count:
            table.add_row(f"dropped: {reason}", str(count))
    model = summary["model"]
    table.add_row("model", f"{model['provider']}:{model['name']}")
    if summary["question_overlap"]:
        table.add_row("question/passage overlap", f"{summary['question_overlap']['mean']:.2f} (mean)")
    table.add_row("seconds", f"{summary['seconds']:.1f}")
    console.print(table)
    for reason, shown in summary["examples"].items():
        first = shown[0]
        what = first.get("error") or f"Q: {first.get('question')!r} A: {first.get('answer')!r}"
        console.print(f"  e.g. {reason} ({first['doc_id']}): {what}", highlight=False, markup=False)


@click.command("synth")
@click.argument("corpus", type=click.Path(path_type=Path))
@click.option("--n", "n", type=int, required=True, help="Questions wanted.")
@click.option("--out", type=click.Path(path_type=Path),
              help="Dataset file to write, .jsonl or .json (default: synth-<corpus name>.jsonl).")
@click.option("--overwrite", is_flag=True, help="Replace an existing --out file.")
@click.option("--model", "model_ref", help="provider:name of the question writer, e.g. ollama:qwen3, or "
                                           "'embedded:qwen2.5-coder-0.5b' (default: qa.model).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the document sample and passages.")
@click.option("--max-doc-chars", type=int, default=2000, show_default=True,
              help="Characters of a document shown to the model (a passage of longer documents).")
@click.option("--min-doc-chars", type=int, default=200, show_default=True, help="Skip shorter documents.")
@click.option("--max-docs", type=int, help="Documents tried at most (default 3 x --n).")
@click.option("--concurrency", type=int, help="Parallel model calls (default evaluation.concurrency; embedded: 1).")
@click.option("--config", "config_path", type=click.Path(dir_okay=False), help="haiku.rag.yaml to use.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON to stdout.")
@click.option("--no-progress", is_flag=True, help="No progress bar.")
def synth_command(corpus: Path, n: int, out: Path | None, overwrite: bool, model_ref: str | None, seed: int,
                  max_doc_chars: int, min_doc_chars: int, max_docs: int | None, concurrency: int | None,
                  config_path: str | None, as_json: bool, no_progress: bool) -> None:
    """Write a labelled dataset from CORPUS (a corpus file or a folder of .txt/.md files): an LLM writes a question
    and its answer from each sampled document, which becomes the question's relevant document; unanswerable,
    trivial, vague and near-duplicate questions are dropped. Run the file with
    `evaluations run FILE --corpus CORPUS`."""
    from evaluations.core.config import load_config, parse_model_ref
    from evaluations.models.cache import call_stats, call_stats_line, reset_call_stats
    from evaluations.models.chat import build_model, describe_model, model_settings
    from evaluations.synth.core import synthesize
    from evaluations.synth.generate import QuestionWriter, build_synth_agent

    _at_least(n, 1, "--n", "50")
    _at_least(max_doc_chars, 100, "--max-doc-chars", "2000")
    _at_least(min_doc_chars, 1, "--min-doc-chars", "200")
    _at_least(max_docs, 1, "--max-docs", str(3 * n))
    _at_least(concurrency, 1, "--concurrency", "4")
    out = out or default_out(corpus)
    _check_out(out, overwrite)
    overrides: dict[str, Any] = {}
    if model_ref:
        ref = parse_model_ref(model_ref, flag="--model")
        overrides = {f"qa.model.{key}": value for key, value in ref.items()}
    config = load_config(config_path, overrides)
    model_cfg = config.qa.model
    documents = _documents(corpus, min_doc_chars)
    _check_model(model_cfg, config)
    if model_cfg.provider == "embedded":
        concurrency = 1  # one in-process generation at a time
    options = SynthOptions(n=n, seed=seed, max_doc_chars=max_doc_chars, min_doc_chars=min_doc_chars,
                           max_docs=max_docs, concurrency=concurrency or config.evaluation.concurrency)
    writer = QuestionWriter(build_synth_agent(build_model(model_cfg, config), model_settings(model_cfg)))
    console = make_console(stderr=True)
    reset_call_stats()
    with progress_bar(console, not no_progress) as progress:
        task = progress.add_task("questions kept", total=n)

        def advance(state: SynthResult) -> None:
            progress.update(task, completed=len(state.records),
                            description=f"questions kept ({state.tried} documents tried)")

        result = asyncio.run(synthesize(documents, writer, options, on_result=advance))
    summary = summary_dict(result, options, corpus=str(corpus), documents=len(documents), out=str(out),
                           model=describe_model(model_cfg, config), model_calls=call_stats())
    show_summary(console, summary)
    console.print(call_stats_line(summary["model_calls"]))
    if as_json:
        click.echo(json.dumps(summary, indent=2, default=str))
    if not result.records:
        raise EvaluationsError(f"no question survived the filters ({result.tried} documents tried, "
                               f"{result.generated} pairs generated); nothing written", where=str(corpus),
                               fix="see the dropped reasons above; try a larger model (e.g. --model "
                                   "embedded:qwen2.5-coder-0.5b, or a served one) or another --seed")
    write_dataset(out, result.records)
    if summary["shortfall"]:
        more = "raise --max-docs" if result.stopped == "max docs reached" else "use a larger corpus"
        console.print(f"[bold yellow]warning:[/] only {len(result.records)} of {n} questions kept "
                      f"({result.stopped}); {more} for more", highlight=False)
    overlap = summary["question_overlap"]
    if overlap and overlap["easy"]:
        console.print(f"[bold yellow]warning:[/] the kept questions reuse {overlap['mean']:.0%} of their keywords "
                      f"from their passage (>= {EASY_OVERLAP:.0%}): BM25 finds such questions easily, so this set "
                      "measures near-verbatim lookups more than real search; real queries share less (SciFact's "
                      "48%, RepliQA's 78%)", highlight=False)
    console.print(f"[green]wrote[/] {escape(str(out))} ({len(result.records)} questions); evaluate it with: "
                  f"evaluations run {escape(str(out))} --corpus {escape(str(corpus))}", highlight=False)


commands: list[click.Command] = [synth_command]
