"""Correctness verdicts against gold answers: the non-answer screen (``nonanswer``), lexical, semantic, the offline calibrated judge, the LLM judge (served, ``llm``; embedded, ``embedded``).

Nothing is imported or loaded here."""
