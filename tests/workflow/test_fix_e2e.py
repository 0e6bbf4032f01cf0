"""The fix workflow end to end: real Docker, real policy, real gate, scripted model."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sandbox_agent.agent.trace import read_trace
from sandbox_agent.errors import EnvBuildError
from sandbox_agent.run.artifacts import RunDir
from sandbox_agent.run.execute import Run
from tests.workflow.helpers import FINISH, FIX_EDIT, bash, demo_repo, fix, git, tree_hashes

pytestmark = pytest.mark.docker


def failed_checks(record_path: Path) -> list[list[str]]:
    record = RunDir(record_path).read_record()
    return [
        [c.name for c in g.checks if not c.passed]
        for g in record.gate_history
        if g.phase == "finish"
    ]


def test_premature_finish_rejected_then_fix_accepted_and_repo_untouched(
    tmp_path: Path, workspace_root: Path, docker_client: object
) -> None:
    repo = demo_repo(tmp_path)
    before = tree_hashes(repo)

    record = fix(
        tmp_path, repo, workspace_root, bash("python -m pytest -q"), FINISH, FIX_EDIT, FINISH
    )

    assert record.exit_reason == "finished"
    assert record.gate_passed
    assert record.steps == 4
    assert failed_checks(Path(record.run_dir)) == [["diff", "proof"], []]
    assert tree_hashes(repo) == before
    patch = Path(record.patch_path).read_text()
    assert "+    for line in text.splitlines():" in patch
    # The patch applies to a fresh copy, where the tests then pass.
    fresh = tmp_path / "fresh"
    shutil.copytree(repo, fresh)
    subprocess.run(["git", "apply"], cwd=fresh, input=patch, text=True, check=True)
    tests = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=fresh,
        capture_output=True,
        text=True,
    )
    assert tests.returncode == 0, tests.stdout
    events = [e.event_type for e in read_trace(Path(record.trace_path)).events]
    assert events[0] == "run_started"
    assert events[1] == "gate_result"  # the baseline, before the first model turn
    assert events[-1] == "run_finished"


def test_protected_test_changed_through_bash_is_rejected(
    tmp_path: Path, workspace_root: Path, docker_client: object
) -> None:
    repo = demo_repo(tmp_path)
    sneaky = {
        "type": "tool_call",
        "tool_name": "write_file",
        "arguments": {
            "path": "kvparse/__init__.py",
            "content": (
                "from pathlib import Path\n"
                "Path('tests/test_parser.py').write_text('def test_ok():\\n    pass\\n')\n"
                "from kvparse.parser import parse_records\n"
            ),
        },
    }
    record = fix(
        tmp_path, repo, workspace_root, sneaky, bash("python -m pytest -q"), FINISH, max_steps=3
    )
    assert not record.gate_passed
    assert record.exit_reason == "max_steps_exceeded"
    # The model may change test files in its workspace, but the gate judges the baseline's
    # tests from their originals, in a copy where the test files are read-only mounts: the
    # write at import fails there, so the import (and every test) fails.
    assert "regressions" in failed_checks(Path(record.run_dir))[0]
    log = (Path(record.run_dir) / "gate.log").read_text()
    assert "Read-only file system" in log


def unprotected_tests_repo(tmp_path: Path) -> Path:
    """The demo project with its tests in checks/, which no default protect glob covers."""
    repo = demo_repo(tmp_path)
    (repo / "checks").mkdir()
    (repo / "tests" / "test_parser.py").rename(repo / "checks" / "check_parser.py")
    (repo / "tests").rmdir()
    (repo / "pyproject.toml").write_text(
        '[tool.pytest.ini_options]\ntestpaths = ["checks"]\npython_files = ["check_*.py"]\n'
    )
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "tests in checks/")
    return repo


@pytest.mark.parametrize(
    ("command", "problem"),
    [
        (
            "sed -i '/^def test_bad_line/,$d' checks/check_parser.py",
            "test_bad_line_is_an_error (gone)",
        ),
        (
            r"sed -i 's/^def test_bad_line/@pytest.mark.skip\ndef test_bad_line/' "
            "checks/check_parser.py",
            "test_bad_line_is_an_error (newly skipped)",
        ),
    ],
    ids=["deleted", "skipped"],
)
def test_weakened_tests_whatever_their_names_are_judged_from_their_originals(
    tmp_path: Path, workspace_root: Path, docker_client: object, command: str, problem: str
) -> None:
    """A collected test module is a test file whatever its name: the original judges."""
    repo = unprotected_tests_repo(tmp_path)
    policy = tmp_path / "mine.toml"
    policy.write_text(
        'extends = "python"\n[gate]\ntest_command = "python -m pytest -q"\nmax_attempts = 1\n'
    )
    record = fix(
        tmp_path, repo, workspace_root, bash(command), FINISH, policy_file=policy, max_steps=3
    )
    assert not record.gate_passed  # the weakened test proves nothing, breaks nothing
    assert failed_checks(Path(record.run_dir)) == [["proof"]]
    last = RunDir(Path(record.run_dir)).read_record().gate_history[-1]
    assert last.evidence is not None
    assert last.evidence.changed_test_files == ("checks/check_parser.py",)
    assert problem.split(" (")[0] not in " ".join(last.evidence.broken)
    fixed = fix(
        tmp_path,
        repo,
        workspace_root,
        FIX_EDIT,
        bash(command),
        FINISH,
        policy_file=policy,
    )
    assert fixed.gate_passed  # the fix is real: the original tests say so


def gate_policy(tmp_path: Path, test_command: str, *, timeout_s: int) -> Path:
    """The user's own policy file (trusted to set the test command): one gate attempt."""
    policy = tmp_path / "mine.toml"
    policy.write_text(
        f'extends = "python"\n[gate]\ntest_command = "{test_command}"\n'
        f"timeout_s = {timeout_s}\nmax_attempts = 1\n"
    )
    return policy


