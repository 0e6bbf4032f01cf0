from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

import pytest

from sandbox_agent.agent.budget import UnlimitedBudget
from sandbox_agent.agent.loop import AgentLoop, LoopConfig
from sandbox_agent.agent.trace import Trace, read_trace
from sandbox_agent.errors import BudgetExceeded
from sandbox_agent.models.scripted import FunctionModel, ScriptedModel, parse_script
from sandbox_agent.policy.base import Decision
from sandbox_agent.policy.engine import RuleEngine
from sandbox_agent.settings.tree import Policy
from sandbox_agent.tools.patch import FileOp, parse_patch
from sandbox_agent.tools.runtime import ToolRuntime
from sandbox_agent.tools.specs import ToolArgs
from sandbox_agent.types import (
    CallEstimate,
    ExitReason,
    Finish,
    HistoryItem,
    ModelFeedback,
    ModelTurn,
    Observation,
    Task,
    ToolCall,
    Usage,
)
from tests.fakes import FakePolicy, ScriptedGate, TempDirSandbox, deny_commands_containing

TASK = Task(text="the parser drops the last line of a file")


def script(*lines: Mapping[str, object]) -> ScriptedModel:
    return ScriptedModel(parse_script("\n".join(json.dumps(line) for line in lines)))


def bash(command: str) -> dict[str, object]:
    return {"type": "tool_call", "tool_name": "bash", "arguments": {"command": command}}


FINISH: dict[str, object] = {"type": "finish", "answer": "fixed"}


MakeLoop = Callable[..., tuple[AgentLoop, TempDirSandbox, Path]]


@pytest.fixture
def make_loop(tmp_path: Path) -> Iterator[MakeLoop]:
    traces: list[Trace] = []

    def make(
        model: ScriptedModel | FunctionModel,
        *,
        gate: ScriptedGate | None = None,
        policy: FakePolicy | None = None,
        max_steps: int = 10,
        budget: UnlimitedBudget | None = None,
        content: str = "safe",
        secrets: Sequence[str] = (),
    ) -> tuple[AgentLoop, TempDirSandbox, Path]:
        sandbox = TempDirSandbox(tmp_path / "ws")
        trace_path = tmp_path / "trace.jsonl"
        trace = Trace(
            trace_path, "run-1", content="full" if content == "full" else "safe", secrets=secrets
        )
        traces.append(trace)
        loop = AgentLoop(
            model=model,
            runtime=ToolRuntime(sandbox),
            policy=policy or FakePolicy(),
            gate=gate or ScriptedGate([True]),
            budget=budget or UnlimitedBudget(),
            trace=trace,
            config=LoopConfig(max_steps=max_steps),
        )
        return loop, sandbox, trace_path

    yield make
    for trace in traces:
        trace.close()


def test_second_call_sees_first_call_and_its_observation(make_loop: MakeLoop) -> None:
    model = script(bash("echo hello"), FINISH)
    loop, _, _ = make_loop(model)

    result = loop.run(TASK)

    assert result.exit_reason is ExitReason.FINISHED
    assert result.gate_passed
    assert result.answer == "fixed"
    _, history = model.calls[1]
    turn, observation = history
    assert isinstance(turn, ModelTurn)
    assert turn.tool_calls[0].arguments == {"command": "echo hello"}
    assert isinstance(observation, Observation)
    assert observation.tool_call_id == turn.tool_calls[0].id
    assert "hello" in observation.content
    assert observation.exit_code == 0
    model.assert_complete()


