"""Tools that check a judge: agreement with labels, controls (non-answers a judge must reject), calibration and refits, held-out splits, the shipped validation file. Verdict makers never import this package.

Nothing is imported or loaded here."""
