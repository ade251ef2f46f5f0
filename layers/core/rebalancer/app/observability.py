"""The one Logger, Tracer and Metrics of the Lambda side. Service name, namespace and level come from the template's
Globals (POWERTOOLS_SERVICE_NAME, POWERTOOLS_METRICS_NAMESPACE, POWERTOOLS_LOG_LEVEL)."""

from __future__ import annotations

from aws_lambda_powertools import Logger, Metrics, Tracer

SERVICE = "hyperpod-rebalancer"
NAMESPACE = "HyperPodRebalancer"

logger = Logger(service=SERVICE)
tracer = Tracer(service=SERVICE)
metrics = Metrics(service=SERVICE, namespace=NAMESPACE)