def test_every_call_of_a_multi_call_turn_is_answered_in_order(make_loop: MakeLoop) -> None:
    calls = (
        ToolCall(id="a", tool_name="bash", arguments={"command": "echo one"}),
        ToolCall(id="b", tool_name="bash", arguments={"command": "echo two"}),
    )

    def turns(task: Task, history: Sequence[HistoryItem]) -> ModelTurn:
        if not history:
            return ModelTurn(tool_calls=calls)
        return ModelTurn(finish=Finish(answer="done"))

    model = FunctionModel(turns)
    loop, _, _ = make_loop(model)
    assert loop.run(TASK).exit_reason is ExitReason.FINISHED
    observations = [h for h in model.calls[1][1] if isinstance(h, Observation)]
    assert [o.tool_call_id for o in observations] == ["a", "b"]
    assert "one" in observations[0].content
    assert "two" in observations[1].content


def test_malformed_output_gets_feedback_then_recovers(make_loop: MakeLoop) -> None:
    model = script({"type": "invalid", "message": "tool arguments are not JSON"}, FINISH)
    loop, _, _ = make_loop(model)

    result = loop.run(TASK)

    assert result.exit_reason is ExitReason.FINISHED
    (feedback,) = model.calls[1][1]
    assert feedback == ModelFeedback(kind="invalid_output", content="tool arguments are not JSON")


def test_persistent_malformed_output_ends_the_run(make_loop: MakeLoop) -> None:
    bad = {"type": "invalid", "message": "no JSON"}
    model = script(bad, bad, bad)
    loop, _, _ = make_loop(model)

    result = loop.run(TASK)

    assert result.exit_reason is ExitReason.INVALID_MODEL_OUTPUT
    assert result.steps == 3
    assert result.error is not None
    assert "3 malformed outputs in a row" in result.error


def test_step_limit(make_loop: MakeLoop) -> None:
    model = script(bash("true"), bash("true"), bash("true"))
    loop, _, _ = make_loop(model, max_steps=2)

    result = loop.run(TASK)

    assert result.exit_reason is ExitReason.MAX_STEPS_EXCEEDED
    assert result.steps == 2
    assert model.remaining == 1


def test_denied_call_is_an_error_observation_and_never_runs(make_loop: MakeLoop) -> None:
    model = script(bash("curl http://example.com"), bash("echo fine"), FINISH)
    loop, sandbox, _ = make_loop(model, policy=deny_commands_containing("curl"))

    assert loop.run(TASK).exit_reason is ExitReason.FINISHED
    assert sandbox.commands == ["echo fine"]
    denied = model.calls[1][1][1]
    assert isinstance(denied, Observation)
    assert denied.is_error
    assert denied.kind == "policy_denied"
    assert "`curl` is denied" in denied.content


def test_ask_without_an_approver_is_a_deny(make_loop: MakeLoop) -> None:
    policy = FakePolicy(lambda call: Decision(decision="ask", rule="r", reason="rm needs approval"))
    model = script(bash("rm -rf build"), FINISH)
    loop, sandbox, _ = make_loop(model, policy=policy)
    loop.run(TASK)
    assert sandbox.commands == []


def test_invalid_arguments_become_feedback_naming_the_field(make_loop: MakeLoop) -> None:
    model = script(
        {"type": "tool_call", "tool_name": "bash", "arguments": {"cmd": "ls"}},
        FINISH,
    )
    policy = FakePolicy()
    loop, _, _ = make_loop(model, policy=policy)
    loop.run(TASK)
    observation = model.calls[1][1][1]
    assert isinstance(observation, Observation)
    assert observation.kind == "invalid_args"
    assert "command: Field required" in observation.content
    assert "cmd: Extra inputs are not permitted" in observation.content
    assert policy.calls == []


def test_rejected_finish_goes_back_to_the_model(make_loop: MakeLoop) -> None:
    model = script(FINISH, bash("echo fixing"), FINISH)
    gate = ScriptedGate([False, True])
    loop, _, _ = make_loop(model, gate=gate)

    result = loop.run(TASK)

    assert result.exit_reason is ExitReason.FINISHED
    assert len(gate.finishes) == 2
    rejection = model.calls[1][1][1]
    assert isinstance(rejection, Observation)
    assert rejection.tool_name == "finish"
    assert rejection.kind == "gate_rejected"
    assert rejection.tool_call_id == "call_1"
    assert "tests failed" in rejection.content


