"""The one Logger, Tracer and Metrics of the Lambda side. Service name, namespace and level come from the template's
Globals (POWERTOOLS_SERVICE_NAME, POWERTOOLS_METRICS_NAMESPACE, POWERTOOLS_LOG_LEVEL)."""

from __future__ import annotations

import logging

from aws_lambda_powertools import Logger, Metrics, Tracer

SERVICE = "hyperpod-rebalancer"
NAMESPACE = "HyperPodRebalancer"

# X-Ray patches every library it knows that is installed unless told which: requests and sqlite3 among them, which
# nothing here calls (boto3 goes through botocore; Slack and the Kueue API through http.client). Importing them to
# patch them cost every cold start ~30 ms.
PATCHED = ("botocore", "httplib")

logger = Logger(service=SERVICE)
tracer = Tracer(service=SERVICE, patch_modules=PATCHED)
metrics = Metrics(service=SERVICE, namespace=NAMESPACE)

# At DEBUG these libraries log whole request and response bodies: GetSecretValue's answer (the Slack signing secret,
# the webhook URL), the webhook's own address, SendTaskSuccess's task token. Whatever the function's log level, they
# log at INFO at most; the service's own logger carries what a person debugging needs.
BODY_LOGGERS = ("botocore", "boto3", "urllib3", "slack_sdk")
for _name in BODY_LOGGERS:
    _library = logging.getLogger(_name)
    _library.setLevel(max(_library.getEffectiveLevel(), logging.INFO))
