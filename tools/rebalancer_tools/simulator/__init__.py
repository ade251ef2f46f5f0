"""Trace-driven simulation of a HyperPod cluster under Kueue, comparing quota strategies (see docs/simulation.md)."""

from rebalancer_tools.simulator.engine import Failures, NodeEvent
from rebalancer_tools.simulator.metrics import StrategyResult, TeamResult
from rebalancer_tools.simulator.run import STRATEGIES, Scenario, run_strategy
from rebalancer_tools.simulator.teams import TeamSpec, default_teams, load_teams
from rebalancer_tools.simulator.trace import TraceJob, load_trace

__all__ = ["STRATEGIES", "Failures", "NodeEvent", "Scenario", "StrategyResult", "TeamResult", "TeamSpec",
           "TraceJob", "default_teams", "load_teams", "load_trace", "run_strategy"]
