"""A HyperPod task-governance emulator on moto: compute quotas and cluster scheduler configs with AWS's
server-side rules, an invariant monitor, fault injection and cluster controls. See `control.Emulator`."""

from rebalancer.emulator.control import DEFAULT_ACCOUNT, DEFAULT_REGION, Emulator, GroupSpec
from rebalancer.emulator.demo import DEMO, DemoSpec, DemoTeam, SeededDemo, seed_demo
from rebalancer.emulator.faults import FaultKind, FaultRule
from rebalancer.emulator.install import install
from rebalancer.emulator.invariant import Excess, InvariantRecord

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
