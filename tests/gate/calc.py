"""The project the gate's proof tests judge: ``calc.py``, whose ``add`` subtracts (fakes).

``calc_sandbox`` writes it with the test files a module chooses; ``calc_gate`` puts a gate over
it that judges in a clean copy and protects ``tests/``.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from sandbox_agent.gate.completion import CompletionGate
from sandbox_agent.settings.tree import GateSection
from sandbox_agent.types import Finish, GateVerdict
from tests.fakes import TempDirSandbox

BUGGY = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"
FIXED = BUGGY.replace("a - b", "a + b")
FINISH = Finish(answer="done", call_id="f1")


def calc_sandbox(tmp_path: Path, files: dict[str, str]) -> TempDirSandbox:
    """A workspace with the buggy ``calc.py`` and ``files`` (path: text)."""
    ws = tmp_path / "ws"
    (ws / "tests").mkdir(parents=True)
    (ws / "calc.py").write_text(BUGGY)
    for name, text in files.items():
        (ws / name).write_text(text)
    return TempDirSandbox(ws)


def calc_gate(
    sandbox: TempDirSandbox,
    test_command: str,
    config: dict[str, object],
    *,
    cores: float | None = None,
    log_path: Path | None = None,
) -> CompletionGate:
    """A gate running ``test_command`` (five attempts unless ``config`` says otherwise)."""
    settings: dict[str, object] = {"test_command": test_command, "max_attempts": 5}
    settings.update(config)
    return CompletionGate(
        sandbox,
        GateSection.model_validate(settings),
        is_protected=lambda path: path.startswith("tests/"),
        judge=lambda patch: contextlib.closing(sandbox.clean_copy(patch)),
        cores=cores,
        log_path=log_path,
    )


def failed(verdict: GateVerdict) -> dict[str, str]:
    """The failed checks of ``verdict``, by name, with their details."""
    return {c.name: c.detail for c in verdict.checks if not c.passed}
