"""The trace keeps what happened (commands, outputs) with every secret redacted, everywhere."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sandbox_agent.cli.app import app
from sandbox_agent.cli.demo import DEMO_TASK
from sandbox_agent.run.runner import FixOptions, run_fix
from tests.workflow.helpers import FINISH, FIX_EDIT, bash, demo_repo, write_script

pytestmark = pytest.mark.docker

API_KEY = "sk-fake-key-0123456789abcdefXYZ"
BEARER = "abcdefghijklmnopqrstuvwx0123"
KEY_BODY = "b3BlbnNzaC1rZXktdjEAAAAABG5vbmU"
PASSWORD = "hunter2-correct-horse"
SECRETS = [API_KEY, base64.b64encode(API_KEY.encode()).decode().rstrip("="), BEARER, KEY_BODY]
SECRETS.append(PASSWORD)


def test_commands_stay_readable_and_no_secret_reaches_any_file(
    tmp_path: Path, workspace_root: Path
) -> None:
    encoded = base64.b64encode(API_KEY.encode()).decode()
    script = write_script(
        tmp_path / "script.jsonl",
        bash(f"echo PASSWORD={PASSWORD}"),
        bash(f"echo 'Authorization: Bearer {BEARER}'"),
        bash(
            "printf '%s\\n' '-----BEGIN OPENSSH PRIVATE KEY-----' "
            f"'{KEY_BODY}' '-----END OPENSSH PRIVATE KEY-----'"
        ),
        bash(f"echo the key is {API_KEY} or {encoded}"),
        FIX_EDIT,
        FINISH,
    )
    options = FixOptions(
        repo=demo_repo(tmp_path),
        task=f"{DEMO_TASK} (my password is PASSWORD={PASSWORD})",
        runs_dir=tmp_path / "runs",
        workspace_root=workspace_root,
        overrides={"--model": f"scripted:{script}"},
    )
    record = run_fix(options, {"HOME": str(tmp_path), "OPENAI_API_KEY": API_KEY})
    assert record.exit_reason == "finished", record.error

    run_dir = Path(record.run_dir)
    files = [p for p in run_dir.rglob("*") if p.is_file()]
    assert {p.name for p in files} >= {"result.json", "trace.jsonl", "gate.log", "patch.diff"}
    for path in files:
        data = path.read_bytes()
        for secret in SECRETS:
            assert secret.encode() not in data, (path.name, secret)

    commands = [
        e["call"]["arguments"]["command"]
        for e in map(json.loads, (run_dir / "trace.jsonl").read_text().splitlines())
        if e["event_type"] == "tool_call" and e["call"]["tool_name"] == "bash"
    ]
    assert commands[0] == "echo PASSWORD=[REDACTED]"
    assert commands[1] == "echo 'Authorization: Bearer [REDACTED]'"
    assert "[REDACTED]" in commands[2]
    assert commands[3].startswith("echo the key is [REDACTED] or [REDACTED]")
    outputs = (run_dir / "trace.jsonl").read_text()
    assert "PASSWORD=[REDACTED]" in outputs  # the observation's text is kept, redacted

    shown = CliRunner().invoke(app, ["trace", "show", str(run_dir)])
    assert "bash 'echo PASSWORD=[REDACTED]'" in shown.stdout

    exported = CliRunner().invoke(app, ["trace", "export", "--safe", str(run_dir)])
    assert exported.exit_code == 0, exported.output
    copy = (run_dir / "trace.safe.jsonl").read_text()
    assert "echo PASSWORD" not in copy
    assert '"arguments": null' in copy
    assert len(copy.splitlines()) == len(outputs.splitlines())
