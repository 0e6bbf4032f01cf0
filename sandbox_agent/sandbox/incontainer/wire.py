"""The executor's wire format: one message per request kind and one per answer, for both ends.

The host (``executor.py``, ``docker.py``) and the executor (``ops.py``, ``main.py``) import these
classes and nothing else speaks the channel. On the wire a message is one JSON line: a request
is ``{"op": <its op>, <fields>}``; an answer ``{"ok": true, <fields>}``, a :class:`Refusal`
``{"ok": false, "kind", "message"}``; the executor's word that it could not connect to the
host's socket is ``{"channel_error": <why>}``. Decoding checks every field's type, so a
malformed line is :class:`Malformed` (a ``ValueError``) here, never a ``KeyError`` further in.

Standard library only, Python 3.9+: it runs inside the container too.
"""

from __future__ import annotations

import json
from dataclasses import MISSING, dataclass, field, fields
from typing import Any, ClassVar, Generic, Literal, TypeVar, Union, get_args

RefusalKind = Literal[
    "invalid_args",
    "path_escape",
    "not_found",
    "is_directory",
    "not_utf8",
    "too_large",
    "timeout",
    "tool_failed",
]
"""Why the executor refused a request (a subset of the host's ``ObservationKind``)."""


class Malformed(ValueError):
    """A line that is not the message it should be (names the message and the field)."""


class Refused(Exception):
    """Raised inside the executor; answered as a :class:`Refusal`."""

    def __init__(self, kind: RefusalKind, message: str) -> None:
        super().__init__(message)
        self.kind: RefusalKind = kind
        self.message = message


# Answers.


@dataclass(frozen=True)
class Capture:
    """The first and last bytes of a stream (base64) and how many were cut between them."""

    head: str
    tail: str
    dropped: int


def joined(head: bytes, tail: bytes, dropped: int) -> str:
    """A head/tail capture as text, what was cut from the middle said where it was."""
    first = head.decode("utf-8", errors="replace")
    last = tail.decode("utf-8", errors="replace")
    if dropped:
        return f"{first}\n[... {dropped} bytes cut ...]\n{last}"
    return first + last


@dataclass(frozen=True)
class ExecAnswer:
    """A command ran (or timed out): its exit code and the head and tail of its output."""

    exit_code: int | None
    """``None`` when it timed out; ``128 + n`` when killed by signal ``n``, as bash says."""
    timed_out: bool
    stdout: Capture
    stderr: Capture
    duration_s: float


@dataclass(frozen=True)
class ReadAnswer:
    """A file's text."""

    text: str


@dataclass(frozen=True)
class RunAnswer:
    """An argv ran to its end: its exit code, all its stdout, and its stderr's ends."""

    exit_code: int
    """Negative when killed by a signal (``Popen.returncode``)."""
    stdout: str
    """All of it, base64."""
    stderr: str
    """Its head and tail as text."""


@dataclass(frozen=True)
class PingAnswer:
    """The executor is there."""

    pid: int


@dataclass(frozen=True)
class Done:
    """A request that has nothing to say back (``write``, ``killall``) succeeded."""


@dataclass(frozen=True)
class Refusal:
    """An expected failure of any request: the host raises it as a ``ToolError``."""

    kind: RefusalKind
    message: str


@dataclass(frozen=True)
class ChannelError:
    """The executor could not connect to the host's socket and stays on the exec stream."""

    channel_error: str


A = TypeVar("A")
A_co = TypeVar("A_co", covariant=True)


class Request(Generic[A_co]):
    """A request whose successful answer is an ``A_co``."""

    op: ClassVar[str]
    answer: ClassVar[type[Any]]


@dataclass(frozen=True)
class ExecRequest(Request[ExecAnswer]):
    """Run ``bash -c command`` in ``/workspace``; keep the head and tail of its output."""

    command: str
    timeout_s: float
    max_output_bytes: int = 65536
    op: ClassVar[str] = "exec"
    answer: ClassVar[type[Any]] = ExecAnswer


@dataclass(frozen=True)
class ReadRequest(Request[ReadAnswer]):
    """A workspace file as UTF-8 text, refused past ``max_bytes``."""

    path: str
    max_bytes: int
    op: ClassVar[str] = "read"
    answer: ClassVar[type[Any]] = ReadAnswer


@dataclass(frozen=True)
class WriteRequest(Request[Done]):
    """Write UTF-8 text to a workspace file, creating its parents."""

    path: str
    content: str
    max_bytes: int
    op: ClassVar[str] = "write"
    answer: ClassVar[type[Any]] = Done


@dataclass(frozen=True)
class RunRequest(Request[RunAnswer]):
    """Run an argv (git) with extra environment; all of stdout, refused past ``max_stdout``."""

    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    timeout_s: float = 600.0
    max_stdout: int = 1 << 62
    op: ClassVar[str] = "run"
    answer: ClassVar[type[Any]] = RunAnswer


@dataclass(frozen=True)
class PingRequest(Request[PingAnswer]):
    """Whether the executor is there, and its pid."""

    op: ClassVar[str] = "ping"
    answer: ClassVar[type[Any]] = PingAnswer


@dataclass(frozen=True)
class KillallRequest(Request[Done]):
    """Kill every process of the agent's user but the executor (PID 1 is immune)."""

    op: ClassVar[str] = "killall"
    answer: ClassVar[type[Any]] = Done


