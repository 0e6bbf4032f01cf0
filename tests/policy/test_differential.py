"""Differential check against real bash: an allowed command runs no program the engine missed.

Every program name in the sandbox image's PATH is replaced by a stub that logs its name (and,
for programs that start others, then runs the real one). Each command the engine allows is run
with real ``bash -c`` in a network-less container; every program bash actually started must be
one the engine saw and judged.
"""

from __future__ import annotations

import os
import random
import shlex
import socket
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest
from docker.models.containers import Container

from sandbox_agent.policy.effects import command_effects
from sandbox_agent.policy.engine import RuleEngine
from sandbox_agent.policy.shell import analyze
from sandbox_agent.sandbox import engine as docker_engine
from sandbox_agent.sandbox.image import DEFAULT_IMAGE
from sandbox_agent.settings.files import preset_dir
from sandbox_agent.settings.load import load_policy
from tests.policy.corpus import ALLOW, DENY
from tests.sandbox.conftest import OWNER

pytestmark = pytest.mark.docker

LOGGED = [
    "cat",
    "head",
    "tail",
    "wc",
    "nl",
    "ls",
    "tree",
    "grep",
    "egrep",
    "fgrep",
    "rg",
    "cut",
    "tr",
    "diff",
    "cmp",
    "comm",
    "column",
    "file",
    "stat",
    "du",
    "basename",
    "dirname",
    "realpath",
    "readlink",
    "od",
    "md5sum",
    "sha256sum",
    "which",
    "date",
    "sleep",
    "seq",
    "jq",
    "pytest",
    "python",
    "python3",
    "curl",
    "wget",
    "id",
    "nc",
    "perl",
    "node",
    "sudo",
    "su",
    "make",
    "less",
    "man",
    "zip",
    "rsync",
    "ssh",
    "dd",
    "base64",
    "whoami",
    "vim",
    "nohup",
    "stdbuf",
]
PASSTHROUGH = ["bash", "sh", "timeout", "nice", "env", "find", "xargs", "git", "sed", "awk", "tar"]
PASSTHROUGH += ["mkdir", "touch", "cp", "mv", "rm", "tee", "sort", "uniq"]
SOUP = [
    "git",
    "status",
    "diff",
    "log",
    "cat",
    "ls",
    "grep",
    "-n",
    "-r",
    "src",
    ".",
    "|",
    "&&",
    ";",
    "||",
    "(",
    ")",
    "{",
    "}",
    "$(",
    ")",
    "`",
    "echo",
    "bash",
    "-c",
    "sh",
    "timeout",
    "5",
    "find",
    "-exec",
    "{}",
    "+",
    "\\;",
    "sed",
    "-n",
    "1p",
    "awk",
    "'{print}'",
    "'curl",
    "x'",
    '"id"',
    ">",
    "/tmp/o",
    "2>&1",
    "<",
    "src/app.py",
    "<<<",
    "x",
    "$'\\x69d'",
    "tee",
    "a.txt",
    "xargs",
    "env",
    "nice",
    "-n",
    "1",
    "command",
    "-v",
    "time",
    "pytest",
    "-q",
]
SOUP += ["<<EOF", "\nhi\nEOF\n", "<<'EOF'", "> out.txt", "2>/dev/null", "\n", "<<-EOF", "\n\tEOF\n"]
SOUP += [">", ">>", "/etc/w", "../v", "~/u", "/tmp/t", "/proc/self/root/etc/s", "tee", "-a", "cd"]
SOUP += ["==", "=~", "\n", "&>", "<<<", "'a b'", "$?"]
SOUP += ["sed", "-i", "-l", "1", "'w tests/w'", "--e='w tests/e'", "uniq", "-f", "cp", "-S"]
SOUP += ["tests/test_app.py", "sort", "--o=tests/o", "find", ".", "-exec", "git", "diff", "+"]
SOUP += ["--output=tests/g", "{}", "\\;", "-execdir", "touch", "conftest.py", "--t=tests", "mv"]
SOUP += ["$'tests/test_app.py\\0'", "{tests/test_app.py,}", "{s..u}ests/x", "'test'\\s/x", "tee"]
SOUP += ["grep", "--color", "-in", "a.txt", ":a w tests/l", "$!", "-d/", "<(cat a.txt)"]

SETUP = r"""
set -e
mkdir -p /stubs /out /workspace/src /workspace/tests
chown root /workspace  # the harness runs as root; git refuses a repository owned by another user
cd /workspace
printf 'def main():\n    return 1\n' > src/app.py
cp src/app.py src/old.py
printf 'a\nb\n' > a.txt; cp a.txt b.txt; cp a.txt data.txt; printf 'x,y\n' > data.csv
printf '{"name": "x"}\n' > package.json; printf 'hi\n' > README.md
mkdir -p .github; printf 'def test_a():\n    pass\n' > tests/test_app.py; echo ci > .github/ci.yml
git init -q . && git add -A && git -c user.email=a@b -c user.name=a commit -qm base
for name in $LOGGED; do
  printf '#!/bin/bash\necho "${0##*/}" >> "$LOG"\n' > /stubs/$name
done
for name in $PASSTHROUGH; do
  real=$(command -v $name)
  printf '#!/bin/bash\necho "${0##*/}" >> "$LOG"\nexec %s "$@"\n' "$real" > /stubs/$name
done
chmod +x /stubs/*
"""

