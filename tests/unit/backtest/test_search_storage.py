"""`recommend --storage URL` fails in one line (issue 25 item 7): a URL that does not parse, a database kind or
driver that is not installed, a database that cannot be opened. The password is never printed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from rebalancer.errors import InvalidInput, PermanentError
from rebalancer_tools.backtest.search import SearchSpec, check_storage, redacted, run_search
from rebalancer_tools.cli import cli

ROOT = Path(__file__).resolve().parents[3]
SECRET = "s3cret-pw"


@pytest.mark.parametrize(("url", "words"), [
    ("not a url", "not a database URL like sqlite:///study.db"),
    ("nosuchdb://u:s3cret-pw@host/db", "no database kind 'nosuchdb'"),
    ("postgresql+psycopg2://admin:s3cret-pw@127.0.0.1:1/db", "the driver for postgresql+psycopg2 is not installed"),
    ("mysql+pymysql://admin:s3cret-pw@127.0.0.1:1/db", "the driver for mysql+pymysql is not installed"),
])
def test_a_storage_url_that_cannot_work_is_refused_at_parse_time_in_one_line(url: str, words: str) -> None:
    with pytest.raises(InvalidInput, match=re.escape(words)) as e:
        check_storage(url)
    assert SECRET not in str(e.value)
    result = CliRunner().invoke(cli, ["recommend", "--storage", url, "--history", "h", "--policy", "p"])
    assert result.exit_code == 2
    assert "'--storage'" in result.stderr
    assert words in result.stderr
    assert SECRET not in result.output
    assert "Traceback" not in result.output


def test_a_sqlite_database_that_cannot_be_opened_is_one_permanent_error(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/missing/folder/study.db"
    assert check_storage(url) == url  # the driver is there; opening is the search's
    spec = SearchSpec(str(ROOT / "h"), str(ROOT / "p"), trials=1, jobs=1, storage=url,
                      journal_path=str(tmp_path / "j" / "study.journal"), study_name="s", seed=0)
    with pytest.raises(PermanentError, match=r"^--storage sqlite:///.*: unable to open database file$"):
        run_search(spec)


def test_redacted_hides_the_password() -> None:
    assert redacted(f"postgresql://admin:{SECRET}@db.example:5432/optuna") == \
        "postgresql://admin:***@db.example:5432/optuna"
    assert SECRET not in redacted(f"::{SECRET}")
