"""report, policy replay and policy suggest on real runs (real Docker, policy, gate, git).

Two runs are recorded once for the module: one with the full trace whose commands include
denied, asked and hostile ones, and one with a safe (hashes-only) trace. The report is opened
in a real headless Chromium.
"""

from __future__ import annotations

import html.parser
import http.server
import json
import shutil
import subprocess
import threading
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sandbox_agent.cli.app import app
from sandbox_agent.run.artifacts import RunRecord
from tests.workflow.helpers import FINISH, FIX_EDIT, bash, demo_repo, fix, git

pytestmark = pytest.mark.docker

runner = CliRunner()
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ESC_COMMAND = "echo 'x\x1b[31mred\u202etxt'"
DENIED = ["make test", "make test", "python -c 'print(1)'", "python -m mypy kvparse"]
DENIED += ["curl https://example.com"]


class _Hits(http.server.BaseHTTPRequestHandler):
    paths: list[str] = []  # noqa: RUF012 - shared by every request of the server

    def do_GET(self) -> None:
        self.paths.append(self.path)
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@dataclass
class Recorded:
    full: RecordedRun
    safe: RecordedRun
    runs_dir: Path
    leak_paths: list[str] = field(default_factory=list)
    leak_port: int = 0


@dataclass
class RecordedRun:
    record: RunRecord

    @property
    def dir(self) -> Path:
        return Path(self.record.run_dir)


@pytest.fixture(scope="module")
def runs(
    tmp_path_factory: pytest.TempPathFactory, workspace_root: Path, docker_client: object
) -> Iterator[Recorded]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hits)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    hostile = (
        f"echo '<script>alert(1)</script>' '<img src=http://127.0.0.1:{port}/leak "
        "onerror=alert(2)>' '</pre></td></table><h1>injected</h1>'"
    )
    tmp = tmp_path_factory.mktemp("review")
    repo = demo_repo(tmp)
    # The strict allowlist, whose refusals replay and suggest learn from (under the default
    # preset `python -c` and `make test` simply run).
    (repo / ".sandbox-agent.toml").write_text('extends = "strict"\n')
    git(repo, "commit", "-q", "-am", "the strict preset")
    usage = {"usage": {"prompt_tokens": 900, "completion_tokens": 120}}
    actions: list[Mapping[str, object]] = [bash(hostile, **usage), bash("ls kvparse")]
    actions.append(bash(ESC_COMMAND))
    actions += [bash(c) for c in DENIED] + [bash("rm -r build"), FIX_EDIT, FINISH]
    test_cmd = "python -m pytest -q"
    full = fix(tmp, repo, workspace_root, *actions, trace_content="full", test_cmd=test_cmd)
    safe = fix(
        tmp,
        repo,
        workspace_root,
        bash("ls"),
        bash("make test"),
        FIX_EDIT,
        FINISH,
        trace_content="safe",
        test_cmd=test_cmd,
    )
    assert full.gate_passed
    assert safe.gate_passed
    yield Recorded(RecordedRun(full), RecordedRun(safe), tmp / "runs", _Hits.paths, port)
    server.shutdown()
    server.server_close()


@pytest.fixture
def cli_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))


def invoke(runs: Recorded, *args: str) -> tuple[int, str]:
    result = runner.invoke(app, [*args[:2], "--runs-dir", str(runs.runs_dir), *args[2:]])
    return result.exit_code, result.stdout


# --- policy replay ------------------------------------------------------------------------


def flips(payload: dict[str, object]) -> list[tuple[str, str]]:
    changes = payload["changes"]
    assert isinstance(changes, list)
    return sorted((c["change"], c["target"]) for c in changes)


def test_replay_under_the_recorded_policy_changes_nothing(runs: Recorded, cli_env: None) -> None:
    code, out = invoke(runs, "policy", "replay", "--json", runs.full.record.run_id)
    payload = json.loads(out)
    assert code == 0
    assert payload["changes"] == []
    assert payload["replayed"] == 10  # 2 allowed, 6 denied, 1 asked, 1 edit
    assert payload["not_replayable"] == 0


