"""Issue 26, item 4: the reply limit is a setting, the worst case uses it, and a cost cap that
cannot pay for one call is refused before anything is built, naming the smallest cap that can.
Item 11: ``[model] context_window`` and ``max_tokens_param`` reach the adapter and the wire."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sandbox_agent.errors import UserError
from sandbox_agent.run.prepare import prepare
from sandbox_agent.run.runner import run_fix
from sandbox_agent.tools.runtime import tool_specs
from sandbox_agent.types import Task
from tests.models.conftest import API_KEY
from tests.models.openai_server import FakeOpenAIServer, ModelsEndpoint, ok
from tests.models.test_run_e2e import _nothing_started, _options


def test_a_cap_below_one_call_is_refused_before_anything_with_the_smallest_cap(
    server: FakeOpenAIServer, tmp_path: Path
) -> None:
    server.models = ModelsEndpoint(ids=("gpt-4o",))  # $2.50 in, $10 out per million
    options = _options(tmp_path, server, model="gpt-4o", max_cost=0.01)
    with pytest.raises(UserError) as info:
        run_fix(options, {"OPENAI_API_KEY": API_KEY})
    message = str(info.value)
    assert "cannot pay for one call of 'gpt-4o'" in message
    assert "+ 4096 output tokens" in message
    found = re.search(r"smallest cap that can is \$(\d+\.\d+)", message)
    assert found is not None, message
    smallest = float(found.group(1))
    assert 0.041 < smallest < 0.06  # 4096 * $10/M = $0.041, plus the prompt
    _nothing_started(tmp_path, server)


def test_the_reply_limit_lowers_the_worst_case_and_reaches_the_wire(
    server: FakeOpenAIServer, tmp_path: Path
) -> None:
    server.models = ModelsEndpoint(ids=("gpt-4o",))
    policy = tmp_path / "mine.toml"
    policy.write_text(
        '[model]\nmax_tokens_param = "max_tokens"\ncontext_window = 8192\nrequest_timeout_s = 600\n'
    )
    options = _options(
        tmp_path, server, policy, model="gpt-4o", max_cost=0.02, max_output_tokens=256
    )
    prepared = prepare(options, {"OPENAI_API_KEY": API_KEY})
    estimate = prepared.model.estimate_next_call(Task(text=options.task), [], tool_specs())
    assert estimate.max_completion_tokens == 256
    assert prepared.model.context_window == 8192  # type: ignore[attr-defined]
    assert prepared.model.settings.timeout_s == 600  # type: ignore[attr-defined]
    server.push(ok(content="thinking"))
    prepared.model.next_turn(Task(text=options.task), [], tool_specs())
    body = server.requests[-1].body
    assert body["max_tokens"] == 256
    assert "max_completion_tokens" not in body
    prepared.model.close()
