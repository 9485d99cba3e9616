"""The optional parts of the install: ``pip install 'evaluations[NAME]'`` (pyproject ``optional-dependencies``).

The default install runs every stage (its embedded defaults included); an extra adds what only some runs need.
A command that needs a missing one fails with one error naming it, before any work: ``require``.
"""

from __future__ import annotations

import importlib

from evaluations.core.errors import EvaluationsError

#: extra -> (what it provides, the modules it must make importable)
EXTRAS: dict[str, tuple[str, tuple[str, ...]]] = {
    "ray": ("Ray with Ray Data: ray[data]", ("ray", "ray.data")),
    "otel": ("the OpenTelemetry SDK and OTLP/HTTP exporter",
             ("opentelemetry.sdk.metrics", "opentelemetry.sdk.trace",
              "opentelemetry.exporter.otlp.proto.http.metric_exporter",
              "opentelemetry.exporter.otlp.proto.http.trace_exporter")),
}


def install_command(extra: str) -> str:
    return f"pip install 'evaluations[{extra}]'"


def require(extra: str, needed_by: str, *, where: str | None = None, otherwise: str | None = None) -> None:
    """Every module of ``extra`` imports, else one EvaluationsError: ``needed_by`` needs it, and the pip command
    that installs it (then ``otherwise``, another way out, when given)."""
    provides, modules = EXTRAS[extra]
    for module in modules:
        try:
            importlib.import_module(module)
        except ImportError as exc:
            missing = exc.name or module
            raise EvaluationsError(
                f"{needed_by} needs the optional '{extra}' extra ({provides}), which is not installed "
                f"(no module {missing!r})", where=where,
                fix=install_command(extra) + (f", or {otherwise}" if otherwise else "")) from None
