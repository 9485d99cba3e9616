"""Answer judges: is a generated answer correct, given gold answers? And how well does a judge agree with humans?

text (normalisation, keywords) -> lexical (keyword overlap, token F1, EM, containment), semantic (MiniLM cosine)
-> offline (calibrated logistic regression; params in ``judges/offline_judge.json``, fitted by ``calibrate``)
-> evaluators (pydantic-evals case and report evaluators); data + agreement (labelled answers, statistics) -> cli.
Nothing is imported or loaded here.
"""
