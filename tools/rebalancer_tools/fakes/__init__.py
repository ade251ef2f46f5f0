"""Stand-ins the local stack, the sandbox and the tests share: a loopback HTTP server, the Kubernetes API with
Kueue objects, the table's repositories in memory, a ticking clock, an API Gateway HTTP API event."""
