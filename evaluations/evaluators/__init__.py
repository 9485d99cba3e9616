"""Every pydantic-evals Evaluator and ReportEvaluator: retrieval metrics, answer judges, context measures."""
