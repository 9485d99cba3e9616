"""Foundations every package may use: config, errors, environment variables, durable file writes, plain types,
consoles. Nothing here imports another package of evaluations."""
