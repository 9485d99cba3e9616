"""Dataset adapters on the real samples, and one clear error for malformed input."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from conftest import REPLIQA_20, REPLIQA_NEWS, SCIFACT, WIX_SAMPLE

from evaluations.datasets import DATASETS, LoadOptions, get_spec
from evaluations.core.errors import EvaluationsError


def test_registry_has_the_datasets():
    assert set(DATASETS) >= {"repliqa", "wix", "beir"}
    with pytest.raises(EvaluationsError, match="unknown dataset"):
        get_spec("msmarco")


def test_beir_scifact_full():
    corpus = get_spec("beir").load(LoadOptions(source=SCIFACT))
    assert len(corpus.documents) == 5183
    assert len(corpus.queries) == 300
    assert sum(len(q.relevant) for q in corpus.queries) == 339
    first = corpus.queries[0]
    assert first.id == "1" and first.relevant == {"31715818": 1}
    doc = next(d for d in corpus.documents if d.id == "31715818")
    assert doc.text.startswith(doc.title + "\n")
    train = get_spec("beir").load(LoadOptions(source=SCIFACT, split="train", limit=5))
    assert len(train.queries) == 5


def test_beir_keeps_graded_relevance(tmp_path):
    (tmp_path / "qrels").mkdir()
    (tmp_path / "corpus.jsonl").write_text(
        "\n".join(json.dumps({"_id": f"d{i}", "title": "", "text": f"text {i}"}) for i in range(3)) + "\n")
    (tmp_path / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "query"}) + "\n")
    (tmp_path / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td0\t2\nq1\td1\t1\nq1\td2\t0\n")
    corpus = get_spec("beir").load(LoadOptions(source=tmp_path))
    assert corpus.queries[0].relevant == {"d0": 2, "d1": 1, "d2": 0}


def _beir(tmp_path: Path, corpus_lines: list[str], qrels: str = "query-id\tcorpus-id\tscore\nq1\td0\t1\n") -> Path:
    (tmp_path / "qrels").mkdir(exist_ok=True)
    (tmp_path / "corpus.jsonl").write_text("\n".join(corpus_lines) + "\n")
    (tmp_path / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "query"}) + "\n")
    (tmp_path / "qrels" / "test.tsv").write_text(qrels)
    return tmp_path


@pytest.mark.parametrize("bad_line, message", [
    ('{"_id": "d1", "text": ', "not valid JSON"),
    ('{"title": "t", "text": "x"}', "missing or empty field '_id'"),
    ('{"_id": "d1", "text": ["a list"]}', "field 'text' must be str"),
    ('{"_id": "d0", "text": "dup"}', "duplicate document id 'd0'"),
])
def test_beir_malformed_corpus_row_names_file_line_field(tmp_path, bad_line, message):
    folder = _beir(tmp_path, [json.dumps({"_id": "d0", "text": "fine"}), bad_line])
    with pytest.raises(EvaluationsError) as info:
        get_spec("beir").load(LoadOptions(source=folder))
    text = info.value.render()
    assert f"{folder / 'corpus.jsonl'}:2" in text and message in text and "fix:" in text


def test_beir_qrels_errors(tmp_path):
    folder = _beir(tmp_path, [json.dumps({"_id": "d0", "text": "fine"})],
                   qrels="query-id\tcorpus-id\tscore\nq1\td0\t1\nq1\tmissing\t1\n")
    corpus = get_spec("beir").load(LoadOptions(source=folder))  # kept, as trec_eval keeps it, and said
    assert corpus.queries[0].relevant == {"d0": 1, "missing": 1}
    assert ["'missing'" in w and "not in corpus.jsonl" in w for w in corpus.warnings] == [True]
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td0\thigh\n")
    with pytest.raises(EvaluationsError, match=r"test.tsv:2.*'score' must be an integer"):
        get_spec("beir").load(LoadOptions(source=folder))
    with pytest.raises(EvaluationsError, match="(?s)no qrels for split 'dev'.*--split with one of \\['test'\\]"):
        get_spec("beir").load(LoadOptions(source=folder, split="dev"))
    with pytest.raises(EvaluationsError, match="not a folder"):
        get_spec("beir").load(LoadOptions(source=folder / "nope"))


def test_repliqa_news_sample():
    corpus = get_spec("repliqa").load(LoadOptions(source=REPLIQA_NEWS))
    assert len(corpus.documents) == 10 and len(corpus.queries) == 50
    assert {d.id for d in corpus.documents} >= {"mljudppg", "wnknrznz"}
    assert all(len(q.relevant) == 1 and next(iter(q.relevant)) in {d.id for d in corpus.documents}
               for q in corpus.queries)
    assert len(get_spec("repliqa").load(LoadOptions(source=REPLIQA_NEWS, limit=7)).queries) == 7


def test_repliqa_skips_unanswerable_before_limit():
    with gzip.open(REPLIQA_20, "rt") as handle:
        rows = [json.loads(line) for line in handle]
    unanswerable = [i for i, r in enumerate(rows) if r["answer"].strip().lower().startswith("the answer is not found")]
    assert len(unanswerable) == 2
    corpus = get_spec("repliqa").load(LoadOptions(source=REPLIQA_20))
    assert len(corpus.queries) == 18 and len(corpus.documents) == 20
    assert all(q.answers and q.answerable for q in corpus.queries)
    limited = get_spec("repliqa").load(LoadOptions(source=REPLIQA_20, limit=max(unanswerable) + 1))
    assert len(limited.queries) == max(unanswerable) + 1  # the limit counts answerable rows only


def test_repliqa_malformed_row(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps({"document_extracted": "text", "question": "q?", "answer": "a"}) + "\n"
                    + json.dumps({"document_extracted": "text", "answer": "a"}) + "\n")
    with pytest.raises(EvaluationsError, match=rf"{path}:2: missing or empty field 'question'"):
        get_spec("repliqa").load(LoadOptions(source=path))


def test_repliqa_parquet_export(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    with gzip.open(REPLIQA_NEWS, "rt") as handle:
        rows = [json.loads(line) for line in handle][:10]
    for i, row in enumerate(rows):
        row.update(document_topic="News Stories" if i < 8 else "Cybersecurity News", question_id=f"q{i}",
                   answer="x")
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "repliqa_3.parquet")
    corpus = get_spec("repliqa").load(LoadOptions(source=tmp_path / "repliqa_3.parquet"))
    assert [q.id for q in corpus.queries] == [f"q{i}" for i in range(8)]  # topic filter applied


def test_wix_sample():
    corpus = get_spec("wix").load(LoadOptions(source=WIX_SAMPLE))
    assert len(corpus.queries) == 160 and len(corpus.documents) == 173
    counts = sorted(len(q.relevant) for q in corpus.queries)
    assert counts.count(1) == 116 and counts.count(2) == 39 and counts.count(3) == 5
    assert all(q.answers for q in corpus.queries)


def test_wix_folder_export_and_missing_gold(tmp_path):
    with gzip.open(WIX_SAMPLE, "rt") as handle:
        rows = [json.loads(line) for line in handle][:5]
    articles = {c["id"]: c for r in rows for c in r["contexts"]}
    (tmp_path / "wix_kb_corpus.jsonl").write_text("".join(
        json.dumps({"id": a["id"], "title": a["title"], "contents": a["text"]}) + "\n" for a in articles.values()))
    (tmp_path / "wixqa_expertwritten.jsonl").write_text("".join(
        json.dumps({k: r[k] for k in ("question", "answer", "article_ids")}) + "\n" for r in rows))
    corpus = get_spec("wix").load(LoadOptions(source=tmp_path))
    assert len(corpus.queries) == 5 and len(corpus.documents) == len(articles)
    rows[2]["article_ids"] = ["not-an-article"]
    (tmp_path / "wixqa_expertwritten.jsonl").write_text("".join(
        json.dumps({k: r[k] for k in ("question", "answer", "article_ids")}) + "\n" for r in rows))
    with pytest.raises(EvaluationsError, match=r"wixqa_expertwritten.jsonl:3.*not in the corpus"):
        get_spec("wix").load(LoadOptions(source=tmp_path))


def test_hub_unreachable_is_one_clear_error(monkeypatch):
    import evaluations.datasets.spec as spec_module

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(spec_module, "_hub_unreachable", lambda *a, **k: "https://huggingface.co: ConnectError")
    with pytest.raises(EvaluationsError) as info:
        get_spec("repliqa").load(LoadOptions())
    text = info.value.render()
    assert "hf://ServiceNow/repliqa" in text and "--source" in text
