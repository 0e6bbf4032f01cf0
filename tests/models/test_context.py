from __future__ import annotations

from collections.abc import Callable

from hypothesis import given
from hypothesis import strategies as st

from sandbox_agent.models.context import (
    DEFAULT_CONTEXT_WINDOW,
    Compactor,
    Result,
    Said,
    TokenEstimator,
    Turn,
    call_ids,
    context_window_for,
    conversation,
    truncate_middle,
)
from sandbox_agent.models.prompt import build_system_prompt
from sandbox_agent.types import (
    Finish,
    HistoryItem,
    ModelFeedback,
    ModelTurn,
    Observation,
    ToolCall,
)


def test_truncate_middle_keeps_head_and_tail_and_says_how_to_read_more() -> None:
    text = "".join(f"line {i}\n" for i in range(1000))
    out = truncate_middle(text, 600)
    assert out.startswith("line 0\nline 1\n")
    assert out.endswith("line 999\n")
    assert "characters (" in out
    assert "read_file with start_line/end_line" in out
    assert len(out) < 600 + 250
    assert truncate_middle("short", 600) == "short"


def test_context_windows() -> None:
    assert context_window_for("gpt-4o-2024-08-06") == 128_000
    assert context_window_for("qwen2.5-coder:7b") == DEFAULT_CONTEXT_WINDOW == 32_000


def test_estimator_only_calibrates_upwards() -> None:
    est = TokenEstimator()
    assert est.estimate(3000, 2) == 1000 + 16
    est.calibrate(3000, 2, 500)  # the server counted fewer: keep the conservative rate
    assert est.estimate(3000, 2) == 1016
    est.calibrate(3000, 2, 2016)  # more: raise the rate with a 10% margin
    assert est.estimate(3000, 2) >= 2016


def _turns(n: int, size: int) -> list[HistoryItem]:
    history: list[HistoryItem] = []
    for i in range(n):
        call = ToolCall(id=f"c{i}", tool_name="bash", arguments={})
        history += [
            ModelTurn(tool_calls=(call,)),
            Observation(tool_call_id=f"c{i}", tool_name="bash", content="x" * size),
        ]
    return history


def _size(history: list[HistoryItem]) -> Callable[[int], int]:
    def size_of(horizon: int) -> int:
        return 100 + sum(
            (10 if i < horizon else len(item.content)) if isinstance(item, Observation) else 10
            for i, item in enumerate(history)
        )

    return size_of


def test_compactor_jumps_to_low_watermark_then_holds_still() -> None:
    compactor = Compactor(10_000, high=0.8, low=0.5, keep_recent_turns=2)
    history = _turns(7, 1000)  # ~7.2k: under the high watermark
    assert compactor.choose(history, _size(history)) == 0
    history += _turns(2, 1000)[:]  # ~9.3k: crosses 8k
    horizons = compactor.choose(history, _size(history))
    assert horizons > 0
    assert _size(history)(horizons) <= 5_000
    # growing again but under the high watermark: the horizon (and so the prefix) holds
    history += _turns(1, 1000)
    assert compactor.choose(history, _size(history)) == horizons


def test_compactor_never_stubs_the_recent_turns() -> None:
    compactor = Compactor(1_000, keep_recent_turns=2)
    history = _turns(5, 10_000)
    horizon = compactor.choose(history, _size(history))
    assert horizon == 6  # the 4th turn: turns 4 and 5 and their outputs stay whole
    assert compactor.compact_harder(history)
    assert compactor.horizon == 8
    assert not compactor.compact_harder(history)


def test_system_prompt_names_tools_programs_tests_and_budget() -> None:
    prompt = build_system_prompt(
        allowed_programs=["pytest", "git diff", "cat", "pytest"],
        test_command="python -m pytest -q",
        limits_text="max_cost_usd 0.50",
    )
    for needle in ("bash", "read_file", "write_file", "edit_file", "finish", "/workspace"):
        assert needle in prompt
    assert "cat, git diff, pytest." in prompt
    assert "runs the tests (`python -m pytest -q`)" in prompt
    assert "Budget: max_cost_usd 0.50." in prompt
    assert len(prompt) < 1500


ids = st.sampled_from(["a", "b", "c", "d"])
turns = st.builds(
    lambda calls, fin, text: ModelTurn(
        tool_calls=tuple(ToolCall(id=i, tool_name="bash") for i in dict.fromkeys(calls)),
        finish=Finish(answer="x", call_id=fin) if fin or not calls else None,
        text=text,
    ),
    st.lists(ids, max_size=3),
    st.one_of(st.none(), st.just("f")),
    st.one_of(st.none(), st.just("t")),
)
observations = st.builds(
    lambda i: Observation(tool_call_id=i, tool_name="bash", content="o"),
    st.one_of(ids, st.just("f")),
)
feedback = st.builds(lambda: ModelFeedback(kind="notice", content="n"))


@given(st.lists(st.one_of(turns, observations, feedback), max_size=25))
def test_conversation_answers_every_call_exactly_once_in_order(history: list[HistoryItem]) -> None:
    events = list(conversation(history))
    i = 0
    while i < len(events):
        event = events[i]
        assert not isinstance(event, Result), "a result answering no turn"
        if isinstance(event, Turn):
            expected = [cid for cid, _ in call_ids(event.turn)]
            got = events[i + 1 : i + 1 + len(expected)]
            assert [r.call_id for r in got if isinstance(r, Result)] == expected
            i += len(expected)
        i += 1
    # nothing is lost: every observation and feedback shows up once
    shown = sum(
        isinstance(e, Said) or (isinstance(e, Result) and e.observation is not None) for e in events
    )
    assert shown == sum(not isinstance(item, ModelTurn) for item in history)
