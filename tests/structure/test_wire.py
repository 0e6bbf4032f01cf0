"""Both ends of the container boundary speak the one wire format of ``incontainer/wire.py``.

The executor's package runs inside the container with the image's python (3.9 or later): it
imports the standard library and its own modules only, and ships whole in one ``python3 -c``.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path
from typing import Any

import sandbox_agent
from sandbox_agent.sandbox import executor
from sandbox_agent.sandbox.incontainer import wire

PACKAGE = Path(sandbox_agent.__file__).parent
IN_CONTAINER = PACKAGE / "sandbox" / "incontainer"
WIRE = "sandbox_agent.sandbox.incontainer.wire"
HOST_ENDS = (
    "sandbox/executor.py",
    "sandbox/docker.py",
    "sandbox/calls.py",
    "sandbox/launch.py",
    "sandbox/container.py",
    "sandbox/diffbounds.py",
)


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


def _imports(path: Path) -> list[str]:
    """Absolute modules ``path`` imports (relative imports left out)."""
    names = []
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names.append(node.module or "")
    return names


def test_the_executor_imports_only_the_standard_library_and_itself() -> None:
    foreign = [
        f"{path.name}: {name}"
        for path in sorted(IN_CONTAINER.glob("*.py"))
        for name in _imports(path)
        if name.split(".")[0] not in sys.stdlib_module_names
    ]
    assert foreign == []


def test_the_executor_parses_as_python_3_9() -> None:
    for path in sorted(IN_CONTAINER.glob("*.py")):
        ast.parse(path.read_text(encoding="utf-8"), filename=str(path), feature_version=(3, 9))


def _shipped() -> dict[str, str]:
    """The sources the bundle carries, read back from its ``run({...})`` line."""
    call = ast.parse(executor.EXECUTOR_SOURCE).body[-1]
    assert isinstance(call, ast.Expr)
    assert isinstance(call.value, ast.Call)
    sources: dict[str, str] = ast.literal_eval(call.value.args[0])
    return sources


def test_the_bundle_ships_every_module_and_the_wire_the_host_imports() -> None:
    sources = _shipped()
    assert set(sources) == {p.stem for p in IN_CONTAINER.glob("*.py")}
    assert sources["wire"] == Path(wire.__file__).read_text(encoding="utf-8")
    assert len(executor.EXECUTOR_SOURCE.encode()) < 131072  # one execve argument


def _keys(node: ast.AST) -> list[ast.expr | None]:
    if isinstance(node, ast.Dict):
        return list(node.keys)
    if isinstance(node, ast.Subscript):
        return [node.slice]
    if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "get":
        return list(node.args[:1])
    return []


def _wire_spellings(path: Path) -> list[str]:
    """Places that build or read a message by hand: an ``"op"``/``"ok"`` key or subscript."""
    return [
        f"{path.name}:{key.lineno}"
        for node in ast.walk(_tree(path))
        for key in _keys(node)
        if isinstance(key, ast.Constant) and key.value in ("op", "ok", "channel_error")
    ]


def test_no_end_spells_a_message_outside_the_wire_module() -> None:
    ends = [PACKAGE / rel for rel in HOST_ENDS] + sorted(IN_CONTAINER.glob("*.py"))
    spelled = [hit for path in ends if path.name != "wire.py" for hit in _wire_spellings(path)]
    assert spelled == []


def _imported_from(path: Path) -> set[str]:
    """The in-container modules ``path`` imports (``from package import wire`` included)."""
    found = set()
    for node in ast.walk(_tree(path)):
        module = node.module or "" if isinstance(node, ast.ImportFrom) else ""
        if module.endswith(".incontainer"):
            found |= {f"{module}.{alias.name}" for alias in node.names}  # type: ignore[attr-defined]
        elif ".incontainer." in module:
            found.add(module)
    return found


def test_the_host_takes_its_messages_from_the_wire_module_only() -> None:
    used = {rel: _imported_from(PACKAGE / rel) for rel in HOST_ENDS}
    assert [f"{rel}: {modules - {WIRE}}" for rel, modules in used.items() if modules - {WIRE}] == []
    assert WIRE in used["sandbox/executor.py"]
    assert WIRE in used["sandbox/calls.py"]  # the requests, exec among them


def test_the_executor_answers_through_the_wire_module() -> None:
    for name in ("ops.py", "main.py", "channel.py"):
        assert any(
            isinstance(n, ast.ImportFrom) and n.module == "wire" and n.level == 1
            for n in ast.walk(_tree(IN_CONTAINER / name))
        ), name


def test_the_shipped_bundle_runs_and_speaks_the_wire() -> None:
    # The bundle as the container gets it, on this host's python over stdio (no socket given):
    # requests that touch nothing outside /workspace.
    requests: list[wire.Request[Any]] = [wire.PingRequest(), wire.ReadRequest("nothing", 10)]
    lines = b"".join(wire.encode(r) for r in requests) + b'{"op": "format c:"}\n'
    done = subprocess.run(
        [sys.executable, "-c", executor.EXECUTOR_SOURCE],
        input=lines,
        capture_output=True,
        timeout=60,
        check=True,
    )
    ping, read, bad = done.stdout.splitlines()
    assert isinstance(wire.decode_answer(ping, wire.PingRequest()), wire.PingAnswer)
    missing = wire.Refusal("not_found", "nothing: no such file")
    assert wire.decode_answer(read, requests[1]) == missing
    refused = wire.decode_answer(bad, requests[0])
    assert refused == wire.Refusal("invalid_args", "request: unknown op 'format c:'")