def test_replay_under_a_tighter_policy_reports_exactly_the_flips_and_fails(
    runs: Recorded, cli_env: None, tmp_path: Path
) -> None:
    tighter = tmp_path / "tighter.toml"
    tighter.write_text('[commands]\ndeny = ["ls"]\nask = ["echo"]\n')
    code, out = invoke(runs, "policy", "replay", "--policy", str(tighter), "--json")
    payload = json.loads(out)
    assert code == 1  # `ls kvparse` ran in the full run, `ls` in the safe one (not replayable)
    echo_targets = [c["target"] for c in payload["changes"] if c["change"] == "allow -> ask"]
    assert flips(payload) == sorted(
        [("allow -> deny", "ls kvparse")] + [("allow -> ask", t) for t in echo_targets]
    )
    assert len(echo_targets) == 1
    assert "<script>" in echo_targets[0]
    assert payload["counts"] == {"allow -> deny": 1, "allow -> ask": 1}
    assert payload["needed_now_denied"] == 1
    assert payload["not_replayable"] == 3  # the safe run: ls, make test, the edit
    (denied,) = [c for c in payload["changes"] if c["change"] == "allow -> deny"]
    assert denied["new"]["rule"] == f"file {tighter}: ls"
    assert denied["needed"] is True


def test_replay_under_a_looser_policy_reports_exactly_the_flips_and_passes(
    runs: Recorded, cli_env: None, tmp_path: Path
) -> None:
    looser = tmp_path / "looser.toml"
    looser.write_text('[commands]\nallow = ["make test"]\n')
    code, out = invoke(
        runs, "policy", "replay", "--policy", str(looser), runs.full.record.run_id[:17]
    )
    assert code == 0, out
    assert out.count("deny -> allow  run") == 2
    assert "  deny -> allow: 2\n" in out
    assert f"now: file {looser}: make test" in out
    assert "allow -> " not in out


def test_replay_of_safe_traces_says_the_calls_are_not_replayable(
    runs: Recorded, cli_env: None
) -> None:
    code, out = invoke(runs, "policy", "replay", runs.safe.record.run_id)
    assert code == 0
    assert "replayed 0 calls of 1 run" in out
    assert "not replayable: 3 calls" in out


def test_replay_usage_errors_exit_2(runs: Recorded, cli_env: None, tmp_path: Path) -> None:
    assert invoke(runs, "policy", "replay", "no-such-run")[0] == 2
    assert invoke(runs, "policy", "replay", "--policy", str(tmp_path / "none.toml"))[0] == 2
    bad = tmp_path / "bad.toml"
    bad.write_text("[commands]\nallow = [1]\n")
    assert invoke(runs, "policy", "replay", "--policy", str(bad))[0] == 2


# --- policy suggest -----------------------------------------------------------------------


def test_suggest_then_replay_round_trip(runs: Recorded, cli_env: None, tmp_path: Path) -> None:
    code, out = invoke(runs, "policy", "suggest", runs.full.record.run_id)
    assert code == 0
    proposed = tomllib.loads(out)["commands"]["allow"]
    assert proposed == ["make test", "python -m mypy"]  # most needed first
    assert 'make test",  # needed 2 times; risk medium' in out
    assert "python -c" in out
    assert "runs any code" in out
    assert "curl" in out
    assert "preset default denies `curl`" in out
    assert "rm -r build (1x): asked by `preset strict: rm -r`" in out
    assert "echo 'x^[[31mred\\u202etxt' (1x): denied by built-in: static analysis" in out
    assert "#     deny -> allow: 3" in out  # the replay with the rules added
    assert "#   still not allowed: 4 calls" in out  # python -c, curl, the control char, rm -r
    suggested = tmp_path / "suggested.toml"
    suggested.write_text(out)
    code, replayed = invoke(
        runs, "policy", "replay", "--policy", str(suggested), "--json", runs.full.record.run_id
    )
    assert code == 0
    assert flips(json.loads(replayed)) == [
        ("deny -> allow", "make test"),
        ("deny -> allow", "make test"),
        ("deny -> allow", "python -m mypy kvparse"),
    ]


