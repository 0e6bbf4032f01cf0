"""The test command the environment runs: the next candidate when pytest refuses one."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from sandbox_agent.env.choose import FIRST_TEST, choose, collect_command, runs_pytest
from sandbox_agent.env.node import node_steps

MANGLED = "python -m pytest -q ' /tests'"
PLAIN = "python -m pytest -q"


class Container:
    """A fake build container: which programs exist, and pytest's exit per command."""

    def __init__(self, programs: set[str], exits: dict[str, tuple[int, str]]) -> None:
        self.programs = programs
        self.exits = exits
        self.short_exits: dict[str, tuple[int, str]] = {}
        """Where the collection ended at the first test says otherwise."""
        self.ran: list[str] = []

    def __call__(self, command: str) -> tuple[int, str]:
        self.ran.append(command)
        if command.startswith("command -v "):
            return (0 if command.split()[-1] in self.programs else 1), ""
        for candidate, result in self.exits.items():
            if f"timeout 300 {candidate} --collect-only" in command:
                short = f"-p {FIRST_TEST}" in command
                return self.short_exits.get(candidate, result) if short else result
        return 0, "3 tests collected"


def test_a_usage_error_tries_the_next_candidate_and_says_so() -> None:
    container = Container(
        {"python"}, {MANGLED: (4, "ERROR: file or directory not found:  /tests\n")}
    )
    choice = choose((MANGLED, PLAIN), container)
    assert choice.command == PLAIN
    assert choice.notes == [
        f"test command `{MANGLED}`: a usage error (pytest exit 4): ERROR: file or directory not "
        "found:  /tests; trying the next candidate",
        f"test command: `{PLAIN}` (pytest collects its tests)",
    ]


def test_nothing_collected_tries_the_next_and_a_collection_error_is_kept() -> None:
    container = Container({"python"}, {"python -m pytest -q docs": (5, "no tests ran in 0.1s")})
    choice = choose(("python -m pytest -q docs", "python -m pytest -q tests"), container)
    assert choice.command == "python -m pytest -q tests"
    broken = Container({"python"}, {PLAIN: (2, "ERROR collecting tests/test_x.py")})
    assert choose((PLAIN, "python3 -m pytest -q"), broken).command == PLAIN  # the baseline's


def test_a_kept_command_is_asked_once_ended_at_its_first_test() -> None:
    container = Container({"python"}, {PLAIN: (0, "")})
    assert choose((PLAIN,), container).command == PLAIN
    probes = [c for c in container.ran if "--collect-only" in c]
    assert probes == [collect_command(PLAIN, first_test=True)]
    assert probes[0].endswith(f"-p {FIRST_TEST}")


def test_a_refusal_of_the_short_collection_is_asked_again_of_the_whole() -> None:
    """The plugin not loading (an interpreter that ignores PYTHONPATH) must not refuse a command."""
    container = Container({"python"}, {PLAIN: (0, "")})
    container.short_exits[PLAIN] = (4, "ImportError while loading plugin")
    choice = choose((PLAIN, "python3 -m pytest"), container)
    assert choice.command == PLAIN
    assert choice.notes == []
    assert container.ran[-1] == collect_command(PLAIN, first_test=False)
    refused = Container({"python"}, {MANGLED: (4, "ERROR: file or directory not found:  /tests")})
    choice = choose((MANGLED, PLAIN), refused)
    assert choice.command == PLAIN
    assert "ERROR: file or directory not found" in choice.notes[0]  # the whole collection's words


def _probe(command: str, cwd: Path) -> int:
    return subprocess.run(["bash", "-c", command], cwd=cwd, capture_output=True).returncode


