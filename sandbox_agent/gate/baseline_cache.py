"""The baseline's outcomes, kept under a key covering everything they depend on.

The baseline runs the tests on the original code in a clean copy: its outcomes are a function of
the tree (the copy-on-write snapshot's content key, ``sandbox/treekey.py``), the environment
image, the test command and how the gate runs it (the pinned harness, the timeout, bytecode),
SWE-bench's hidden tests when there are any, and the gate's own code. A run whose key is one a
run before it kept (``revise``, ``resume``, the same ``fix`` again, the tasks of a batch on one
commit) takes the outcomes from the entry and starts its first model turn without running them.

An entry is data, like a run directory: one that does not check out is never trusted, it is
recomputed (and replaced). It must parse as this schema; its key must be the one asked for and
the one its own material hashes to; and its MAC (HMAC-SHA256 under a secret kept beside the
entries, ``0600``, made once) must match, so an entry edited, copied from another key or from
another machine is a stranger. What was kept is every run of the baseline whole (the report,
the output, the harness record, what was streamed), so a finish is judged exactly as if it had
run now. A run the sandbox failed or that timed out is not kept (load can do that).

The file is the MAC's hex digest, a newline and the entry's JSON: read as bytes, the MAC is taken
over them as they are and the entry parsed from them once (a suite of 62,416 tests keeps about
22 MB; its check is the look-up's time). Without hidden tests the run judged against is the
run told, kept once (``judged`` is ``None``).
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import secrets
import tempfile
import time
from collections.abc import Callable
from functools import cache
from pathlib import Path

from pydantic import Field, ValidationError

from sandbox_agent import __version__, lru
from sandbox_agent.gate.harness import UsedFiles
from sandbox_agent.gate.hidden import HiddenTests
from sandbox_agent.gate.testrun import Pin, TestRun
from sandbox_agent.settings.tree import GateSection
from sandbox_agent.types import Frozen

SCHEMA = 2
"""2: the MAC and the entry as two lines, ``judged`` kept only when it is another run."""
DIR = "baselines"
"""Beside the runs directory (as ``env-logs``)."""
SECRET_FILE = ".secret"
MAX_BYTES = 512 << 20
"""The entries kept in all; past it the least recently used go."""
_GATE_DIR = Path(__file__).parent


@cache
def gate_version() -> str:
    """The package's version and a hash of the gate's own code (every module of ``gate/``)."""
    digest = hashlib.sha256(__version__.encode() + b"\0")
    for path in sorted(_GATE_DIR.glob("*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return f"{__version__}+{digest.hexdigest()[:16]}"


class Material(Frozen):
    """What the baseline's outcomes depend on: the key is its hash."""

    tree: str
    """The snapshot's content key (HEAD, index, uncommitted changes, owner)."""
    image: str
    """The environment image's id."""
    command: str
    pin: str
    """How the gate runs the command: the pinned harness (JSON), or why it is not pinned."""
    timeout_s: float
    ignore_tree_bytecode: bool
    hidden: str
    """sha256 of SWE-bench's test patch and lists (``""``: none)."""
    gate: str

    def key(self) -> str:
        return hashlib.sha256(self.model_dump_json().encode()).hexdigest()


def material(
    tree: str,
    image: str,
    config: GateSection,
    pin: Pin | None,
    pin_note: str | None,
    hidden: HiddenTests | None,
) -> Material:
    """The material of a baseline run with these settings (``config.test_command`` is set)."""
    return Material(
        tree=tree,
        image=image,
        command=str(config.test_command),
        pin=pin.model_dump_json() if pin is not None else f"not pinned: {pin_note}",
        timeout_s=config.timeout_s,
        ignore_tree_bytecode=config.allow_harness_changes,
        hidden=hashlib.sha256(hidden.model_dump_json().encode()).hexdigest() if hidden else "",
        gate=gate_version(),
    )


class Entry(Frozen):
    """One kept baseline: its material, the run that made it, and its runs."""

    entry_schema: int = Field(alias="schema")
    key: str
    material: Material
    run_id: str
    made_at: float
    seen: TestRun
    """The baseline the model is told of."""
    judged: TestRun | None
    """What a finish is judged against: with hidden tests the baseline with them, else ``None``
    (the run told)."""
    used: tuple[UsedFiles | None, UsedFiles | None]
    """The files each run used (``seen``'s, ``judged``'s): a harness record's dump leaves them
    out (they are not part of its fingerprint), and ``harness_files`` protects them."""

    def runs(self) -> tuple[TestRun, TestRun]:
        """``seen`` and ``judged`` whole: each harness record with the files its run used."""
        judged = self.seen if self.judged is None else self.judged
        return _with_used(self.seen, self.used[0]), _with_used(judged, self.used[1])


class BaselineSource(Frozen):
    """Where a run's baseline came from (``result.json``'s ``baseline_source``)."""

    cached: bool
    """Taken from an entry an earlier run kept (no test ran for it)."""
    key: str | None = None
    run_id: str | None = None
    """The run whose baseline it is (this run's own when it ran now)."""
    check_s: float = 0.0
    """The time the entry's look-up and check took."""
    note: str = ""
    """Why it ran now: no entry, an entry refused (and why), or what cannot be keyed."""