def test_a_script_that_ends_after_a_rejected_finish_says_so(make_loop: MakeLoop) -> None:
    """Issue 26, item 6: not "add a finish line" when the script had one."""
    loop, _, _ = make_loop(script(bash("true"), FINISH), gate=ScriptedGate([False]))
    result = loop.run(TASK)
    assert result.exit_reason is ExitReason.MODEL_ERROR
    assert result.error is not None
    assert "script ended after a rejected finish" in result.error
    assert "add a finish line" not in result.error


def test_gate_attempts_exhausted_ends_without_finished(make_loop: MakeLoop) -> None:
    model = script(FINISH, FINISH)
    loop, _, _ = make_loop(model, gate=ScriptedGate([False, False], max_attempts=2))

    result = loop.run(TASK)

    assert result.exit_reason is ExitReason.BUDGET_EXCEEDED
    assert not result.gate_passed
    assert result.error is not None
    assert "rejected all 2 finish attempts" in result.error


class ExplodingPolicy(FakePolicy):
    def decide(self, call: ToolCall, args: ToolArgs) -> Decision:
        raise ZeroDivisionError("a bug in the engine")


def test_internal_error_propagates_and_the_loop_writes_no_ending(make_loop: MakeLoop) -> None:
    """The loop returns outcomes; a bug propagates to the runner, which records the ending."""
    model = script(bash("true"))
    loop, _, trace_path = make_loop(model, policy=ExplodingPolicy())

    with pytest.raises(ZeroDivisionError):
        loop.run(TASK)

    types = [e.event_type for e in read_trace(trace_path).events]
    assert types[-1] == "tool_call"
    assert "run_finished" not in types
    assert loop.steps == 1


class CappedBudget(UnlimitedBudget):
    def __init__(self, max_tokens: int) -> None:
        super().__init__()
        self.max_tokens = max_tokens
        self.estimates: list[CallEstimate] = []

    def check_before_model_call(self, estimate: CallEstimate) -> None:
        self.estimates.append(estimate)
        projected = self.totals.total_tokens + estimate.prompt_tokens
        projected += estimate.max_completion_tokens
        if projected > self.max_tokens:
            raise BudgetExceeded("max_tokens", self.max_tokens, projected)


def test_budget_is_consulted_before_every_model_call(make_loop: MakeLoop) -> None:
    usage = {"prompt_tokens": 60, "completion_tokens": 10}
    model = script({**bash("true"), "usage": usage}, {**bash("true"), "usage": usage}, FINISH)
    budget = CappedBudget(max_tokens=100)
    loop, sandbox, _ = make_loop(model, budget=budget)

    result = loop.run(TASK)

    assert result.exit_reason is ExitReason.BUDGET_EXCEEDED
    assert result.steps == 1
    assert result.usage == Usage(prompt_tokens=60, completion_tokens=10, cost_usd=None, requests=1)
    assert budget.estimates[1] == CallEstimate(prompt_tokens=60, max_completion_tokens=10)
    assert sandbox.commands == ["true"]


def test_trace_events_in_order_and_safe_by_default(make_loop: MakeLoop) -> None:
    secret_content = "SECRET-FILE-CONTENT-42"
    model = script(
        {
            "type": "tool_call",
            "tool_name": "write_file",
            "arguments": {"path": "notes.txt", "content": secret_content},
        },
        {"type": "tool_call", "tool_name": "read_file", "arguments": {"path": "notes.txt"}},
        FINISH,
    )
    loop, _, trace_path = make_loop(model)
    loop.run(TASK)

    text = trace_path.read_text()
    assert TASK.text not in text
    assert secret_content not in text
    events = read_trace(trace_path).events
    assert [e.event_type for e in events] == [
        "run_started",
        "model_turn",
        "budget_update",
        "tool_call",
        "policy_decision",
        "observation",
        "model_turn",
        "budget_update",
        "tool_call",
        "policy_decision",
        "observation",
        "model_turn",
        "budget_update",
        "gate_result",
    ]
    assert all(json.loads(line)["run_id"] == "run-1" for line in text.splitlines())


