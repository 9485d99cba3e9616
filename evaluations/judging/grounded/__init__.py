"""Reference-free verdicts (no gold answer): faithfulness (with its claim splitter and the rules for comparisons, pairs and choices), context relevance, answer relevance, grounding measures.

Nothing is imported or loaded here."""