class BaselineCache:
    """The entries under ``root`` for one run: its tree and image (``None``: not keyed)."""

    def __init__(self, root: Path, tree: str | None, image: str | None, run_id: str) -> None:
        self.root, self.tree, self.image, self.run_id = root, tree, image, run_id
        self.source = BaselineSource(cached=False, note="not looked up")

    def material(
        self, config: GateSection, pin: Pin | None, note: str | None, hidden: HiddenTests | None
    ) -> Material | None:
        """This run's material, or ``None`` (said in ``source``) when it cannot be keyed."""
        if self.tree is None:
            why = "not cached: the tree has no content key (a submodule, or no snapshot)"
            self.source = BaselineSource(cached=False, run_id=self.run_id, note=why)
            return None
        if self.image is None:
            why = "not cached: no environment image id"
            self.source = BaselineSource(cached=False, run_id=self.run_id, note=why)
            return None
        return material(self.tree, self.image, config, pin, note, hidden)

    def load(self, wanted: Material) -> Entry | None:
        """The entry of ``wanted``'s key when it checks out; else ``None`` (why in ``source``)."""
        started = time.monotonic()
        key = wanted.key()
        entry, why = self._read(key, wanted)
        spent = round(time.monotonic() - started, 4)
        if entry is None:
            self.source = BaselineSource(
                cached=False, key=key, run_id=self.run_id, check_s=spent, note=why
            )
            return None
        with contextlib.suppress(OSError):
            os.utime(self._path(key))  # used now: trimmed last
        note = f"from the cache: the baseline of run {entry.run_id}"
        self.source = BaselineSource(
            cached=True, key=key, run_id=entry.run_id, check_s=spent, note=note
        )
        return entry

    def save(self, wanted: Material, seen: TestRun, judged: TestRun) -> None:
        """Keep the baseline's runs under ``wanted``'s key (not a run that failed or timed out)."""
        if any(r.result is None or r.result.timed_out for r in (seen, judged)):
            return
        entry = Entry.model_validate(
            {
                "schema": SCHEMA,
                "key": wanted.key(),
                "material": wanted,
                "run_id": self.run_id,
                "made_at": time.time(),
                "seen": seen,
                "judged": None if judged is seen else judged,
                "used": tuple(r.harness.used if r.harness else None for r in (seen, judged)),
            }
        )
        body = entry.model_dump_json(by_alias=True).encode()
        with contextlib.suppress(OSError):
            secret = self._secret()
            self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd, tmp = tempfile.mkstemp(dir=self.root, prefix=".part-")
            with os.fdopen(fd, "wb") as f:
                f.write(_mac(secret, body).encode() + b"\n" + body)
            Path(tmp).replace(self._path(entry.key))
            trim(self.root, MAX_BYTES)

    def _path(self, key: str) -> Path:
        return self.root / f"{key}.json"

    def _read(self, key: str, wanted: Material) -> tuple[Entry | None, str]:
        path = self._path(key)
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return None, "no entry for this key: the baseline ran"
        except OSError as e:
            return None, f"the entry could not be read ({e.strerror}): the baseline ran"
        mac, newline, body = raw.partition(b"\n")
        try:
            secret = self._existing_secret()
        except OSError:
            secret = None
        if not newline or secret is None:
            return None, "refused an entry that is not one (unreadable, or no secret)"
        if not hmac.compare_digest(mac, _mac(secret, body).encode()):
            return None, "refused an entry whose MAC does not match (edited, or not made here)"
        try:
            entry = Entry.model_validate_json(body)
        except ValidationError:
            return None, "refused an entry of another schema"
        if entry.entry_schema != SCHEMA:
            return None, f"refused an entry of schema {entry.entry_schema}, not {SCHEMA}"
        if entry.key != key or entry.material.key() != key or entry.material != wanted:
            return None, "refused an entry made for another key"
        return entry, ""

    def _existing_secret(self) -> bytes | None:
        with contextlib.suppress(FileNotFoundError):
            return (self.root / SECRET_FILE).read_bytes()
        return None

    def _secret(self) -> bytes:
        """The MAC's secret, made once (``0600``)."""
        path = self.root / SECRET_FILE
        found = self._existing_secret()
        if found is not None:
            return found
        self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, tmp = tempfile.mkstemp(dir=self.root, prefix=".part-")  # mode 0600
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(secrets.token_bytes(32))
            with contextlib.suppress(FileExistsError):  # another process made it first
                path.hardlink_to(tmp)  # whole, or not at all
        finally:
            Path(tmp).unlink()
        return path.read_bytes()


def run_or_reuse(
    cache: BaselineCache | None,
    settings: tuple[GateSection, Pin | None, str | None, HiddenTests | None],
    run: Callable[[], tuple[TestRun, TestRun]],
) -> tuple[TestRun, TestRun]:
    """The baseline's runs (told, judged by): from ``cache`` when it holds them, else ``run()``.

    ``settings``: the gate's settings, its pin (or why there is none) and its hidden tests.
    """
    if cache is None:
        return run()
    wanted = cache.material(*settings)
    entry = cache.load(wanted) if wanted is not None else None
    if entry is not None:  # the same tree, image, command, harness and gate: no test runs
        return entry.runs()
    seen, judged = run()
    if wanted is not None:
        cache.save(wanted, seen, judged)
    return seen, judged


def _with_used(run: TestRun, used: UsedFiles | None) -> TestRun:
    if run.harness is None or used is None:
        return run
    return run.model_copy(update={"harness": run.harness.model_copy(update={"used": used})})


def _mac(secret: bytes, body: bytes) -> str:
    return hmac.new(secret, body, hashlib.sha256).hexdigest()


def trim(root: Path, bound: int) -> list[Path]:
    """Remove the least recently used entries until those kept are within ``bound`` bytes."""
    return lru.trim(root.glob("*.json"), bound)
