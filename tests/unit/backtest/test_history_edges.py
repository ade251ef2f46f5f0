"""History files through the one loader (issue 25 item 2): each case the issue found — Infinity, a naive time among
zoned ones, a pool that is no instance type, a record of another cluster, 10^8 nodes, a header and end with nothing
between, one 200 MB line of a small gzip — is one line naming the file's line, read in bounded memory."""

from __future__ import annotations

import gzip
import json
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from rebalancer.errors import InvalidInput
from rebalancer.parsing.loading import LINE_MAX_BYTES
from rebalancer_tools.backtest import synthetic as syn
from rebalancer_tools.backtest.history import load_history
from rebalancer_tools.cli import cli

ROOT = Path(__file__).resolve().parents[3]


def _lines(tmp_path: Path) -> tuple[Path, list[dict[str, Any]]]:
    path = syn.write(syn.history(lambda _team, _at: (8.0, 0.0), {"a": 8, "b": 8}, nodes=2, days=0.02),
                     tmp_path / "history.jsonl")
    return path, [json.loads(line) for line in path.read_text().splitlines()]


def _write(path: Path, docs: list[dict[str, Any]], raw: dict[int, str] | None = None) -> Path:
    text = [json.dumps(d) for d in docs]
    for i, line in (raw or {}).items():
        text[i] = line
    path.write_text("\n".join(text) + "\n")
    return path


P5 = "ml.p5.48xlarge"


@pytest.mark.parametrize(("edit", "words"), [
    (lambda d: d[2]["teams"]["a"][P5].update(in_use=1e400), f"line 3: teams.a.{P5}.in_use: must be a finite number"),
    (lambda d: d[2].update(at="2026-11-01T00:05:00"), "line 3: at: Input should have timezone info"),
    (lambda d: d[2]["teams"]["a"].update({"ml.nope.1xlarge": {"in_use": 1}}),
     "line 3: teams: unknown instance type 'ml.nope.1xlarge'"),
    (lambda d: d[2]["nodes"].update({"gpu-box": {"healthy": 1}}), "line 3: nodes: 'gpu-box' is not an instance type"),
    (lambda d: d[2]["nodes"]["ml.p5.48xlarge"].update(healthy=10**8), "line 3: nodes.ml.p5.48xlarge.healthy"),
    (lambda d: d[3].update(cluster="elsewhere"), "line 4: cluster: a sample of cluster 'elsewhere'"),
    (lambda d: d[3].update(cluster_arn="arn:aws:sagemaker:us-east-1:1:cluster/x"), "line 4: cluster_arn"),
    (lambda d: d[-1].update(runs=-1), "line 7: runs: Input should be greater than or equal to 0"),
])
def test_a_bad_record_is_one_line_naming_its_line(tmp_path: Path, edit: Any, words: str) -> None:
    path, docs = _lines(tmp_path)
    edit(docs)
    text = [json.dumps(d).replace("Infinity", "1e400") for d in docs]
    path.write_text("\n".join(text) + "\n")
    with pytest.raises(InvalidInput, match=words) as e:
        load_history(path)
    assert "\n" not in str(e.value)


def test_infinity_and_duplicate_keys_are_refused_like_in_every_document(tmp_path: Path) -> None:
    path, docs = _lines(tmp_path)
    line = json.dumps(docs[2]).replace('"in_use": 8.0', '"in_use": Infinity')
    with pytest.raises(InvalidInput, match=r"line 3: not valid JSON: 'Infinity is not a number JSON allows'$"):
        load_history(_write(path, docs, {2: line}))
    with pytest.raises(InvalidInput, match="line 3: at: duplicate key 'at'"):
        load_history(_write(path, docs, {2: json.dumps(docs[2])[:-1] + ', "at": "x"}'}))


def test_a_run_of_another_cluster_is_refused(tmp_path: Path) -> None:
    path, docs = _lines(tmp_path)
    snapshot = json.loads((ROOT / "examples/snapshot.json").read_text())
    run = {"type": "run", "execution": "other-1", "at": docs[1]["at"], "snapshot": snapshot}
    docs.insert(2, run)
    docs[-1]["runs"] = 1
    with pytest.raises(InvalidInput, match=r"line 3: cluster: a run of cluster '.*' in the history of 'backtest'"):
        load_history(_write(path, docs))


def test_a_header_and_end_alone_is_one_line_for_recommend_not_an_index_error(tmp_path: Path) -> None:
    path, docs = _lines(tmp_path)
    empty = _write(path, [docs[0], {"type": "end", "runs": 0, "samples": 0}])
    policy = tmp_path / "p.yaml"
    policy.write_text("teams:\n  a: {}\n")
    for command in ("recommend", "backtest"):
        result = CliRunner().invoke(cli, [command, "--history", str(empty), "--policy", str(policy),
                                          *(["-o", str(tmp_path / "r.yaml")] if command == "recommend" else [])])
        assert result.exit_code == 2, result.output
        assert "no runs and no samples of backtest: nothing to replay" in result.stderr


def test_one_huge_line_of_a_small_gzip_is_refused_in_bounded_memory(tmp_path: Path) -> None:
    _, docs = _lines(tmp_path)
    packed = tmp_path / "bomb.jsonl.gz"
    with gzip.open(packed, "wt") as f:
        f.write(json.dumps(docs[0]) + "\n")
        f.write('{"type": "sample", "pad": "')
        chunk = "x" * (1 << 20)
        for _ in range(200):  # a 200 MB line
            f.write(chunk)
        f.write('"}\n')
    assert packed.stat().st_size < 1 << 20
    tracemalloc.start()
    try:
        with pytest.raises(InvalidInput, match=f"line 2: longer than the limit of {LINE_MAX_BYTES:,} bytes"):
            load_history(packed)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 3 * LINE_MAX_BYTES  # the line is never held whole (200 MB)
