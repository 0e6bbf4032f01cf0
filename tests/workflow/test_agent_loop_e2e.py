"""What a good agent does, with no configuration, in the real container (issue 19).

Reproduce with a heredoc script, fix with a multi-line ``sed -i``, add a regression test, run the
tests, clean up the scratch file with ``rm``, restore a file with ``git checkout --``, finish:
every call is allowed by the default preset, and the patch holds the fix and the new test only.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest

from sandbox_agent.agent.trace import ObservationEvent, PolicyDecisionEvent, read_trace
from tests.workflow.helpers import FINISH, bash, demo_repo, fix

pytestmark = pytest.mark.docker

REPRO = (
    "cat <<'EOF' > repro.py\n"
    "from kvparse import parse_records\n"
    "got = parse_records('name = demo\\nsize = 3')\n"
    "assert got == {'name': 'demo', 'size': '3'}, got\n"
    "EOF\n"
    "python repro.py"
)
FIX = (
    "sed -i -e '/lines = text.split/d' \\\n"
    "  -e 's/for line in lines\\[:-1\\]:/for line in text.splitlines():/' \\\n"
    "  kvparse/parser.py"
)
REGRESSION = (
    "cat > tests/test_regression.py <<'EOF'\n"
    "from kvparse import parse_records\n\n\n"
    "def test_a_last_line_without_a_newline_is_kept():\n"
    "    assert parse_records('a = 1\\nb = 2') == {'a': '1', 'b': '2'}\n"
    "EOF"
)
GOOD_AGENT: list[Mapping[str, object]] = [
    bash("git status && ls"),
    bash(REPRO),
    bash("python3 -c 'import kvparse, sys; print(kvparse.__file__, sys.version)'"),
    bash("sed -n '1,20p' kvparse/parser.py"),
    bash(FIX),
    bash("python repro.py && echo reproduced-no-more"),
    bash(REGRESSION),
    bash("python -m pytest -q 2>&1 | tail -5"),
    bash("echo scratch >> README.md && git diff --stat"),
    bash("git checkout -- README.md"),
    bash("rm repro.py && rm -r __pycache__ kvparse/__pycache__ 2>/dev/null; git status --short"),
    bash("cat /proc/self/status | head -3 && id && ls /usr/lib | head -3"),
    FINISH,
]


def test_a_good_agents_loop_runs_with_no_configuration(
    tmp_path: Path, workspace_root: Path, docker_client: object
) -> None:
    repo = demo_repo(tmp_path)
    record = fix(tmp_path, repo, workspace_root, *GOOD_AGENT)

    events = read_trace(Path(record.trace_path)).events
    decisions = [e for e in events if isinstance(e, PolicyDecisionEvent)]
    refused = [d.decision for d in decisions if d.decision.decision != "allow"]
    assert refused == []
    assert len(decisions) == len(GOOD_AGENT) - 1
    shown = "\n".join(e.content.text or "" for e in events if isinstance(e, ObservationEvent))
    assert "AssertionError" in shown  # the reproduction failed before the fix
    assert "reproduced-no-more" in shown

    assert record.exit_reason == "finished", record.error
    assert record.gate_passed
    evidence = record.gate_history[-1].evidence
    assert evidence is not None
    assert evidence.new_test_files == ("tests/test_regression.py",)  # shown for review
    assert evidence.strength == "strong"  # the baseline's own failing test passes now
    assert "tests.test_parser::test_last_line_without_newline_is_kept" in evidence.fail_to_pass
    patch = Path(record.patch_path).read_text()
    assert "+    for line in text.splitlines():" in patch
    assert "tests/test_regression.py" in patch
    assert "repro.py" not in patch.replace("test_regression.py", "")
    assert "README.md" not in patch
    assert "scratch" not in patch
