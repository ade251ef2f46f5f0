"""The SAM policy templates the IAM checks expand (rebalancer_tools.iam.policies) are SAM's own: compared with the
translator's policy_templates.json in the SAM virtualenv (`make sam-venv`)."""

from __future__ import annotations

import json

import pytest
from support import template as t

from rebalancer_tools.iam import policies

SAM_SITE = t.ROOT / ".venv-sam" / "lib"


def test_expansion_table_matches_the_sam_translator() -> None:
    found = sorted(SAM_SITE.glob("python3*/site-packages/samtranslator/policy_templates_data/policy_templates.json"))
    if not found:
        pytest.skip("no SAM virtualenv (make sam-venv)")
    sam = json.loads(found[0].read_text())["Templates"]
    for name, definition in policies.SAM_POLICY_TEMPLATES.items():
        assert definition == sam[name]["Definition"], name


def test_every_sam_policy_template_the_template_uses_is_in_the_table() -> None:
    used = set()
    for res in t.resources().values():
        for item in res.get("Properties", {}).get("Policies", []) or []:
            for branch in item.get("!If", [None, item, item])[1:] if isinstance(item, dict) else []:
                if isinstance(branch, dict):
                    used |= {k for k in branch if k.endswith("Policy")}
    assert used
    assert used <= set(policies.SAM_POLICY_TEMPLATES)
