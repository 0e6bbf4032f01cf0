"""start(): endpoint, key and model checked against the local server with the real client."""

from __future__ import annotations

import socket

import pytest

from sandbox_agent.errors import (
    ApiKeyRefusedError,
    EndpointUnreachableError,
    ModelNotFoundError,
    ModelSetupError,
    UserError,
)
from sandbox_agent.models.base import Model
from sandbox_agent.models.scripted import FunctionModel, ScriptedFinish, ScriptedModel
from sandbox_agent.types import ModelTurn
from tests.models.conftest import API_KEY, MakeModel
from tests.models.openai_server import FakeOpenAIServer, ModelsEndpoint


def test_a_served_model_passes_with_one_request(
    server: FakeOpenAIServer, make_model: MakeModel
) -> None:
    server.models = ModelsEndpoint(ids=("gpt-4o-mini", "other"))
    make_model(model="gpt-4o-mini").start()
    assert server.model_requests == ["/v1/models/gpt-4o-mini"]
    assert server.requests == []  # no chat completion: the check costs no tokens


def test_a_model_the_server_does_not_serve_is_a_user_error_with_its_message(
    server: FakeOpenAIServer, make_model: MakeModel
) -> None:
    server.models = ModelsEndpoint(ids=("gpt-4o-mini", "gpt-4.1"))
    with pytest.raises(ModelNotFoundError) as info:
        make_model(model="gpt-4o-mni").start()
    assert isinstance(info.value, UserError)  # exit 2, before any sandbox
    message = str(info.value)
    assert message == (
        f"model 'gpt-4o-mni' is not served at {server.base_url}: HTTP 404: The model "
        "`gpt-4o-mni` does not exist or you do not have access to it. (the server lists "
        "2 model(s): gpt-4o-mini, gpt-4.1); check --model and --base-url"
    )
    assert server.model_requests == ["/v1/models/gpt-4o-mni", "/v1/models"]


def test_a_refused_key_is_a_user_error_with_the_servers_message_redacted(
    server: FakeOpenAIServer, make_model: MakeModel
) -> None:
    server.models = ModelsEndpoint(api_key="sk-the-right-key")
    with pytest.raises(ApiKeyRefusedError) as info:
        make_model().start()
    message = str(info.value)
    assert message.startswith(f"{server.base_url} refused the API key: HTTP 401: Incorrect API")
    assert "check OPENAI_API_KEY" in message
    assert API_KEY not in message  # the server echoed it; the message must not
    assert "***" in message
    assert len(server.model_requests) == 1  # a 4xx is not retried


@pytest.mark.parametrize("status", [404, 405, 501])
def test_a_server_without_model_endpoints_is_not_an_error(
    server: FakeOpenAIServer, make_model: MakeModel, status: int
) -> None:
    server.models = ModelsEndpoint(list_status=status)
    make_model(model="anything").start()
    expected = ["/v1/models/anything", "/v1/models"] if status == 404 else ["/v1/models/anything"]
    assert server.model_requests == expected


def test_a_server_that_lists_but_does_not_retrieve_checks_the_list(
    server: FakeOpenAIServer, make_model: MakeModel
) -> None:
    """vLLM-style: only GET /models; a name with a slash is found in the list."""
    served = "Qwen/Qwen2.5-Coder-32B-Instruct"
    server.models = ModelsEndpoint(ids=(served,), retrieve=False)
    make_model(model=served).start()
    assert server.model_requests == ["/v1/models/Qwen%2FQwen2.5-Coder-32B-Instruct", "/v1/models"]
    with pytest.raises(ModelNotFoundError, match="the server lists 1 model"):
        make_model(model="Qwen/Qwen2.5-Coder-7B-Instruct").start()


def test_an_unreachable_endpoint_names_the_url(make_model: MakeModel) -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    with pytest.raises(EndpointUnreachableError) as info:
        make_model(base_url=url).start()
    assert str(info.value).startswith(f"cannot connect to {url}: ")
    assert "check --base-url / OPENAI_BASE_URL" in str(info.value)


def test_a_slow_models_endpoint_is_not_judged(
    server: FakeOpenAIServer, make_model: MakeModel
) -> None:
    """The server is there; a slow answer is left to the run's own calls and their retries."""
    server.models = ModelsEndpoint(stall_s=5.0)
    make_model(preflight_timeout_s=0.2).start()
    assert server.model_requests == ["/v1/models/gpt-4o-mini"]


def test_setup_errors_are_user_errors() -> None:
    for cls in (ApiKeyRefusedError, EndpointUnreachableError, ModelNotFoundError):
        assert issubclass(cls, ModelSetupError)
        assert issubclass(cls, UserError)


def test_scripted_models_have_the_lifecycle() -> None:
    scripted = ScriptedModel([ScriptedFinish(type="finish", answer="ok")])
    function = FunctionModel(lambda task, history: ModelTurn())
    models: list[Model] = [scripted, function]
    for model in models:
        model.start()
        model.close()
        model.close()
    assert scripted.remaining == 1  # start() used no action
