"""Adapters: the only code that does I/O (SageMaker, CloudWatch, EKS/Kueue). Everything they return is a model from
`rebalancer.models` or `rebalancer.adapters.outcomes`; every AWS error leaves them as a `rebalancer.errors` kind."""
