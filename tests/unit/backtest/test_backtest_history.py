"""The history file: what export writes, backtest reads back; a malformed or cut export is one line naming where."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from rebalancer.errors import InvalidInput
from rebalancer_tools.backtest import synthetic as syn
from rebalancer_tools.backtest.history import load_history, parse_lines
from rebalancer_tools.cli import cli


def steady(team: str, _at: object) -> tuple[float, float]:
    return (8.0, 0.0) if team == "a" else (0.0, 4.0)


@pytest.fixture
def history_file(tmp_path: Path) -> Path:
    return syn.write(syn.history(steady, {"a": 8, "b": 8}, nodes=2, days=0.25), tmp_path / "history.jsonl")


@pytest.fixture
def policy_file(tmp_path: Path) -> Path:
    p = tmp_path / "current.yaml"
    p.write_text("teams:\n  a: {}\n  b: {}\n")
    return p


def backtest(history: Path, policy: Path) -> tuple[int, str]:
    got = CliRunner().invoke(cli, ["backtest", "--history", str(history), "--policy", str(policy)])
    return got.exit_code, got.output


def test_what_is_written_reads_back_the_same(history_file: Path) -> None:
    h = syn.history(steady, {"a": 8, "b": 8}, nodes=2, days=0.25)
    back = load_history(history_file)
    assert back.samples == h.samples
    assert back.cluster == "backtest"
    assert back.runs == ()


def test_a_malformed_line_is_exit_2_naming_the_line(history_file: Path, policy_file: Path) -> None:
    lines = history_file.read_text().splitlines()
    lines[2] = lines[2].replace('"in_use":8.0', '"in_use":-8.0')
    history_file.write_text("\n".join(lines) + "\n")
    code, out = backtest(history_file, policy_file)
    assert code == 2
    assert out.startswith(f"error: {history_file} line 3: teams.a.ml.p5.48xlarge.in_use: ")
    assert len(out.strip().splitlines()) == 1


def test_an_export_cut_mid_line_is_exit_2_naming_the_line(history_file: Path, policy_file: Path) -> None:
    text = history_file.read_text()
    history_file.write_text(text[: len(text) // 2])
    n = history_file.read_text().count("\n") + 1
    code, out = backtest(history_file, policy_file)
    assert code == 2
    assert f"line {n}: not valid JSON" in out
    assert "truncated" in out


def test_an_export_cut_at_a_line_boundary_is_exit_2(history_file: Path, policy_file: Path) -> None:
    lines = history_file.read_text().splitlines()
    history_file.write_text("\n".join(lines[:-1]) + "\n")
    code, out = backtest(history_file, policy_file)
    assert code == 2
    assert f"truncated after line {len(lines) - 1}: no end record" in out


@pytest.mark.parametrize(("first", "message"), [
    ('{"type": "sample"}', "line 1: type: the first line must be the history header"),
    ("[1, 2]", "line 1: type: the first line must be the history header"),
])
def test_a_file_that_is_not_an_export_names_line_1(first: str, message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        parse_lines([first], "f.jsonl")


def test_an_unknown_record_type_and_a_wrong_count_are_named() -> None:
    head = '{"type": "history", "format": 1, "cluster": "c"}'
    with pytest.raises(InvalidInput, match=r"f line 2: type: expected history, run, sample or end"):
        parse_lines([head, '{"type": "metering"}'], "f")
    with pytest.raises(InvalidInput, match="the end record counts 1 runs and 0 samples, the file holds 0 and 0"):
        parse_lines([head, '{"type": "end", "runs": 1, "samples": 0}'], "f")


def test_a_missing_file_is_exit_2(tmp_path: Path, policy_file: Path) -> None:
    code, out = backtest(tmp_path / "nope.jsonl", policy_file)
    assert code == 2
    assert "cannot read file" in out


def test_a_gzipped_export_reads_back_the_same_and_is_smaller(history_file: Path, tmp_path: Path) -> None:
    h = syn.history(steady, {"a": 8, "b": 8}, nodes=2, days=0.25)
    packed = syn.write(h, tmp_path / "history.jsonl.gz")
    assert packed.read_bytes()[:2] == b"\x1f\x8b"
    assert packed.stat().st_size * 5 < history_file.stat().st_size
    assert load_history(packed) == load_history(history_file)
    renamed = packed.rename(tmp_path / "history.jsonl")  # told by its bytes, not its name
    assert load_history(renamed).samples == h.samples


@pytest.mark.parametrize(("cut", "message"), [(10, "the gzip stream is cut short"),
                                              (None, "cannot read file: ")])
def test_a_broken_gzip_export_is_exit_2(history_file: Path, policy_file: Path, tmp_path: Path,
                                        cut: int | None, message: str) -> None:
    packed = syn.write(syn.history(steady, {"a": 8, "b": 8}, nodes=2, days=0.25), tmp_path / "h.jsonl.gz")
    data = packed.read_bytes()
    packed.write_bytes(data[:cut] if cut else data[:2] + b"\x00" * 20)
    code, out = backtest(packed, policy_file)
    assert code == 2
    assert message in out
    assert len(out.strip().splitlines()) == 1
