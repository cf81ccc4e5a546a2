"""Prometheus metrics (one registry per app, so several apps in one process do not collide)."""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram


@dataclass
class Metrics:
    registry: CollectorRegistry
    requests: Counter
    latency: Histogram
    jobs: Gauge
    job_pages: Gauge
    pages_indexed: Counter
    answers: Counter
    fallbacks: Counter
    model_calls: Counter
    rejected: Counter
    queue_depth: Gauge
    batch_size: Histogram

    @classmethod
    def create(cls) -> Metrics:
        r = CollectorRegistry()
        return cls(
            r,
            Counter("trident_requests", "HTTP requests", ["method", "route", "status"], registry=r),
            Histogram("trident_request_seconds", "HTTP request latency", ["route"], registry=r,
                      buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)),
            Gauge("trident_jobs", "Jobs by state", ["state"], registry=r),
            Gauge("trident_job_pages", "Pages of queued/running jobs: done and total", ["kind"], registry=r),
            Counter("trident_pages_indexed", "Pages indexed by jobs", registry=r),
            Counter("trident_answers", "Answers by mode (model profile or no-model strategy)", ["mode"], registry=r),
            Counter("trident_rerank_fallbacks", "Reranks that fell back to the pool order", registry=r),
            Counter("trident_model_calls", "Model calls made by verification", registry=r),
            Counter("trident_queue_rejections", "Requests refused with 429: model queue full", registry=r),
            Gauge("trident_model_queue", "Asks/verifies admitted (running or waiting)", registry=r),
            Histogram("trident_model_batch_size", "Chat requests the engine works on together: in the async "
                      "engine as each is added, or per call of a batched engine",
                      ["role"], registry=r, buckets=(1, 2, 4, 8, 16, 32, 64, 128)),
        )
