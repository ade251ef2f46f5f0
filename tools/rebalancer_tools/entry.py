"""The `rebalancer` console script. It imports only the standard library before checking that the command line's
own packages are installed, so a missing [tools] extra is one line, not a ModuleNotFoundError traceback."""

from __future__ import annotations

import importlib.util
import sys

NEEDED = ("click", "rich")  # what every command imports; each command checks its own extras (cli/extras.py)
# The package is on no index: the extra comes from a checkout, as the README installs it.
INSTALL = ("from a checkout of hyperpod-rebalancer, pipx install --force --pip-args \"-c requirements/dev.lock\" "
           "'.[tools]' (README \"Install on a laptop\")")


def main() -> None:
    missing = [name for name in NEEDED if importlib.util.find_spec(name) is None]
    if missing:
        sys.stderr.write(f"error: the rebalancer command line needs {', '.join(missing)}, which the [tools] extra "
                         f"installs: {INSTALL}\n")
        raise SystemExit(2)
    from rebalancer_tools.cli import main as cli_main

    cli_main()
