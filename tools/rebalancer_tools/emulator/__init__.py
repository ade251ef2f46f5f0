"""A HyperPod task-governance emulator on moto: compute quotas and cluster scheduler configs with AWS's
server-side rules, an invariant monitor, fault injection and cluster controls. See `control.Emulator`."""

from rebalancer_tools.emulator.control import DEFAULT_ACCOUNT, DEFAULT_REGION, Emulator, GroupSpec
from rebalancer_tools.emulator.demo_cluster import DEMO, DemoSpec, DemoTeam, SeededDemo, seed_demo
from rebalancer_tools.emulator.faults import FaultKind, FaultRule
from rebalancer_tools.emulator.install import install
from rebalancer_tools.emulator.invariant import Excess, InvariantRecord

__all__ = [
    "DEFAULT_ACCOUNT",
    "DEFAULT_REGION",
    "DEMO",
    "DemoSpec",
    "DemoTeam",
    "Emulator",
    "Excess",
    "FaultKind",
    "FaultRule",
    "GroupSpec",
    "InvariantRecord",
    "SeededDemo",
    "install",
    "seed_demo",
]
