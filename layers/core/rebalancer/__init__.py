"""hyperpod-rebalancer: keeps SageMaker HyperPod task-governance compute quotas matched to demand."""

__version__ = "0.1.0"