def test_suggest_proposes_nothing_for_python_c(
    runs: Recorded, cli_env: None, tmp_path: Path
) -> None:
    code, out = invoke(runs, "policy", "suggest", "--json", runs.full.record.run_id)
    payload = json.loads(out)
    assert code == 0
    rules = [r["rule"] for r in payload["rules"]]
    assert not [r for r in rules if r.split()[0] in ("python", "python3") and "-m" not in r]
    assert all(not r.startswith(("bash", "sh", "curl", "python -c")) for r in rules)
    refused = {r["what"]: r["why"] for r in payload["not_proposed"]}
    assert "python -c" in refused
    after = payload["replay"]
    assert ("deny", "python -c 'print(1)'") not in [
        (c["new"]["decision"], c["target"]) for c in after["changes"]
    ]


# --- report in headless Chromium -------------------------------------------------------------


class _Dom(html.parser.HTMLParser):
    """Element classes and tags of a dumped DOM, and its text."""

    def __init__(self) -> None:
        super().__init__()
        self.classes: list[str] = []
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self.classes.extend((dict(attrs).get("class") or "").split())

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def chromium(page: Path, profile: Path, *extra: str) -> str:
    done = subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={profile}",
            "--virtual-time-budget=3000",
            *extra,
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return done.stdout


def test_report_renders_in_headless_chromium_with_no_request(
    runs: Recorded, cli_env: None, tmp_path: Path
) -> None:
    code, out = invoke(runs, "report", runs.full.record.run_id)
    assert code == 0
    page = Path(out.strip())
    assert page == runs.full.dir / "report.html"
    before = len(runs.leak_paths)
    dom = _Dom()
    dom.feed(chromium(page, tmp_path / "profile", "--dump-dom"))
    text = "".join(dom.text)
    assert dom.classes.count("row-call") == 10  # every tool call of the run, the edit included
    assert dom.classes.count("decision-deny") == 6
    assert dom.classes.count("decision-ask") == 1
    assert dom.classes.count("add") >= 1
    assert dom.classes.count("del") >= 2
    assert "+    for line in text.splitlines():" in text
    assert "<script>alert(1)</script>" in text  # shown as text ...
    assert not [t for t, _ in dom.tags if t in ("script", "img", "iframe", "object")]
    assert not [a for _, a in dom.tags if any(k.startswith("on") for k in a)]
    assert "injected" not in [t for t, _ in dom.tags if t == "h1"]  # no markup escaped out
    assert "^[[31mred\\u202etxt" in text  # control and bidi chars made visible
    assert runs.full.record.task in text
    assert "evidence: strength strong" in text  # the accepted verdict says what it proved
    assert "tests.test_parser::test_last_line_without_newline_is_kept" in text
    shot = "--screenshot=" + str(runs.full.dir / "report.png")
    chromium(page, tmp_path / "profile", "--window-size=1280,3200", shot)
    assert (runs.full.dir / "report.png").stat().st_size > 10_000
    assert runs.leak_paths[before:] == []  # nothing tried to fetch the hostile URL
    # The detector works: the same payload, unescaped and without the CSP, makes a request.
    control = tmp_path / "control.html"
    control.write_text(f"<img src=http://127.0.0.1:{runs.leak_port}/leak>")
    chromium(control, tmp_path / "profile", "--dump-dom")
    assert "/leak" in runs.leak_paths[before:]


def test_report_of_a_safe_trace_shows_tools_and_argument_keys(
    runs: Recorded, cli_env: None, tmp_path: Path
) -> None:
    target = tmp_path / "safe.html"
    code, _ = invoke(runs, "report", runs.safe.record.run_id, "-o", str(target))
    assert code == 0
    page = target.read_text()
    assert "bash(command)" in page
    assert "arguments not recorded" in page
    assert "make test" not in page
    assert "default-src &#x27;none&#x27;" not in page  # the CSP is the raw attribute value
    assert "content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:" in page