def test_gate_timeout_is_a_rejection(
    tmp_path: Path, workspace_root: Path, docker_client: object
) -> None:
    repo = demo_repo(tmp_path)
    # Quick at the baseline (a suite that outlives the timeout there is a broken baseline, no
    # run at all); with the fix, the tests hang past the timeout.
    hangs_when_fixed = "if grep -q splitlines kvparse/parser.py; then sleep 30; fi"
    policy = gate_policy(tmp_path, hangs_when_fixed, timeout_s=1)
    record = fix(tmp_path, repo, workspace_root, FIX_EDIT, FINISH, policy_file=policy)
    assert record.exit_reason == "budget_exceeded"
    assert failed_checks(Path(record.run_dir)) == [["tests"]]
    assert "timed out" in (Path(record.run_dir) / "result.json").read_text()


def test_a_pinned_pytest_run_that_times_out_logs_its_output_not_the_gates_channel(
    tmp_path: Path, workspace_root: Path, docker_client: object
) -> None:
    """The pinned harness streams each outcome as a JSON line; a run cut short is told as one."""
    repo = demo_repo(tmp_path)
    policy = gate_policy(tmp_path, "python -m pytest -q", timeout_s=6)
    hang = bash(  # the first two tests' outcomes stream, then the third hangs
        "cat >> kvparse/parser.py <<'EOF'\n"
        "import time\n_calls, _parse = [0], parse_records\n\n\n"
        "def parse_records(text):\n    _calls[0] += 1\n"
        "    if _calls[0] > 2:\n        time.sleep(60)\n    return _parse(text)\nEOF"
    )
    record = fix(tmp_path, repo, workspace_root, FIX_EDIT, hang, FINISH, policy_file=policy)
    verdict = record.gate_history[-1]
    checks = {c.name: c.detail for c in verdict.checks if not c.passed}
    assert "timed out" in checks["tests"]
    assert checks["harness"] == "harness not recorded: the run timed out before pytest recorded it"
    log = Path(record.gate_log_path).read_text()
    last = log.rsplit("===== ", 1)[1]
    assert last.splitlines()[1].startswith("timed out after"), last[:500]
    assert '"t":"test"' not in log.replace(" ", ""), log[-2000:]  # no line of the channel


def test_empty_diff_is_rejected_and_max_attempts_end_the_run(
    tmp_path: Path, workspace_root: Path, docker_client: object
) -> None:
    repo = demo_repo(tmp_path)
    record = fix(tmp_path, repo, workspace_root, FINISH, FINISH, FINISH, FINISH)
    assert record.exit_reason == "budget_exceeded"
    assert not record.gate_passed
    assert record.steps == 3  # [gate] max_attempts = 3 in the demo's policy
    assert failed_checks(Path(record.run_dir)) == [["diff", "proof"]] * 3
    assert "rejected all 3 finish attempts" in (record.error or "")


