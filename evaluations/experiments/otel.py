"""OpenTelemetry export of a finished run, read from its run folder.

When an OTLP endpoint is configured (the standard ``OTEL_EXPORTER_OTLP_ENDPOINT`` or the per-signal
``OTEL_EXPORTER_OTLP_METRICS_ENDPOINT`` / ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``; headers, protocol and
timeouts from the other ``OTEL_EXPORTER_OTLP_*`` variables, read by the OTLP/HTTP exporters themselves),
``export_run_if_configured(out_dir)`` sends:

- a gauge per run-level metric (``measures.run_values``): ``evaluations.<metric>`` with ``@`` spelled
  ``_at_`` (OpenTelemetry instrument names allow no ``@``): ``evaluations.ndcg_at_10``, ``evaluations.p_at_5``,
  ``evaluations.mrr_at_10``, ``evaluations.latency_p95_ms``, ``evaluations.tokens_per_query`` …;
- a histogram ``evaluations.latency`` (ms) with one observation per case and stage (attribute ``stage``);
- counters ``evaluations.runs`` (+1), ``evaluations.case_failures`` (cases whose system failed),
  ``evaluations.qa_failures`` (cases whose answer failed);
- one span ``evaluations run`` over the run's wall time, the metrics as attributes.

The SDK and the exporters are the optional ``otel`` extra (``pip install 'evaluations[otel]'``): with an endpoint
configured and the extra missing, a run fails before any work (``check_export``), one error naming the extra.

Every point carries ``run``, ``dataset``, ``search_mode`` and ``embedder``. The spans pydantic-evals makes
during a run go through logfire-api: they are exported when the ``logfire`` package is installed and
``instrument_pydantic_evals()`` ran first (it configures logfire to send to the OTLP endpoint, not to the
Logfire service).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from evaluations.core.extras import require
from evaluations.results.measures import run_values
from evaluations.results.rundata import RunData, load_run

OTLP_VARIABLES = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
                  "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
SERVICE_NAME = "evaluations"


def otlp_configured(env: Mapping[str, str] | None = None) -> bool:
    env = os.environ if env is None else env
    return any(env.get(name) for name in OTLP_VARIABLES)


def check_export(env: Mapping[str, str] | None = None) -> None:
    """With an OTLP endpoint configured, the ``otel`` extra is installed (else one EvaluationsError naming it):
    called before a run does any work, so the export after it cannot fail for want of a package."""
    env = os.environ if env is None else env
    variable = next((name for name in OTLP_VARIABLES if env.get(name)), None)
    if variable is not None:
        require("otel", "the OpenTelemetry export of the run", where=f"environment variable {variable}",
                otherwise=f"unset {variable}")


def instrument_name(metric: str) -> str:
    """``ndcg@10`` -> ``evaluations.ndcg_at_10`` (instrument names: letters, digits, ``_ . - /``)."""
    return "evaluations." + metric.replace("@", "_at_")


def _attributes(run: RunData) -> dict[str, str]:
    info = run.summary.run
    return {"run": run.name, "dataset": str(run.dataset.name or ""),
            "search_mode": str(info.search_mode or ""), "embedder": str(info.embedder or "")}


def _span_times(run: RunData) -> tuple[int | None, int | None]:
    info = run.summary.run
    try:
        start = datetime.fromisoformat(info.started).timestamp()  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None, None
    return int(start * 1e9), int((start + float(info.seconds or 0.0)) * 1e9)


def export_run(out_dir: str | Path | RunData, *, meter_provider: Any, tracer_provider: Any = None) -> dict[str, Any]:
    """Record the run's metrics (and span, with ``tracer_provider``) on the given providers; returns the values."""
    run = out_dir if isinstance(out_dir, RunData) else load_run(out_dir)
    attrs = _attributes(run)
    meter = meter_provider.get_meter("evaluations")
    values = run_values(run)
    for metric, value in values.items():
        meter.create_gauge(instrument_name(metric), description=f"{metric} of the run").set(value, attrs)
    latency = meter.create_histogram("evaluations.latency", unit="ms", description="per-case latency by stage")
    failures = qa_failures = 0
    for record in run.records:
        failures += record.status == "failed"
        qa_failures += record.qa.status == "failed"
        if record.status == "failed":
            continue
        for stage, ms in record.latency_ms.items():
            latency.record(float(ms), {**attrs, "stage": stage})
    meter.create_counter("evaluations.runs", description="finished runs").add(1, attrs)
    meter.create_counter("evaluations.case_failures", description="cases whose system failed").add(failures, attrs)
    meter.create_counter("evaluations.qa_failures", description="cases whose answer failed").add(qa_failures, attrs)
    if tracer_provider is not None:
        start, end = _span_times(run)
        span = tracer_provider.get_tracer("evaluations").start_span(
            "evaluations run", start_time=start,
            attributes={**attrs, "run_dir": str(run.path), "cases": len(run.cases), "case_failures": failures,
                        **{f"metric.{k}": v for k, v in values.items()}})
        span.end(end_time=end)
    return values


def export_run_if_configured(out_dir: str | Path | RunData, env: Mapping[str, str] | None = None) -> bool:
    """Export the run over OTLP/HTTP when an endpoint is configured; flushes before returning. False otherwise."""
    if not otlp_configured(env):
        return False
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    resource = Resource.create({"service.name": SERVICE_NAME})
    meters = MeterProvider(resource=resource, metric_readers=[PeriodicExportingMetricReader(OTLPMetricExporter())])
    tracers = TracerProvider(resource=resource)
    tracers.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    try:
        export_run(out_dir, meter_provider=meters, tracer_provider=tracers)
    finally:
        meters.shutdown()  # exports what was recorded
        tracers.shutdown()
    return True


def instrument_pydantic_evals() -> bool:
    """Send pydantic-evals' own spans to the OTLP endpoint (needs the optional ``logfire`` package)."""
    if not otlp_configured():
        return False
    try:
        import logfire
    except ImportError:
        return False
    logfire.configure(send_to_logfire=False, service_name=SERVICE_NAME, console=False)
    return True