RUN = r"""
cd /workspace
for f in /out/cmd_*; do
  i=${f##*_}
  env -i LOG=/out/log_$i PATH=/stubs HOME=/home/agent /usr/bin/timeout 5 /bin/bash -c "$(cat $f)" \
    </dev/null >/dev/null 2>&1 || true
  touch /out/log_$i
done
"""


@pytest.fixture(scope="module")
def container(docker_client: docker.DockerClient) -> Iterator[Container]:
    name = f"policy-diff-{socket.gethostname()}-{os.getpid()}"[:60]
    box = docker_client.containers.run(
        DEFAULT_IMAGE,
        ["sleep", "600"],
        detach=True,
        network_disabled=True,
        user="root",
        labels={docker_engine.OWNER_LABEL: OWNER},
        name=name,
        environment={"LOGGED": " ".join(LOGGED), "PASSTHROUGH": " ".join(PASSTHROUGH)},
    )
    try:
        result = box.exec_run(["bash", "-c", SETUP])
        assert result.exit_code == 0, _text(result.output)
        yield box
    finally:
        box.remove(force=True)


def candidates() -> list[str]:
    rng = random.Random(4)
    soup = [" ".join(rng.choices(SOUP, k=rng.randint(1, 9))) for _ in range(6000)]
    return [c for c, _ in ALLOW] + [c for c, _ in DENY] + soup


