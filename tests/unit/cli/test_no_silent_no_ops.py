"""What used to say nothing: a simulated policy that names none of the trace's teams, a job larger than the
cluster, a drift figure that is a whole number printed as 32.0."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from rebalancer_tools.cli import cli
from rebalancer_tools.reports.drift import Drift

ROOT = Path(__file__).resolve().parents[3]
TRACE = "job_id,team,submit_s,duration_s,gpus\nj1,alpha,0,3600,8\nj2,beta,60,3600,8\nhuge,beta,120,3600,64\n"


def simulate(tmp_path: Path, *extra: str) -> tuple[int, str, str]:
    trace = tmp_path / "trace.csv"
    trace.write_text(TRACE)
    got = CliRunner().invoke(cli, ["simulate", "--trace", str(trace), "--gpus", "16", "--strategies",
                                   "builtin,rebalancer", "--no-progress", *extra])
    return got.exit_code, got.stdout, got.stderr


def test_a_policy_naming_none_of_the_trace_teams_and_a_job_that_never_fits_are_warned(tmp_path: Path) -> None:
    code, _, err = simulate(tmp_path, "--policy", str(ROOT / "examples/policy.yaml"))
    assert code == 0, err
    warnings = [line for line in err.splitlines() if line.startswith("warning: ")]
    assert warnings == [
        "warning: the policy names none of the trace's teams (alpha, beta; the policy has inference, research, "
        "speech, vision): the rebalancer strategy plans them with default weights, so it shows what builtin shows",
        "warning: 1 job(s) ask for more accelerators than ml.p5.48xlarge has (16): they never run (largest: huge, "
        "64)"]


def test_a_policy_naming_the_teams_is_not_warned(tmp_path: Path) -> None:
    policy = tmp_path / "p.yaml"
    policy.write_text("teams:\n  alpha: {weight: 1}\n  beta: {weight: 1}\n")
    code, _, err = simulate(tmp_path, "--policy", str(policy))
    assert code == 0, err
    assert "names none of the trace's teams" not in err


def test_whole_numbers_show_as_integers() -> None:
    line = Drift("research", "ComputeQuotaResources.ml.p5.48xlarge.VCpu", 32.0, 48.5).line()
    assert line == "research: ComputeQuotaResources.ml.p5.48xlarge.VCpu: cluster 32 ≠ policy 48.5"
