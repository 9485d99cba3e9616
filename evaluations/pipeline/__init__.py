"""One run: the typed plan, the pydantic-evals task (System -> answer), the QA agent and its context, the runner
(evaluate, resume)."""
