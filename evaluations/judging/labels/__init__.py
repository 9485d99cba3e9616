"""Labelled rows: every format the project accepts (classic, EVOUNA, weak-system hand labels, faithfulness and context-relevance hand labels, passage rows, dataset rows with gold answers), read into ``LabelledAnswer``s and ``QAItem``s. Verdict makers never import this package.

Nothing is imported or loaded here."""