def test_real_pytest_stops_collecting_at_the_first_test_and_still_refuses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the environment's real pytest: collection ends at the first test, refusals stand."""
    monkeypatch.setattr("sandbox_agent.env.choose.FIRST_TEST_DIR", str(tmp_path / "plugin"))
    project = tmp_path / "project"
    (project / "tests").mkdir(parents=True)
    (project / "tests" / "test_a.py").write_text("def test_one():\n    pass\n")
    later = project / "imported"
    (project / "tests" / "test_b.py").write_text(
        f"open({str(later)!r}, 'w').close()\n\ndef test_two():\n    pass\n"
    )
    pytest_command = f"{sys.executable} -m pytest -q tests"
    assert _probe(collect_command(pytest_command, first_test=True), project) == 0
    assert not later.exists()  # the second module was never imported
    assert _probe(collect_command(pytest_command, first_test=False), project) == 0
    assert later.exists()
    missing = f"{sys.executable} -m pytest -q no-such-dir"
    assert _probe(collect_command(missing, first_test=True), project) == 4
    (project / "tests" / "test_a.py").unlink()
    (project / "tests" / "test_b.py").unlink()
    assert _probe(collect_command(pytest_command, first_test=True), project) == 5


def test_every_candidate_refused_keeps_the_first_for_the_baseline_to_name() -> None:
    container = Container({"python"}, {MANGLED: (4, ""), PLAIN: (5, "")})
    choice = choose((MANGLED, PLAIN), container)
    assert choice.command == MANGLED
    assert choice.notes[-1] == f"no candidate collected tests; kept `{MANGLED}`"


def test_a_missing_program_is_passed_over_and_other_runners_are_not_probed() -> None:
    container = Container({"npm"}, {})
    choice = choose(("tox -e py", "npm test"), container)
    assert choice.command == "npm test"
    assert choice.missing == ["tox"]
    assert not any("--collect-only" in c for c in container.ran)
    assert not runs_pytest("npm test")
    assert runs_pytest("/opt/venv/bin/python -m pytest -q")


# vercel/ms package.json: a packageManager pin whose @pnpm/exe the registry does not serve.
MS_PACKAGE = {
    "name": "ms",
    "packageManager": "pnpm@10.14.0-0+sha512.2cd47a0cbf5f1d1de7693a88307a0ede5be94e0d3b34853d8",
    "scripts": {"test": "pnpm run test:nodejs && pnpm run test:edge"},
    "devDependencies": {"jest": "30.0.5"},
}


def test_an_unservable_pnpm_pin_falls_back_to_pnpm_unpinned_then_npm(tmp_path: Path) -> None:
    repo = tmp_path
    (repo / "pnpm-lock.yaml").write_text("lockfileVersion: '9.0'\n")
    steps, inputs = node_steps(repo, MS_PACKAGE)
    install = steps[-1]
    assert inputs == ["package.json", "pnpm-lock.yaml"]
    first, unpinned, npm = install.command.split(" || { echo ")
    assert first.endswith("pnpm install --frozen-lockfile; }")
    assert "trying pnpm@10 unpinned (package.json pins packageManager pnpm@10.14.0-0)" in unpinned
    assert "npm install -g -q pnpm@10" in unpinned
    assert "npm_config_manage_package_manager_versions=false pnpm install" in unpinned
    assert "trying npm from package.json" in npm
    assert "npm install --no-save" in npm
    assert install.why == (
        "pnpm-lock.yaml: pnpm's frozen install; if it fails: pnpm@10 unpinned (package.json pins "
        "packageManager pnpm@10.14.0-0); then npm from package.json (the lock file is not npm's)"
    )
    unpinned_package = {k: v for k, v in MS_PACKAGE.items() if k != "packageManager"}
    plain = node_steps(repo, unpinned_package)[0][-1].command
    assert " || " not in plain.split("npm install -g -q pnpm)")[1]  # no pin: as before


def test_npm_ci_falls_back_to_npm_install_when_it_refuses_the_lock(tmp_path: Path) -> None:
    (tmp_path / "package-lock.json").write_text("{}")
    package = {"devDependencies": {"karma": "^6.3.16"}}
    install = node_steps(tmp_path, package)[0][-1]
    first, then = install.command.split(" || { echo ")
    assert first == "cd /workspace && { npm ci; }"
    assert "that install (package-lock.json: npm ci installs exactly the lock) failed" in then
    assert then.endswith(
        "npm install --no-save; } && rm -rf /node_modules && mv node_modules /node_modules"
    )
    assert install.why.startswith(
        "package-lock.json: npm ci installs exactly the lock; if it fails"
    )
