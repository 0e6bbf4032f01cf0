"""edit_file's insert and replace_all, the view of what changed, lint on edit, the tool set."""

from __future__ import annotations

import json
from pathlib import Path
from typing import get_args

import pytest

from sandbox_agent.models.prompt import ALL_TOOLS, build_system_prompt
from sandbox_agent.settings.tree import ModelSection, ToolName
from sandbox_agent.tools.runtime import TOOLS, ToolRuntime, tool_names, tool_specs
from sandbox_agent.types import Observation, ToolCall
from tests.fakes import TempDirSandbox

GOOD = "def f(x):\n    return x + 1\n\n\ndef g():\n    return f(1)\n"


@pytest.fixture
def runtime(tmp_path: Path) -> ToolRuntime:
    (tmp_path / "m.py").write_text(GOOD)
    (tmp_path / "broken.py").write_text("def f(:\n    return 1\n")
    (tmp_path / "notes.txt").write_text("a\nb\na\n")
    return ToolRuntime(TempDirSandbox(tmp_path))


def run(runtime: ToolRuntime, tool: str, **arguments: object) -> Observation:
    return runtime.run(ToolCall(id="c1", tool_name=tool, arguments=arguments))


def test_insert_after_a_line_and_at_the_top(runtime: ToolRuntime, tmp_path: Path) -> None:
    obs = run(runtime, "edit_file", path="m.py", insert_line=2, new_text="\n\nX = 1")
    assert not obs.is_error, obs.content
    assert (tmp_path / "m.py").read_text() == GOOD.replace("+ 1\n", "+ 1\n\n\nX = 1\n", 1)
    assert obs.content.startswith("edited m.py: inserted 3 lines after line 2 (now lines 3-5)")
    assert "     5\tX = 1" in obs.content
    top = run(runtime, "edit_file", path="m.py", insert_line=0, new_text='"""Doc."""\n')
    assert (tmp_path / "m.py").read_text().startswith('"""Doc."""\ndef f(x):')
    assert '     1\t"""Doc."""' in top.content


def test_insert_past_the_end_names_the_range(runtime: ToolRuntime) -> None:
    obs = run(runtime, "edit_file", path="notes.txt", insert_line=9, new_text="z")
    assert obs.kind == "edit_mismatch"
    assert obs.content == "insert_line 9 is past the end of notes.txt (3 lines); use 0 to 3"


def test_replace_all_replaces_every_occurrence(runtime: ToolRuntime, tmp_path: Path) -> None:
    obs = run(runtime, "edit_file", path="notes.txt", old_text="a", new_text="A", replace_all=True)
    assert (tmp_path / "notes.txt").read_text() == "A\nb\nA\n"
    assert obs.content.startswith(
        "edited notes.txt: replaced all 2 occurrences (now lines 1-1, 3-3)"
    )


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"new_text": "x"}, "give old_text (to replace) or insert_line (to insert), not both"),
        ({"old_text": "a", "insert_line": 1, "new_text": "x"}, "not both"),
        ({"insert_line": 1, "new_text": "x", "replace_all": True}, "replace_all goes with"),
    ],
)
def test_edit_modes_are_exclusive(
    runtime: ToolRuntime, arguments: dict[str, object], message: str
) -> None:
    obs = run(runtime, "edit_file", path="notes.txt", **arguments)
    assert obs.kind == "invalid_args"
    assert message in obs.content


def test_view_shows_a_few_lines_around_the_change(tmp_path: Path) -> None:
    (tmp_path / "long.txt").write_text("".join(f"line {n}\n" for n in range(1, 41)))
    runtime = ToolRuntime(TempDirSandbox(tmp_path))
    obs = run(runtime, "edit_file", path="long.txt", old_text="line 20\n", new_text="twenty\n")
    shown = [line.split("\t")[0].strip() for line in obs.content.splitlines()[2:]]
    assert shown == [str(n) for n in range(17, 24)]


# -- lint on edit ----------------------------------------------------------------------------


def test_edit_that_breaks_the_syntax_is_refused_and_changes_nothing(
    runtime: ToolRuntime, tmp_path: Path
) -> None:
    obs = run(
        runtime, "edit_file", path="m.py", old_text="    return x + 1", new_text="  return (x"
    )
    assert obs.kind == "syntax_error"
    assert obs.content.startswith("refused: after this edit `m.py` would not parse (line 2, column")
    assert "the file is unchanged" in obs.content
    assert (tmp_path / "m.py").read_text() == GOOD


