"""The Lambda side: configuration, observability, the DynamoDB store, trigger events, approvals, notifications and
the services each handler calls (functions/<name>/app.py stay thin)."""
