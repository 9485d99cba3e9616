"""``evaluations synth``: a labelled dataset written by an LLM from a corpus (``core``), filtered offline
(``filters``), generated through structured output (``generate``), run from the command line (``cli``)."""