def test_write_file_and_apply_patch_are_linted_too(runtime: ToolRuntime, tmp_path: Path) -> None:
    wrote = run(runtime, "write_file", path="m.py", content="def f(:\n")
    assert wrote.kind == "syntax_error"
    assert "(line 1, column 7: invalid syntax)" in wrote.content
    new = run(runtime, "write_file", path="new.py", content="if x\n")
    assert new.kind == "syntax_error"
    patch = "*** Begin Patch\n*** Update File: m.py\n@@\n-def g():\n+def g(\n*** End Patch"
    patched = run(runtime, "apply_patch", input=patch)
    assert patched.kind == "syntax_error"
    assert "`m.py` would not parse" in patched.content
    assert (tmp_path / "m.py").read_text() == GOOD
    assert not (tmp_path / "new.py").exists()


def test_an_already_broken_file_may_be_edited_toward_a_fix(
    runtime: ToolRuntime, tmp_path: Path
) -> None:
    still = run(runtime, "edit_file", path="broken.py", old_text="return 1", new_text="return 2")
    assert not still.is_error, still.content
    fixed = run(runtime, "edit_file", path="broken.py", old_text="def f(:", new_text="def f():")
    assert not fixed.is_error
    assert (tmp_path / "broken.py").read_text() == "def f():\n    return 2\n"


def test_other_files_are_not_linted(runtime: ToolRuntime, tmp_path: Path) -> None:
    assert not run(runtime, "write_file", path="data.txt", content="def f(:\n").is_error


def test_lint_never_runs_the_code(runtime: ToolRuntime, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    source = f"open({str(marker)!r}, 'w').write('x')\n"
    assert not run(runtime, "write_file", path="m.py", content=source).is_error
    assert not marker.exists()


# -- the tool set is a setting ---------------------------------------------------------------


def test_tool_set_keeps_the_registry_order_and_finish() -> None:
    assert tool_names(["apply_patch", "bash"]) == ("bash", "apply_patch", "finish")
    assert tool_names(None) == tuple(TOOLS)
    with pytest.raises(ValueError, match="unknown tools \\['python'\\]"):
        tool_names(["python"])


def test_settings_prompt_and_registry_know_the_same_tools() -> None:
    assert set(get_args(ToolName)) == set(TOOLS) == set(ALL_TOOLS)
    assert tool_names(ModelSection().tools) == tuple(TOOLS)
    with pytest.raises(ValueError, match=r"tools\.0"):
        ModelSection(tools=("python",))  # type: ignore[arg-type]


def test_a_runtime_offers_only_its_tools(tmp_path: Path) -> None:
    runtime = ToolRuntime(TempDirSandbox(tmp_path), tools=["bash", "apply_patch"])
    assert [s.name for s in runtime.specs()] == ["bash", "apply_patch", "finish"]
    refused = runtime.check(ToolCall(id="x", tool_name="edit_file", arguments={}))
    assert isinstance(refused, Observation)
    assert refused.content == "unknown tool 'edit_file'; tools are: bash, apply_patch, finish"


def test_prompt_lists_only_the_offered_tools_within_its_size() -> None:
    def prompt(tools: tuple[str, ...]) -> str:
        return build_system_prompt(
            allowed_programs=["*"], test_command="pytest", limits_text="x" * 90, tools=tools
        )

    full = prompt(ALL_TOOLS)
    assert "- apply_patch:" in full
    assert "- edit_file:" in full
    assert len(full) < 1500
    narrow = prompt(("bash", "apply_patch"))
    assert "- edit_file:" not in narrow
    assert "- finish:" in narrow
    assert narrow == prompt(("apply_patch", "bash"))  # the same bytes whatever the order


def test_tool_schemas_stay_small_and_the_same_bytes() -> None:
    """The schemas are part of every request: a fixed cost the context estimator counts."""
    first = json.dumps([s.model_dump() for s in tool_specs()])
    assert len(first) < 5_500  # 4.8 kB with apply_patch: about 1.6k tokens at 3 bytes a token
    assert json.dumps([s.model_dump() for s in tool_specs(list(reversed(TOOLS)))]) == first


def test_write_file_still_overwrites_a_file_it_cannot_read(tmp_path: Path) -> None:
    (tmp_path / "blob.py").write_bytes(b"\x00\xff binary")
    (tmp_path / "data.bin").write_bytes(b"\x00\xff")
    runtime = ToolRuntime(TempDirSandbox(tmp_path))
    assert not run(runtime, "write_file", path="blob.py", content="x = 1\n").is_error
    assert not run(runtime, "write_file", path="data.bin", content="text\n").is_error
    assert (tmp_path / "blob.py").read_text() == "x = 1\n"
