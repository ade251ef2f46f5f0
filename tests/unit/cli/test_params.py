"""Options bounded at parse time (issue 25): the values that used to pass (NaN, inf, superscript digits, 10**30
trials, an output folder that does not exist) are refused by click, with the option and the bound named, before
the command does any work; outputs are written atomically."""

from __future__ import annotations

import os
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from rebalancer_tools.cli import cli
from rebalancer_tools.cli.params import Number, OutputDir, OutputFile, Whole, atomic_output, whole

ROOT = Path(__file__).resolve().parents[3]
POLICY = str(ROOT / "examples/policy.yaml")


def refused(*args: str) -> str:
    """The one error of a command refused at parse time (click's usage error, exit 2)."""
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    return result.stderr


@pytest.mark.parametrize(("args", "option", "bound"), [
    (["recommend", "--guarantee-percentile", "nan"], "--guarantee-percentile", "from 0 to 100"),
    (["recommend", "--approval-percentile", "inf"], "--approval-percentile", "from 0 to 100"),
    (["recommend", "--search", "1" + "0" * 30], "--search", "1 to 10,000"),
    (["recommend", "--search", "²"], "--search", "ASCII digits"),
    (["recommend", "--seed", "1e3"], "--seed", "ASCII digits"),
    (["trace", "--load", "nan"], "--load", "from 0.01 to 10"),
    (["trace", "--days", "1e400"], "--days", "from 0.1 to 365"),
    (["simulate", "--controller-interval-minutes", "nan"], "--controller-interval-minutes", "from 1 to 10080"),
    (["simulate", "--controller-interval-minutes", "1e-9"], "--controller-interval-minutes", "from 1 to 10080"),
    (["simulate", "--apply-delay-minutes", "inf"], "--apply-delay-minutes", "from 0 to 1440"),
    (["simulate", "--node-mtbf-hours", "1e-12"], "--node-mtbf-hours", "from 1 to"),
    (["simulate", "--gpus", "0x10"], "--gpus", "ASCII digits"),
    (["apply", "--poll-interval", "-0"], "--poll-interval", "from 0.1 to 3600"),
    (["emulator", "--port", "٥٠٠٠"], "--port", "ASCII digits"),
])
def test_an_option_out_of_its_bounds_is_one_line_naming_option_and_bound(args: list[str], option: str,
                                                                         bound: str) -> None:
    err = refused(*args)
    assert f"'{option}'" in err
    assert bound in err


@pytest.mark.parametrize("text", ["nan", "NaN", "inf", "-inf", "1e400", "0x1p3", "1_0", "½", "١", "", " "])
def test_number_refuses_what_is_not_a_finite_decimal(text: str) -> None:
    with pytest.raises(click.BadParameter):
        Number(-1e9, 1e9).convert(text, None, None)


def test_number_and_whole_take_plain_decimals_within_bounds() -> None:
    assert Number(0, 100).convert(" 12.5 ", None, None) == 12.5
    assert Number(0, 100).convert("1e1", None, None) == 10.0
    assert Whole(1, 10).convert("+7", None, None) == 7
    assert whole("64", 1, 100) == 64
    assert whole("²", 1, 100) is None
    assert whole("101", 1, 100) is None
    with pytest.raises(click.BadParameter):
        Number(0, 1, lo_open=True).convert("0", None, None)


def test_simulate_pool_nodes_must_be_ascii_digits_within_the_bound(tmp_path: Path) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text("job_id,team,submit_s,duration_s,gpus\nj,a,0,10,1\n")
    for value in ("ml.p5.48xlarge=²", "ml.p5.48xlarge=1000000"):
        result = CliRunner().invoke(cli, ["simulate", "--trace", str(trace), "--pool", value])
        assert result.exit_code == 2
        assert result.stderr.startswith("error: --pool: must be TYPE=NODES with NODES a whole number from 1 to")


@pytest.mark.parametrize(("args", "option"), [
    (["usage", "--cluster", "c", "--policy", POLICY, "--plot", "{missing}/u.png"], "--plot"),
    (["recommend", "--history", "h", "--policy", POLICY, "-o", "{file}/p.yaml"], "--output"),
    (["simulate", "--trace", "t.csv", "--report", "{missing}/r"], "--report"),
    (["apply", "--cluster", "c", "--policy", POLICY, "--save-snapshot", "{folder}"], "--save-snapshot"),
    (["history", "export", "--cluster", "c", "--table", "t", "-o", "{missing}/x.jsonl"], "--output"),
])
def test_an_output_path_that_cannot_be_written_is_refused_before_any_work(tmp_path: Path, args: list[str],
                                                                          option: str) -> None:
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    where = {"missing": str(tmp_path / "missing"), "file": str(a_file), "folder": str(tmp_path)}
    err = refused(*[a.format(**where) for a in args])
    assert f"'{option}'" in err
    assert "cannot write" in err or "is a folder" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]


def test_output_types_accept_a_new_file_or_folder_in_an_existing_folder(tmp_path: Path) -> None:
    assert OutputFile().convert(str(tmp_path / "new.json"), None, None) == str(tmp_path / "new.json")
    assert OutputDir().convert(str(tmp_path / "report"), None, None) == str(tmp_path / "report")
    assert OutputDir().convert(str(tmp_path), None, None) == str(tmp_path)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes anywhere")
def test_a_read_only_folder_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        with pytest.raises(click.BadParameter, match="not writable"):
            OutputFile().convert(str(folder / "x"), None, None)
    finally:
        folder.chmod(0o700)


def test_atomic_output_replaces_the_file_whole_and_leaves_nothing_on_failure(tmp_path: Path) -> None:
    target = tmp_path / "out.txt"
    target.write_text("before\n")
    def fail_halfway() -> None:
        with atomic_output(target) as f:
            f.write("half")
            raise RuntimeError("the work failed")

    with pytest.raises(RuntimeError):
        fail_halfway()
    assert target.read_text() == "before\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]
    with atomic_output(target) as f:
        f.write("after\n")
    assert target.read_text() == "after\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]
    assert target.stat().st_mode & 0o777 == 0o666 & ~_umask()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_a_failed_history_export_leaves_no_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The issue's case: the export failed after opening its output and left an empty file."""
    from botocore.exceptions import ClientError

    from rebalancer_tools.cli import history_cmd

    class FailingAudit:
        def records(self, cluster: str) -> list[dict[str, object]]:
            raise ClientError({"Error": {"Code": "ResourceNotFoundException", "Message": "no table"}}, "Query")

    class FailingStore:
        table_name = "t"
        audit = FailingAudit()

    monkeypatch.setattr(history_cmd, "open_store", lambda *_args: FailingStore())
    out = tmp_path / "history.jsonl.gz"
    result = CliRunner().invoke(cli, ["history", "export", "--cluster", "c1", "--table", "t", "-o", str(out)])
    assert result.exit_code == 1
    assert result.stderr.startswith("error: reading the table t: ResourceNotFoundException: no table")
    assert list(tmp_path.iterdir()) == []