@pytest.mark.parametrize(
    ("options", "reason"),
    [
        ({"max_steps": 2}, "max_steps_exceeded"),
        ({"max_tokens": 1500}, "budget_exceeded"),
    ],
    ids=["steps", "tokens"],
)
def test_budget_stops_leave_result_and_patch(
    tmp_path: Path,
    workspace_root: Path,
    docker_client: object,
    options: dict[str, object],
    reason: str,
) -> None:
    repo = demo_repo(tmp_path)
    usage = {"usage": {"prompt_tokens": 500, "completion_tokens": 200}}
    record = fix(
        tmp_path,
        repo,
        workspace_root,
        {**FIX_EDIT, **usage},
        bash("python -m pytest -q", **usage),
        {**FINISH, **usage},
        **options,
    )
    assert record.exit_reason == reason
    run_dir = RunDir(Path(record.run_dir))
    assert run_dir.read_record().status == "ended"
    assert "+    for line in text.splitlines():" in run_dir.patch_path.read_text()
    assert (
        record.usage.prompt_tokens + record.usage.completion_tokens <= 1500
        or reason != "budget_exceeded"
    )


def test_untrusted_repo_policy_cannot_change_the_test_command(
    tmp_path: Path, workspace_root: Path, docker_client: object
) -> None:
    repo = demo_repo(tmp_path)
    (repo / ".sandbox-agent.toml").write_text('extends = "python"\n[gate]\ntest_command = "true"\n')
    git(repo, "commit", "-qam", "an easier gate")
    warnings: list[str] = []
    record = fix(tmp_path, repo, workspace_root, FINISH, max_steps=1, warn=warnings.append)
    assert record.test_command == "python -m pytest -q"
    assert any("test_command" in w for w in warnings), warnings
    assert record.policy_warnings == tuple(warnings)


def test_setup_runs_with_network_then_the_agent_has_none_and_the_diff_excludes_it(
    tmp_path: Path, workspace_root: Path, docker_client: object
) -> None:
    repo = demo_repo(tmp_path)
    policy = tmp_path / "mine.toml"
    policy.write_text(
        'extends = "python"\n'
        "[environment]\n"
        f'setup = ["test -e /sys/class/net/eth0", "echo {tmp_path.name} > /opt/built.txt"]\n'
        "[paths]\n"
        'allow_outside = ["/sys/**", "/opt/**"]\n'
        "[gate]\n"
        'test_command = "python -m pytest -q"\n'
    )
    record = fix(
        tmp_path,
        repo,
        workspace_root,
        bash("ls /sys/class/net"),
        bash("cat /opt/built.txt"),
        FIX_EDIT,
        FINISH,
        policy_file=policy,
    )
    assert record.exit_reason == "finished", record.error
    observations = [
        e for e in read_trace(Path(record.trace_path)).events if e.event_type == "observation"
    ]
    texts = [o.content.text or "" for o in observations]
    assert texts[0].split("[stdout]\n")[1].split() == ["lo"]  # the agent has no network
    assert texts[1].split("[stdout]\n")[1].split() == [tmp_path.name]  # setup ran, in the image
    # every build log is in one place, beside the runs, and the record (and `show`) names it
    assert record.env_build_log == str(tmp_path / "env-logs" / f"{record.run_id}.log")
    assert "sandbox-agent-env:" in Path(record.env_build_log).read_text()  # built, or cached
    patch = Path(record.patch_path).read_text()
    assert "built.txt" not in patch
    assert "kvparse/parser.py" in patch


def test_failing_setup_stops_before_the_run_naming_the_step_and_its_log(
    tmp_path: Path, workspace_root: Path, docker_client: object
) -> None:
    repo = demo_repo(tmp_path)
    policy = tmp_path / "mine.toml"
    policy.write_text(
        'extends = "python"\n[environment]\nsetup = ["echo no such dependency >&2; exit 3"]\n'
    )
    with pytest.raises(EnvBuildError) as info:
        fix(tmp_path, repo, workspace_root, FINISH, policy_file=policy)
    message = str(info.value)
    assert "echo no such dependency >&2; exit 3" in message
    assert "no such dependency" in message
    assert info.value.log_path is not None
    assert "no such dependency" in info.value.log_path.read_text()
    assert info.value.log_path.parent == tmp_path / "env-logs"  # the one place of build logs
    assert not (tmp_path / "runs").exists()  # no run started: nothing was spent