@pytest.fixture(scope="module")
def allowed(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    # The strict allowlist: what its static reading promises is what bash is checked against
    # (the default preset leaves what it cannot read to the container, by design).
    engine = RuleEngine(
        load_policy(tmp_path_factory.mktemp("repo"), preset_dir() / "strict.toml").policy
    )
    commands = sorted({c for c in candidates() if engine.check_command(c).decision == "allow"})
    assert len(commands) >= 80
    return commands


@pytest.fixture(scope="module")
def ran(container: Container, allowed: list[str]) -> list[set[str]]:
    return run_in_bash(container, [*CONTROLS, *allowed])


def test_allowed_commands_run_only_programs_the_engine_saw(
    allowed: list[str], ran: list[set[str]]
) -> None:
    for (command, expected), programs in zip(CONTROLS.items(), ran, strict=False):
        assert expected <= programs, f"the harness did not see {command!r} run {expected}"
    missed = []
    for command, programs in zip(allowed, ran[len(CONTROLS) :], strict=True):
        seen = {argv[0] for argv in command_effects(command).runs}
        if not programs <= seen:
            missed.append((command, sorted(programs - seen)))
    assert not missed, missed


def test_allowed_commands_change_nothing_outside_the_workspace(
    container: Container, ran: list[set[str]]
) -> None:
    """Files created or changed by the run, outside /workspace, /tmp and the harness' /out."""
    find = (
        "find / -xdev \\( -path /proc -o -path /sys -o -path /dev -o -path /workspace "
        "-o -path /tmp -o -path /out \\) -prune -o -newer /out/marker -print"
    )
    changed = _text(container.exec_run(["bash", "-c", find]).output).split()
    assert changed == ["/var/tmp", "/var/tmp/control"], f"only the control may write: {changed}"


def test_allowed_commands_change_no_protected_file(
    container: Container, ran: list[set[str]]
) -> None:
    """After every allowed command ran for real, the protected files are as committed."""
    status = container.exec_run(
        ["git", "status", "--porcelain", "--untracked-files=all", "--", "tests", ".github"],
        workdir="/workspace",
    )
    assert status.exit_code == 0, _text(status.output)
    assert _text(status.output) == "", "protected files changed by allowed commands"


CONTROLS = {
    "bash -c 'curl x'": {"bash", "curl"},
    "find . -maxdepth 0 -exec id \\;": {"find", "id"},
    "git -c alias.x='!id' x": {"git", "id"},
    "echo x | sed 'e whoami'": {"sed", "whoami"},
    "echo x > /var/tmp/control": set(),
}
"""Denied commands whose programs the stubs must log: proof that the harness sees executions."""


def run_in_bash(container: Container, commands: list[str]) -> list[set[str]]:
    """Run each command with real ``bash -c`` in the container; the programs each started."""
    script = "rm -f /out/*\n" + "".join(
        f"printf %s {shlex.quote(c)} > /out/cmd_{i:05d}\n" for i, c in enumerate(commands)
    )
    setup = container.exec_run(["bash", "-c", script + "touch /out/marker\n"])
    assert setup.exit_code == 0, _text(setup.output)
    assert container.exec_run(["bash", "-c", RUN]).exit_code == 0
    dump = _text(
        container.exec_run(
            ["bash", "-c", 'for f in /out/log_*; do echo "=="; cat "$f"; done']
        ).output
    )
    logs = [set(chunk.split()) for chunk in dump.split("==")[1:]]
    assert len(logs) == len(commands)
    return logs


def _text(output: bytes | Iterator[bytes]) -> str:
    data = output if isinstance(output, bytes) else b"".join(output)
    return data.decode("utf-8", "replace")


VECTORS = [
    "x='a[$(id)]'; cat <<< ${!x}",
    "TERM='$(id)'; cat <<< ${TERM@P}",
    "TERM='$(id)'; cat <<EOF\n${TERM@P}\nEOF",
    "[ -v 'a[$(id)]' ]",
    "TERM='a[$(id)]'; [[ $TERM -eq 1 ]]",
    "TERM='a[$(id)]'; cat <<< $((TERM))",
    "cat <<EOF | id\nhi\nEOF",
    "nice <<EOF id\nEOF\n",
    "git -c alias.x='!id' x",
    "find . -maxdepth 0 -execdir id \\;",
    "cat <<EOF\n`id`\nEOF",
    "cat <<EOF | cat\nx `id` y\nEOF",
    "echo x | sed -n ':a e id'",
]
"""Code-execution vectors through allowed programs; each must really run ``id`` in bash."""


def test_real_injection_vectors_are_denied(container: Container, tmp_path: Path) -> None:
    engine = RuleEngine(load_policy(tmp_path, preset_dir() / "strict.toml").policy)
    for command in VECTORS:
        assert engine.check_command(command).decision == "deny", command
    ran = run_in_bash(container, VECTORS)
    not_real = [c for c, programs in zip(VECTORS, ran, strict=True) if "id" not in programs]
    assert not not_real, f"these no longer run code in bash: {not_real}"


def generated_words() -> list[str]:
    """Brace expansions, quoting and ANSI-C escapes, mixed at random (seeded)."""
    rng = random.Random(11)
    atoms = ["{", "}", ",", "..", "a", "b", "1", "3", "x", "''", '"q"', "\\,", "\\{", "-", "0"]
    atoms += ["Z", "c", "2", "{a,b}", "{1..3}", "{x,}", "$'\\x41'", "$'\\t'", "$'\\0'", "$?"]
    return sorted({"".join(rng.choices(atoms, k=rng.randint(1, 7))) for _ in range(1500)})


def engine_fields(word: str) -> list[str] | None:
    """The words the engine reads ``word`` as, or ``None`` when it refuses the word."""
    result = analyze(f"printf '<%s>' {word}")
    if result.problems or len(result.commands) != 1:
        return None
    fields: list[str] = []
    for part in result.commands[0].argv[2:]:
        if part.text is None:
            return None
        fields += part.fields if part.fields is not None else [part.text]
    return fields


def test_words_read_as_bash_reads_them(container: Container) -> None:
    """Every word the engine accepts has exactly the fields bash gives it (printf shows them)."""
    words = generated_words()
    script = "".join(f"printf '<%s>' {w}; echo\n" for w in words)
    result = container.exec_run(["bash", "-c", script])
    lines = _text(result.output).split("\n")
    accepted = [(w, line, engine_fields(w)) for w, line in zip(words, lines, strict=False)]
    checked = [(w, line, fields) for w, line, fields in accepted if fields is not None]
    assert len(checked) >= 500
    wrong = [
        (w, line, fields)
        for w, line, fields in checked
        if line != ("".join(f"<{f}>" for f in fields) if fields else "<>")
    ]
    assert not wrong, wrong[:10]


def test_escaped_blanks_read_as_bash_reads_them(container: Container) -> None:
    """Quoted parts joined by an escaped blank are one word to bash (``'a b'\\ c``)."""
    rng = random.Random(13)
    atoms = ["a", "'q r'", '"s"', "\\ ", "\\\t", "$'\\x20'", "x", "''", "\\\\"]
    words = sorted({"".join(rng.choices(atoms, k=rng.randint(1, 6))) for _ in range(600)})
    script = "".join(f"printf '<%s>' {w}; echo\n" for w in words)
    lines = _text(container.exec_run(["bash", "-c", script]).output).split("\n")
    checked = [
        (w, line, fields)
        for w, line in zip(words, lines, strict=False)
        if (fields := engine_fields(w)) is not None
    ]
    assert len(checked) >= 150
    wrong = [(w, line, f) for w, line, f in checked if line != "".join(f"<{x}>" for x in f)]
    assert not wrong, wrong[:10]
