"""The judges' shared vocabulary: text normalisation and keywords (``text``), the ``Passage`` a reference-free judge reads, one model-backed verdict (``grade``), the files shipped in ``judges/`` (``shipped``) and reading a fitted judge's parameters file (``fitted``).

Nothing is imported or loaded here."""
