"""OpenTelemetry export of a real run: the SDK's in-memory readers, and a real OTLP/HTTP receiver."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import numpy as np
import pytest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from evaluations.experiments.otel import export_run, export_run_if_configured


def test_metrics_and_span_in_memory(scifact_runs):
    run = scifact_runs["fts"]
    reader, spans = InMemoryMetricReader(), InMemorySpanExporter()
    tracers = TracerProvider()
    tracers.add_span_processor(SimpleSpanProcessor(spans))
    export_run(run, meter_provider=MeterProvider(metric_readers=[reader]), tracer_provider=tracers)
    points = {m.name: m.data.data_points for rm in reader.get_metrics_data().resource_metrics
              for sm in rm.scope_metrics for m in sm.metrics}
    summary = json.loads((run / "summary.json").read_text())
    for metric in ("ndcg@10", "p@5", "recall@5", "mrr@10"):
        (point,) = points["evaluations." + metric.replace("@", "_at_")]
        assert point.value == pytest.approx(summary["metrics"][metric])
        assert point.attributes["run"] == "scifact-fts" and point.attributes["search_mode"] == "fts"
    (p95,) = points["evaluations.latency_p95_ms"]
    assert p95.value == pytest.approx(summary["latency_ms"]["p95"])
    records = [json.loads(line) for line in (run / "cases.jsonl").read_text().splitlines()]
    by_stage = {p.attributes["stage"]: p for p in points["evaluations.latency"]}
    for stage in ("retrieve", "total"):
        values = [r["latency_ms"][stage] for r in records]
        assert by_stage[stage].count == len(values) and by_stage[stage].sum == pytest.approx(np.sum(values))
    assert points["evaluations.runs"][0].value == 1
    assert points["evaluations.case_failures"][0].value == summary["counts"]["failed"]
    (span,) = spans.get_finished_spans()
    assert span.name == "evaluations run" and span.attributes["metric.ndcg@10"] == pytest.approx(
        summary["metrics"]["ndcg@10"])
    assert (span.end_time - span.start_time) / 1e9 == pytest.approx(summary["run"]["seconds"], abs=1e-3)


def test_otlp_http_export_when_configured(scifact_runs, monkeypatch):
    received: dict[str, bytes] = {}

    class Receiver(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802
            received[self.path] = self.rfile.read(int(self.headers["Content-Length"]))
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.end_headers()

        def log_message(self, *args):
            pass

    server = HTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        assert export_run_if_configured(scifact_runs["fts"], env={}) is False  # nothing configured: no export
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{server.server_address[1]}")
        assert export_run_if_configured(scifact_runs["fts"]) is True
    finally:
        server.shutdown()
    metrics = ExportMetricsServiceRequest.FromString(received["/v1/metrics"])
    names = {m.name for rm in metrics.resource_metrics for sm in rm.scope_metrics for m in sm.metrics}
    assert {"evaluations.ndcg_at_10", "evaluations.latency", "evaluations.runs"} <= names
    traces = ExportTraceServiceRequest.FromString(received["/v1/traces"])
    assert [s.name for rs in traces.resource_spans for ss in rs.scope_spans for s in ss.spans] == ["evaluations run"]