def test_full_trace_mode_records_text_but_never_secrets(make_loop: MakeLoop) -> None:
    key = "sk-test-key-that-must-not-leak"
    model = script(bash(f"echo {key} file-body"), FINISH)
    loop, _, trace_path = make_loop(model, content="full", secrets=[key])
    loop.run(TASK)
    text = trace_path.read_text()
    assert TASK.text in text
    assert "file-body" in text
    assert key not in text
    assert "[REDACTED]" in text


def test_loop_imports_neither_docker_nor_openai() -> None:
    code = (
        "import sys, sandbox_agent.agent.loop, sandbox_agent.gate.completion;"
        "import sandbox_agent.tools.runtime;"
        "print('docker' in sys.modules, 'openai' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_the_sandbox_runs_the_engines_rendering_and_the_trace_keeps_both(
    make_loop: MakeLoop,
) -> None:
    """What was checked is what runs: the real engine's rendering of the model's text."""
    engine = RuleEngine(Policy.model_validate({"commands": {"allow": ["echo *", "cat *"]}}))
    model = script(bash('echo "a  b"'), bash("cat <<EOF\nx\nEOF"), bash("echo a  b"), FINISH)
    loop, sandbox, trace_path = make_loop(model, policy=engine, content="full")
    loop.run(TASK)
    assert sandbox.commands[0] == "echo 'a  b'"  # each word re-quoted as the engine read it
    assert sandbox.commands[1] == "cat <<EOF\nx\nEOF"  # a heredoc is not rendered: as written
    assert sandbox.commands[2] == "echo a  b"  # rendered the same: nothing to record
    decisions = [
        json.loads(line)
        for line in trace_path.read_text().splitlines()
        if '"policy_decision"' in line
    ]
    assert decisions[0]["ran"]["text"] == "echo 'a  b'"
    assert decisions[1]["ran"] is None
    assert decisions[2]["ran"] is None
    calls = [
        json.loads(line) for line in trace_path.read_text().splitlines() if '"tool_call"' in line
    ]
    assert calls[0]["call"]["arguments"] == {"command": 'echo "a  b"'}  # the model's own text


class _Recording(FakePolicy):
    """Keeps the parsed arguments each decision was made on."""

    def __init__(self) -> None:
        super().__init__()
        self.args: list[ToolArgs] = []

    def decide(self, call: ToolCall, args: ToolArgs) -> Decision:
        self.args.append(args)
        return super().decide(call, args)


def test_a_call_is_parsed_once_and_the_runtime_runs_what_the_policy_judged(
    make_loop: MakeLoop, monkeypatch: pytest.MonkeyPatch
) -> None:
    parsed: list[str] = []

    def counting_parse(text: str) -> list[FileOp]:
        parsed.append(text)
        return parse_patch(text)

    monkeypatch.setattr("sandbox_agent.tools.specs.parse_patch", counting_parse)
    patch = "*** Begin Patch\n*** Add File: new.py\n+x = 1\n*** End Patch"
    edit = {"type": "tool_call", "tool_name": "apply_patch", "arguments": {"input": patch}}
    policy = _Recording()
    loop, sandbox, _ = make_loop(script(edit, FINISH), policy=policy)
    executed: list[ToolArgs] = []
    real_execute = loop.runtime.execute

    def recording_execute(call: ToolCall, args: ToolArgs) -> Observation:
        executed.append(args)
        return real_execute(call, args)

    monkeypatch.setattr(loop.runtime, "execute", recording_execute)

    loop.run(TASK)

    assert parsed == [patch]
    assert len(policy.args) == 1
    assert executed[0] is policy.args[0]
    assert (sandbox.root / "new.py").read_text() == "x = 1\n"
