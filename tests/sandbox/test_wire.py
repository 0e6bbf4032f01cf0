"""The wire format: every message survives its own encoding; a malformed line is named, typed."""

from __future__ import annotations

import json
from dataclasses import fields
from typing import Any, get_args

import pytest

from sandbox_agent.sandbox.incontainer import wire
from sandbox_agent.types import ObservationKind

CAPTURE = wire.Capture(head="aGk=", tail="", dropped=0)
SAMPLES: dict[str, Any] = {
    "str": "x\u00e9\n",
    "int": 7,
    "float": 1.5,
    "bool": True,
    "int | None": None,
    "list[str]": ["git", "diff"],
    "dict[str, str]": {"GIT_DIR": "/x"},
    "Capture": CAPTURE,
    "RefusalKind": "path_escape",
}


def _sample(cls: type[Any]) -> Any:
    return cls(**{f.name: SAMPLES[str(f.type)] for f in fields(cls)})


@pytest.mark.parametrize("cls", wire.REQUESTS.values(), ids=lambda c: c.__name__)
def test_a_request_survives_its_encoding(cls: type[Any]) -> None:
    request = _sample(cls)
    assert wire.decode_request(wire.encode(request)) == request


@pytest.mark.parametrize("cls", wire.REQUESTS.values(), ids=lambda c: c.__name__)
def test_its_answer_and_a_refusal_survive_theirs(cls: type[Any]) -> None:
    request = _sample(cls)
    answer = _sample(cls.answer)
    assert wire.decode_answer(wire.encode(answer), request) == answer
    refusal = wire.Refusal("too_large", "big")
    assert wire.decode_answer(wire.encode(refusal), request) == refusal


def test_every_field_of_every_message_is_one_the_wire_carries() -> None:
    annotations = {str(f.type) for cls in wire.MESSAGES for f in fields(cls)}
    assert annotations <= set(SAMPLES)


def test_the_json_is_what_older_executors_speak() -> None:
    # Unchanged on the wire: a host and an executor of before the typed messages still agree.
    assert json.loads(wire.encode(wire.ExecRequest("true", 5.0, 100))) == {
        "op": "exec",
        "command": "true",
        "timeout_s": 5.0,
        "max_output_bytes": 100,
    }
    assert json.loads(wire.encode(wire.Refusal("not_found", "x: no such file"))) == {
        "ok": False,
        "kind": "not_found",
        "message": "x: no such file",
    }
    assert json.loads(wire.encode(wire.ChannelError("refused"))) == {"channel_error": "refused"}
    older = b'{"op": "run", "argv": ["git"], "env": {}, "timeout_s": 600}'
    assert wire.decode_request(older) == wire.RunRequest(["git"], {}, 600.0)


def test_every_refusal_kind_is_an_observation_kind() -> None:
    assert set(get_args(wire.RefusalKind)) <= set(get_args(ObservationKind))


PING, EXEC = wire.PingRequest(), wire.ExecRequest("true", 5.0)
EXEC_OK = {"exit_code": 0, "timed_out": False, "duration_s": 0.1}
DUMP = {"head": "", "tail": "", "dropped": 0}
EXTRA = {**DUMP, "x": 1}


@pytest.mark.parametrize(
    ("line", "sent", "says"),
    [
        (b"[1]", PING, "answer: not a JSON object"),
        (b"\xff{", PING, "answer: not JSON"),
        (b'{"pid": 1}', PING, "no boolean 'ok'"),
        (b'{"ok": 1, "pid": 1}', PING, "no boolean 'ok'"),
        (b'{"ok": true}', PING, "PingAnswer: no 'pid'"),
        (b'{"ok": true, "pid": "1"}', PING, "PingAnswer.pid: str where int belongs"),
        (b'{"ok": true, "pid": true}', PING, "PingAnswer.pid: bool where int belongs"),
        (b'{"ok": true, "pid": 1, "root": 1}', PING, "PingAnswer: unknown field 'root'"),
        (b'{"ok": false, "kind": "ok", "message": ""}', PING, "Refusal.kind: str where"),
        (b'{"ok": false, "kind": [], "message": ""}', PING, "Refusal.kind: list where"),
        (
            json.dumps({"ok": True, **EXEC_OK, "stdout": DUMP, "stderr": []}).encode(),
            EXEC,
            "Capture: not a JSON object",
        ),
        (
            json.dumps(
                {"ok": True, **EXEC_OK, "stdout": DUMP, "stderr": {**DUMP, "x": 1}}
            ).encode(),
            EXEC,
            "Capture: unknown field 'x'",
        ),
    ],
)
def test_a_forged_or_broken_answer_is_malformed(
    line: bytes, sent: wire.Request[Any], says: str
) -> None:
    with pytest.raises(wire.Malformed, match=says):
        wire.decode_answer(line, sent)


@pytest.mark.parametrize(
    ("line", "says"),
    [
        (b'{"op": "exec", "command": "true"}', "ExecRequest: no 'timeout_s'"),
        (b'{"op": "exec", "command": 1, "timeout_s": 1}', "ExecRequest.command: int where str"),
        (b'{"op": "run", "argv": ["git", 1]}', r"RunRequest.argv: list where list\[str\]"),
        (b'{"op": "run", "argv": [], "env": {"A": 1}}', "RunRequest.env: dict where dict"),
        (b'{"op": "__init__"}', "unknown op '__init__'"),
        (b'{"command": "true"}', "unknown op None"),
    ],
)
def test_a_malformed_request_is_named(line: bytes, says: str) -> None:
    with pytest.raises(wire.Malformed, match=says):
        wire.decode_request(line)


def test_a_channel_error_line_is_that_or_malformed() -> None:
    assert wire.decode_channel_error(b'{"channel_error": "no"}') == wire.ChannelError("no")
    with pytest.raises(wire.Malformed, match="ChannelError: unknown field 'ok'"):
        wire.decode_channel_error(b'{"ok": true, "pid": 3}')
