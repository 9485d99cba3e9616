"""A person reads a sample of a run's answers; their labels correct the judges' figures.

``measures`` (what a label means, per measure, and the judge's prediction of it), ``design`` (which cases a person
reads: strata by the judge's certainty), ``estimate`` (stratified PPI++), ``labels`` (sheets and
``human_labels.jsonl``), ``corrected`` (``summary.json``'s ``corrected`` section and compare's paired difference).
"""
