"""The gate's JUnit reader: the report is written by code the model can edit, so it is hostile."""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox_agent.gate.testrun import parse_junit, run_tests
from tests.fakes import TempDirSandbox

CASE = '<testsuites><testsuite><testcase classname="t" name="{name}">{body}</testcase>'
END = "</testsuite></testsuites>"


def junit(dtd: str, name: str = "a", body: str = "") -> str:
    return (
        f'<?xml version="1.0"?>\n<!DOCTYPE testsuites [{dtd}]>\n'
        + CASE.format(name=name, body=body)
        + END
    )


def billion_laughs() -> str:
    entities = ['<!ENTITY lol0 "lol">'] + [
        f'<!ENTITY lol{i} "{f"&lol{i - 1};" * 10}">' for i in range(1, 10)
    ]
    return junit("".join(entities), body="<failure>&lol9;</failure>")


def quadratic_blowup() -> str:
    """One 1 MB entity used 90 times: under expat's amplification limit, 90 MB once expanded."""
    return junit(f'<!ENTITY a "{"A" * 1_000_000}">', body=f"<failure>{'&a;' * 90}</failure>")


HOSTILE = {
    "billion laughs": billion_laughs(),
    "quadratic blowup": quadratic_blowup(),
    "external entity in text": junit(
        '<!ENTITY x SYSTEM "file:///etc/hostname">', body="<failure>&x;</failure>"
    ),
    "external entity in an attribute": junit(
        '<!ENTITY x SYSTEM "file:///etc/hostname">', name="&x;"
    ),
    "parameter entity": junit('<!ENTITY % p SYSTEM "http://127.0.0.1:9/x.dtd"> %p;'),
    "harmless-looking entity": junit('<!ENTITY e "ok">', name="&e;"),
}


@pytest.mark.parametrize("text", HOSTILE.values(), ids=HOSTILE.keys())
def test_reports_with_entities_are_refused_with_the_reason(text: str) -> None:
    with pytest.raises(ValueError, match="refused: the JUnit report declares a DTD"):
        parse_junit(text)


def test_plain_report_still_parses() -> None:
    report = parse_junit(CASE.format(name="ok", body="") + END)
    assert report.ids == frozenset({"t::ok"})


CONFTEST = """
from pathlib import Path

BOMB = {bomb!r}

def pytest_unconfigure(config):
    # After pytest wrote its report: replace it, as code the model wrote could.
    path = getattr(config.option, "xmlpath", None)
    if path:
        Path(path).write_text(BOMB)
"""


def test_a_bomb_written_by_the_tests_is_a_failed_run_not_a_crash(tmp_path: Path) -> None:
    sandbox = TempDirSandbox(tmp_path / "ws")
    (sandbox.root / "test_ok.py").write_text("def test_ok():\n    assert True\n")
    (sandbox.root / "conftest.py").write_text(CONFTEST.format(bomb=quadratic_blowup()))
    run = run_tests(sandbox, "python -m pytest -q", 120.0, "finish")
    assert run.result is not None
    assert run.result.exit_code == 0
    assert run.report is None
    assert not run.passed
    check = run.check()
    assert not check.passed
    assert "refused: the JUnit report declares a DTD" in check.detail
