"""Chunking, embedding and the LanceDB index (dense, BM25 and hybrid search)."""
