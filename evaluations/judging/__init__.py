"""Judge logic without pydantic-evals, in rooms that say what they are (lowest first; a room imports only the rooms
before it):

* ``basics``: text normalisation and keywords, the English lexicon, question forms, ``Passage``, one model-backed
  verdict, shipped files, fitted parameters files;
* ``correctness``: verdicts against gold answers (the non-answer screen, lexical, semantic, offline, LLM);
* ``checkers``: the P(yes) backends the reference-free judges ask (embedded, served);
* ``grounded``: reference-free verdicts (faithfulness, context relevance, answer relevance, grounding);
* ``labels``: labelled rows of every format the project reads;
* ``validation``: agreement, controls, calibration, refits, held-out splits.

The verdict makers (``basics`` … ``grounded``) never import ``labels`` or ``validation``. Nothing is imported or
loaded here.
"""
