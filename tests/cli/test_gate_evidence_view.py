"""``show`` and the HTML report say which rule judged and what each test did."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from sandbox_agent.cli.views import gates_view
from sandbox_agent.review.report import _evidence
from sandbox_agent.types import GateEvidence, GateOutcome
from tests.cli.records import make_run

EVIDENCE = GateEvidence(
    rule="proof",
    proven_by_new_tests=("tests.test_add::test_add",),
    new_test_files=("tests/test_add.py",),
    changed_test_files=("tests/test_calc.py",),
    pre_existing=("tests.test_calc::test_prints",),
    flaky=("tests.test_timing::test_fast",),
    broken=(),
    pass_to_pass=3,
    strength="model_tests",
)


def test_show_names_the_rule_and_each_kind_of_test(tmp_path: Path) -> None:
    outcome = GateOutcome(phase="finish", passed=True, attempt=1, evidence=EVIDENCE)
    record = make_run(tmp_path, "r1", gate_history=(outcome,)).read_record()
    console = Console(width=200, record=True)
    console.print(gates_view(record))
    text = console.export_text()
    assert "evidence: rule proof, 0 fail-to-pass, 3 pass-to-pass" in text
    assert "proven by the model's new tests (review them): tests.test_add::test_add" in text
    assert "pre-existing failures: tests.test_calc::test_prints" in text
    assert "flaky: tests.test_timing::test_fast" in text
    assert "new test files: tests/test_add.py" in text
    assert "changed test files (originals judged): tests/test_calc.py" in text


def test_the_report_names_the_rule_and_each_kind_of_test() -> None:
    html = _evidence(EVIDENCE)
    assert "rule <b>proof</b>" in html
    assert "strength <b>model_tests</b>" in html
    assert "<code>tests.test_add::test_add</code>" in html
    assert "pre-existing failures (not blocking)" in html
    assert "<code>tests/test_add.py</code>" in html
