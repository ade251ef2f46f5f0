"""The sandbox's controller thread stops cleanly on every supported Python: before 3.13 threading.Thread calls a
method `_stop` of its own when a thread ends, and a subclass that named its Event so made Ctrl-C print a 63-line
traceback on 3.11 and 3.12. Each interpreter found here runs the thread and stops it as the sandbox does on Ctrl-C;
`make test-install` stops a whole installed sandbox with SIGINT on 3.11, 3.12 and 3.13."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
STOP = """
import sys
try:
    from rebalancer_tools.local.sandbox_controller import _RunEnds
except ModuleNotFoundError as e:  # this interpreter lacks the package's dependencies
    print("missing", e.name); sys.exit(0)

class Controller:
    def deliver_run_ends(self): pass

ends = _RunEnds(Controller())
ends.start()
ends.stop()
assert not ends.is_alive()
print("stopped")
"""


def interpreter(minor: int) -> str | None:
    """A python3.`minor` as `make` finds one (scripts/find-python), None where it falls back to another."""
    if sys.version_info[:2] == (3, minor):
        return sys.executable
    found = subprocess.run([ROOT / "scripts/find-python", str(minor)], capture_output=True, text=True, timeout=30)
    return found.stdout.strip() if found.returncode == 0 and not found.stderr else None


@pytest.mark.parametrize("minor", [11, 12, 13])
def test_the_run_ends_thread_stops_without_a_traceback(minor: int) -> None:
    python = interpreter(minor)
    if python is None:
        pytest.skip(f"no python3.{minor} here")
    pythonpath = f"{ROOT / 'layers/core'}:{ROOT / 'tools'}"
    done = subprocess.run([python, "-c", STOP], capture_output=True, text=True, timeout=60,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": pythonpath})
    if done.stdout.startswith("missing"):
        pytest.skip(f"python3.{minor} here lacks {done.stdout.split()[1]}")
    assert (done.returncode, done.stdout, done.stderr) == (0, "stopped\n", "")
