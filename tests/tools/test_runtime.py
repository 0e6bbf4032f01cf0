from __future__ import annotations

from pathlib import Path

import pytest

from sandbox_agent.text import truncate_middle
from sandbox_agent.tools.runtime import ToolRuntime, ToolRuntimeConfig, tool_specs
from sandbox_agent.types import Observation, ToolCall
from tests.fakes import TempDirSandbox


@pytest.fixture
def runtime(tmp_path: Path) -> ToolRuntime:
    sandbox = TempDirSandbox(tmp_path)
    (tmp_path / "src.py").write_text("a = 1\nb = 2\nc = 3\nb = 2\n")
    return ToolRuntime(sandbox, ToolRuntimeConfig(max_observation_chars=2_000))


def run(runtime: ToolRuntime, tool: str, **arguments: object) -> Observation:
    return runtime.run(ToolCall(id="c1", tool_name=tool, arguments=arguments))


def test_specs_forbid_extra_arguments_and_match_design_names() -> None:
    specs = {spec.name: spec for spec in tool_specs()}
    # the original five of the contract, with apply_patch added before finish
    assert list(specs) == ["bash", "read_file", "write_file", "edit_file", "apply_patch", "finish"]
    for spec in specs.values():
        assert spec.parameters["additionalProperties"] is False
        assert spec.description
    assert specs["bash"].parameters["required"] == ["command"]
    assert set(specs["read_file"].parameters["properties"]) == {"path", "start_line", "end_line"}
    assert specs["finish"].parameters["required"] == ["summary"]


def test_bash_reports_exit_code_and_streams(runtime: ToolRuntime) -> None:
    obs = run(runtime, "bash", command="echo out; echo err >&2; exit 3")
    assert obs.exit_code == 3
    assert not obs.is_error
    assert obs.content == "exit code: 3\n[stdout]\nout\n\n[stderr]\nerr\n"


def test_bash_timeout_is_an_error_observation(runtime: ToolRuntime) -> None:
    obs = run(runtime, "bash", command="sleep 5", timeout_s=0.2)
    assert obs.is_error
    assert obs.kind == "timeout"
    assert "timed out after 0.2s" in obs.content


def test_long_output_keeps_head_and_tail_with_a_note(runtime: ToolRuntime) -> None:
    obs = run(runtime, "bash", command="seq 1 5000")
    assert len(obs.content) < 2_000 + 250  # the kept text, plus the note on the cut
    assert obs.content.startswith("exit code: 0\n[stdout]\n1\n2\n")
    assert obs.content.rstrip().endswith("5000")
    assert "lines) cut from the middle of this output" in obs.content


def test_read_file_numbers_lines_and_supports_ranges(runtime: ToolRuntime) -> None:
    obs = run(runtime, "read_file", path="src.py", start_line=2, end_line=3)
    assert obs.content == "src.py (lines 2-3 of 4)\n     2\tb = 2\n     3\tc = 3"


def test_read_file_past_the_end_is_invalid(runtime: ToolRuntime) -> None:
    obs = run(runtime, "read_file", path="src.py", start_line=10)
    assert obs.kind == "invalid_args"
    assert "past the end of src.py (4 lines)" in obs.content


@pytest.mark.parametrize(
    ("path", "kind"),
    [("missing.py", "not_found"), (".", "is_directory"), ("../outside", "path_escape")],
)
def test_read_file_errors(runtime: ToolRuntime, path: str, kind: str) -> None:
    obs = run(runtime, "read_file", path=path)
    assert obs.is_error
    assert obs.kind == kind


def test_read_binary_file_is_refused(runtime: ToolRuntime, tmp_path: Path) -> None:
    (tmp_path / "blob.bin").write_bytes(b"\x00\x01\x02")
    assert run(runtime, "read_file", path="blob.bin").kind == "not_utf8"


def test_write_then_read_round_trip(runtime: ToolRuntime, tmp_path: Path) -> None:
    obs = run(runtime, "write_file", path="pkg/new.py", content="x = 1\n")
    assert obs.content == "wrote 6 bytes to pkg/new.py"
    assert (tmp_path / "pkg" / "new.py").read_text() == "x = 1\n"


def test_edit_requires_exactly_one_occurrence(runtime: ToolRuntime, tmp_path: Path) -> None:
    twice = run(runtime, "edit_file", path="src.py", old_text="b = 2", new_text="b = 20")
    assert twice.kind == "edit_mismatch"
    assert "occurs 2 times in src.py" in twice.content
    never = run(runtime, "edit_file", path="src.py", old_text="z = 9", new_text="")
    assert "does not occur in src.py" in never.content
    once = run(runtime, "edit_file", path="src.py", old_text="c = 3", new_text="c = 30")
    assert not once.is_error
    assert "now lines 3-3" in once.content
    assert (tmp_path / "src.py").read_text() == "a = 1\nb = 2\nc = 30\nb = 2\n"


def test_unknown_tool_and_bad_arguments(runtime: ToolRuntime) -> None:
    unknown = runtime.check(ToolCall(id="x", tool_name="python", arguments={}))
    assert isinstance(unknown, Observation)
    assert unknown.kind == "unknown_tool"
    assert "tools are: bash, read_file" in unknown.content
    bad = runtime.check(
        ToolCall(id="x", tool_name="read_file", arguments={"path": "a", "start_line": 0})
    )
    assert isinstance(bad, Observation)
    assert bad.content == (
        "invalid arguments for read_file: start_line: Input should be greater than or equal to 1"
    )


def test_truncate_middle_keeps_short_text() -> None:
    assert truncate_middle("short", 300) == "short"
    cut = truncate_middle("x" * 1000, 300)
    assert cut.startswith("x" * 200)
    assert "700 characters (0 lines) cut" in cut
