"""Trace-driven simulation of a HyperPod cluster under Kueue, comparing quota strategies (see docs/simulation.md)."""

from rebalancer.simulator.engine import Failures, NodeEvent
from rebalancer.simulator.metrics import StrategyResult, TeamResult
from rebalancer.simulator.run import STRATEGIES, Scenario, run_strategy
from rebalancer.simulator.teams import TeamSpec, default_teams, load_teams
from rebalancer.simulator.trace import TraceJob, load_trace

__all__ = ["STRATEGIES", "Failures", "NodeEvent", "Scenario", "StrategyResult", "TeamResult", "TeamSpec",
           "TraceJob", "default_teams", "load_teams", "load_trace", "run_strategy"]