def test_a_bug_before_the_loop_propagates_after_recording_internal_error(
    tmp_path: Path, workspace_root: Path, docker_client: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken_baseline(self: Run) -> None:
        raise ZeroDivisionError("a bug in setup")

    monkeypatch.setattr(Run, "_before_loop", broken_baseline)
    repo = demo_repo(tmp_path)
    with pytest.raises(ZeroDivisionError):
        fix(tmp_path, repo, workspace_root, FINISH)
    (run_dir,) = (tmp_path / "runs").iterdir()
    record = RunDir(run_dir).read_record()
    assert record.status == "ended"
    assert record.exit_reason == "internal_error"
    assert record.error == "ZeroDivisionError: a bug in setup"
    last = read_trace(run_dir / "trace.jsonl").events[-1]
    assert last.event_type == "run_finished"
    assert last.outcome.exit_reason == "internal_error"


def test_repo_listed_as_trusted_in_the_user_config_may_set_the_test_command(
    tmp_path: Path, workspace_root: Path, docker_client: object
) -> None:
    repo = demo_repo(tmp_path)
    (repo / ".sandbox-agent.toml").write_text(
        'extends = "python"\n[gate]\ntest_command = "python -m pytest -q tests"\n'
    )
    git(repo, "commit", "-qam", "own test command")
    config = tmp_path / ".config" / "sandbox-agent"  # HOME is tmp_path in fix()
    config.mkdir(parents=True)
    (config / "config.toml").write_text(f"trusted_repos = [{str(repo)!r}]\n")
    warnings: list[str] = []
    record = fix(tmp_path, repo, workspace_root, FINISH, max_steps=1, warn=warnings.append)
    assert record.test_command == "python -m pytest -q tests"
    assert warnings == []


def test_symlink_out_of_the_repo_is_refused_to_tools_and_commands(
    tmp_path: Path, workspace_root: Path, docker_client: object
) -> None:
    repo = demo_repo(tmp_path)
    # A link to a file: a link to a directory is a second top-level package to setuptools,
    # which then refuses the editable install of the environment (its cache key holds the tree).
    (repo / "leak.txt").symlink_to("/etc/passwd")
    git(repo, "add", "leak.txt")
    git(repo, "commit", "-qm", "a link out")
    read = {"type": "tool_call", "tool_name": "read_file", "arguments": {"path": "leak.txt"}}
    record = fix(
        tmp_path,
        repo,
        workspace_root,
        read,
        bash("cat leak.txt"),
        FINISH,
        max_steps=3,
        trace_content="full",
    )
    observations = [
        e for e in read_trace(Path(record.trace_path)).events if e.event_type == "observation"
    ]
    assert [o.observation.kind for o in observations[:2]] == ["policy_denied", "policy_denied"]
    assert all("root:" not in (o.content.text or "") for o in observations)


def test_wall_time_stop_leaves_result_and_patch(
    tmp_path: Path, workspace_root: Path, docker_client: object
) -> None:
    repo = demo_repo(tmp_path)
    # The wall clock counts from the start, the baseline's test run included: room for that on
    # a loaded machine, then a command that outlasts what is left.
    record = fix(tmp_path, repo, workspace_root, FIX_EDIT, bash("sleep 21"), FINISH, max_wall_s=20)
    assert record.exit_reason == "budget_exceeded"
    assert "max_wall_s" in (record.error or "")
    assert record.steps == 2  # the third model call is never made
    assert "+    for line in text.splitlines():" in Path(record.patch_path).read_text()


def test_what_the_gates_test_run_writes_never_reaches_the_patch(
    tmp_path: Path, workspace_root: Path, docker_client: object
) -> None:
    """The gate's test run leaves a file over the diff's size bound: in its clean copy only.

    Before the gate judged a clean copy, this file landed in the model's workspace after the
    verdict and cost the run its patch.
    """
    repo = demo_repo(tmp_path)
    record = fix(
        tmp_path,
        repo,
        workspace_root,
        FIX_EDIT,
        FINISH,
        test_cmd="python -m pytest -q && head -c 40000000 /dev/zero > big.bin",
    )
    assert record.exit_reason == "finished", record.error
    assert record.gate_passed
    assert record.changed_paths == ("kvparse/parser.py",)
    patch = Path(record.patch_path).read_text()
    assert "+    for line in text.splitlines():" in patch
    assert "big.bin" not in patch
    last = read_trace(Path(record.trace_path)).events[-1]
    assert last.event_type == "run_finished"
    assert last.outcome.exit_reason == "finished"
