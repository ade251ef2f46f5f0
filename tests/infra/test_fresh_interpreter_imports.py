"""What a module loads, seen from a fresh interpreter (a subprocess each: infra checks, run by `make test`, not by
`make test-fast`)."""

from __future__ import annotations

import subprocess
import sys


def test_a_catalog_lookup_loads_no_sdk() -> None:
    """The catalog is data: a fresh interpreter looks a type up without importing botocore or the tools."""
    code = ("import sys; from rebalancer import catalog; catalog.spec('ml.p5.48xlarge'); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('botocore', 'boto3', 'rebalancer_tools')))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == "[]"


def test_jinja2_is_imported_only_when_a_page_is_rendered() -> None:
    """The review page module is on RequestApproval's import path; the template engine is not."""
    code = ("import sys, rebalancer.app.review_page as p; assert 'jinja2' not in sys.modules; "
            "p.message_page('t', 'x'); assert 'jinja2' in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)
