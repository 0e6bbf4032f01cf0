"""A suite whose outcomes run to many megabytes is judged as any other.

pypa/packaging's 62,416 tests stream about 28 MB of outcomes to the gate's channel (three
phases a test, long parametrized ids); at an 8 MiB bound the channel overflowed and its right
fix was refused ("the outcome channel overflowed"). Here 1,200 tests whose ids are 3 KB each
stream over 10 MB.
"""

from __future__ import annotations

from pathlib import Path

from sandbox_agent.gate.testrun import MAX_REPORT_BYTES
from tests.gate.calc import FINISH, FIXED, calc_gate, calc_sandbox, failed

MANY = (
    "import calc\nimport pytest\n\n\n"
    "@pytest.mark.parametrize('name', [f'{i}-' + 'x' * 3000 for i in range(1200)])\n"
    "def test_named_at_length(name):\n    assert name\n\n\n"
    "def test_add():\n    assert calc.add(1, 2) == 3\n"
)


def test_a_fix_in_a_suite_with_megabytes_of_outcomes_is_accepted(tmp_path: Path) -> None:
    assert 1200 * 3 * 3000 > 8 << 20  # over the old bound
    assert MAX_REPORT_BYTES > 2 * 1200 * 3 * 3100  # and well under this one
    sandbox = calc_sandbox(tmp_path, {"tests/test_many.py": MANY})
    gate = calc_gate(sandbox, "python -m pytest -q", {})
    base = gate.run_baseline()
    assert base.report is not None
    assert len(base.report.ids) == 1201
    assert [f.id for f in base.report.failures] == ["tests.test_many::test_add"]
    sandbox.write_file("calc.py", FIXED)
    verdict = gate.check(FINISH)
    assert verdict.passed, failed(verdict)