AnyRequest = Union[  # noqa: UP007 (Python 3.9 in the container)
    ExecRequest, ReadRequest, WriteRequest, RunRequest, PingRequest, KillallRequest
]
AnyAnswer = Union[ExecAnswer, ReadAnswer, RunAnswer, PingAnswer, Done, Refusal]  # noqa: UP007
REQUESTS: dict[str, type[Any]] = {
    r.op: r
    for r in (ExecRequest, ReadRequest, WriteRequest, RunRequest, PingRequest, KillallRequest)
}
MESSAGES = (
    *REQUESTS.values(),
    *(Capture, ExecAnswer, ReadAnswer, RunAnswer, PingAnswer, Done, Refusal, ChannelError),
)
"""Every message class (a test checks that each field's type is one :func:`_value` reads)."""


def encode(message: Request[Any] | AnyAnswer | ChannelError) -> bytes:
    """One JSON line: a request with its ``op``, an answer with ``ok``."""
    data: dict[str, Any] = {k: _plain(v) for k, v in vars(message).items()}
    if isinstance(message, Request):
        data = {"op": message.op, **data}
    elif not isinstance(message, ChannelError):
        data = {"ok": not isinstance(message, Refusal), **data}
    return json.dumps(data).encode() + b"\n"


def _plain(value: Any) -> Any:
    if isinstance(value, Capture):
        return dict(vars(value))
    return value


def decode_request(line: bytes) -> AnyRequest:
    """The request on ``line``.

    Raises:
        Malformed: not JSON, no known ``op``, or a field missing or of the wrong type.
    """
    data = _object(line, "request")
    op = data.pop("op", None)
    if not isinstance(op, str) or op not in REQUESTS:
        raise Malformed(f"request: unknown op {op!r}")
    request: AnyRequest = _build(REQUESTS[op], data)
    return request


def decode_answer(line: bytes, request: Request[A]) -> A | Refusal:
    """The answer to ``request`` on ``line``: its answer class, or a :class:`Refusal`.

    Raises:
        Malformed: not JSON, no boolean ``ok``, or a field missing or of the wrong type.
    """
    data = _object(line, "answer")
    ok = data.pop("ok", None)
    if not isinstance(ok, bool):
        raise Malformed(f"answer to {request.op}: no boolean 'ok'")
    answer: A | Refusal = _build(request.answer if ok else Refusal, data)
    return answer


def decode_channel_error(line: bytes) -> ChannelError:
    """The executor's word that it could not connect (see :class:`ChannelError`).

    Raises:
        Malformed: the line is anything else.
    """
    built: ChannelError = _build(ChannelError, _object(line, "channel error"))
    return built


def _object(line: bytes, what: str) -> dict[str, Any]:
    try:
        data = json.loads(line)
    except ValueError as e:  # UnicodeDecodeError included
        raise Malformed(f"{what}: not JSON ({e})") from None
    if not isinstance(data, dict):
        raise Malformed(f"{what}: not a JSON object")
    return data


_FIELDS: dict[type[Any], tuple[dict[str, str], frozenset[str]]] = {}
"""Per message class: each field's annotation, and the fields without a default."""


def _fields_of(cls: type[Any]) -> tuple[dict[str, str], frozenset[str]]:
    found = _FIELDS.get(cls)
    if found is None:
        every = fields(cls)
        required = (f.name for f in every if f.default is MISSING and f.default_factory is MISSING)
        found = _FIELDS[cls] = ({f.name: str(f.type) for f in every}, frozenset(required))
    return found


def _build(cls: type[Any], data: Any) -> Any:
    """An instance of the dataclass ``cls`` from ``data``, each field's type checked."""
    if not isinstance(data, dict):
        raise Malformed(f"{cls.__name__}: not a JSON object")
    known, required = _fields_of(cls)
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise Malformed(f"{cls.__name__}: unknown field {unknown[0]!r}")
    missing = sorted(required - set(data))
    if missing:
        raise Malformed(f"{cls.__name__}: no {missing[0]!r}")
    return cls(**{k: _value(known[k], v, cls, k) for k, v in data.items()})


_REFUSAL_KINDS = frozenset(get_args(RefusalKind))
_SCALARS: dict[str, tuple[type[Any], ...]] = {
    "str": (str,),
    "int": (int,),
    "float": (int, float),
    "bool": (bool,),
}


def _value(annotation: str, value: Any, cls: type[Any], name: str) -> Any:
    """``value`` when it is of the type ``annotation`` names; raises :class:`Malformed`."""
    if annotation.endswith(" | None"):
        if value is None:
            return None
        annotation = annotation[: -len(" | None")]
    if annotation == "Capture":
        return _build(Capture, value)
    if annotation == "RefusalKind":
        ok = isinstance(value, str) and value in _REFUSAL_KINDS
    elif annotation == "list[str]":
        ok = isinstance(value, list) and all(isinstance(v, str) for v in value)
    elif annotation == "dict[str, str]":
        ok = isinstance(value, dict) and all(isinstance(v, str) for v in value.values())
    else:
        types = _SCALARS.get(annotation)
        if types is None:
            raise Malformed(f"{cls.__name__}.{name}: the wire cannot carry {annotation}")
        ok = isinstance(value, types) and (annotation == "bool") == isinstance(value, bool)
    if not ok:
        what = type(value).__name__
        raise Malformed(f"{cls.__name__}.{name}: {what} where {annotation} belongs")
    return float(value) if annotation == "float" else value
