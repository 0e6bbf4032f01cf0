"""``DockerSandbox``: every tool call in a throwaway, hardened container over a repo copy.

The container runs a tiny reaper as PID 1 (it cannot be killed from inside and reaps orphans);
tool calls go through one persistent executor channel (``executor.py``, spoken through
``calls.py``), so a call costs about what a local ``bash -c`` costs. A sandbox starts over the
commit's cached snapshot (``cow.py``) or over a fresh copy (``launch.py``); ``docker.errors``
are mapped to ``SandboxError`` where they enter (``calls.py``, ``container.py``).
"""

from __future__ import annotations

import atexit
import contextlib
import signal
import tempfile
import threading
import weakref
from pathlib import Path
from types import TracebackType
from typing import Literal

import docker

from sandbox_agent.errors import SandboxError, ToolError, UserError
from sandbox_agent.sandbox import cow, engine, overlay
from sandbox_agent.sandbox.base import DEFAULT_MAX_OUTPUT_BYTES, ExecResult
from sandbox_agent.sandbox.calls import CHANNEL_MARGIN_S, GIT_TIMEOUT_S, ExecutorCalls
from sandbox_agent.sandbox.container import (
    DEFAULT_CONFIG,
    DockerSandboxConfig,
    judged_in,
    remove_container,
    user_and_owner,
)
from sandbox_agent.sandbox.executor import ExecutorChannel
from sandbox_agent.sandbox.image import Progress, ensure_image, print_to_stderr
from sandbox_agent.sandbox.launch import Copied, copy_and_start
from sandbox_agent.sandbox.listener import ChannelListener
from sandbox_agent.sandbox.repoinfo import TreeStatus, check_repo
from sandbox_agent.sandbox.runtime import require_runtime
from sandbox_agent.sandbox.snapcache import UNSHARED_MARK, Snapshot
from sandbox_agent.sandbox.workspace import (
    Workspace,
    baseline_blob,
    export_baseline,
    remove_workspace,
)

__all__ = ["DEFAULT_CONFIG", "DockerSandbox", "DockerSandboxConfig"]

_CHANNEL_MARGIN_S = CHANNEL_MARGIN_S
"""Past an ``exec``'s own timeout (a module name, so that tests can shorten it)."""

_LIVE: weakref.WeakSet[DockerSandbox] = weakref.WeakSet()


def _close_live() -> None:
    """At interpreter exit: remove what an unclosed sandbox left (best effort)."""
    for sandbox in list(_LIVE):
        with contextlib.suppress(SandboxError):
            sandbox.close()


atexit.register(_close_live)


class DockerSandbox(ExecutorCalls):
    """The Sandbox protocol over a Docker container; build one with :meth:`create`."""

    def __init__(
        self,
        client: docker.DockerClient,
        container_id: str,
        workspace: Workspace,
        *,
        user: str,
        config: DockerSandboxConfig,
        channel: ExecutorChannel | None = None,
        run_id: str = "sandbox",
        workspace_root: Path | None = None,
        listener: ChannelListener | None = None,
        read_only: tuple[str, ...] | None = None,
        layered: cow.Layered | None = None,
    ) -> None:
        self._client = client
        self._layered = layered
        self._read_only = read_only
        self._listener = listener
        self.container_id = container_id
        self._ws = workspace
        self._user = user
        self.config = config
        self.baseline = workspace.baseline
        """Sha of the commit ``diff()`` compares against."""
        self.run_id = run_id
        self._workspace_root = workspace_root
        self._lock = threading.RLock()
        self._closed = False
        self._retiring = cow.Retiring()
        """Its clean copies being removed after their verdicts (waited for on close)."""
        self._retire_into: cow.Retiring | None = None
        """A clean copy: its maker's, which removes it on a thread when it is closed."""
        self._channel = channel or self._open_channel()
        _LIVE.add(self)

    @property
    def read_only(self) -> tuple[str, ...] | None:
        """The baseline's paths mounted read-only: ``.git`` and the protected ones."""
        return self._read_only

    @property
    def snapshot_key(self) -> str | None:
        """The content key of the snapshot it is layered on (``None``: a copy, or not shared)."""
        key = self._layered.snapshot.key if self._layered is not None else None
        return None if key is None or UNSHARED_MARK in key else key

    @property
    def workspace(self) -> Path:
        """Host path of the workspace copy (mounted at ``/workspace``)."""
        return self._ws.repo

    @property
    def workspace_dir(self) -> Path:
        """The ``sandbox-agent-ws-*`` directory holding the copy (removed by ``close``)."""
        return self._ws.root

    @classmethod
    def create(
        cls,
        repo: Path,
        config: DockerSandboxConfig = DEFAULT_CONFIG,
        *,
        run_id: str,
        workspace_root: Path | None = None,
        progress: Progress = print_to_stderr,
        initial_patch: bytes | None = None,
        status: TreeStatus | None = None,
    ) -> DockerSandbox:
        """Snapshot ``repo``, make sure the image exists and start the container.

        Over the commit's cached snapshot when there is one (``cow``); else over a copy, the
        container starting on another thread once the files are copied, while the baseline
        commit is written (``launch``). ``.git`` and the baseline's paths that
        ``config.protect`` matches are read-only mounts in it (``sandbox.protect``).
        ``initial_patch`` (an earlier run's, for ``revise``) is applied after the baseline,
        before the model's first command: inside a layered sandbox, or to the copy.
        ``status``: ``repo``'s ``git status`` taken moments ago (``inspect_repo``), not read
        again.

        Raises:
            EngineUnavailableError: no engine, no permission, or the image build failed.
            RepoNotFoundError: ``repo`` is not a directory.
            SandboxError: any other engine or snapshot failure (nothing is left behind).
        """
        client = engine.connect()
        require_runtime(client, config.limits.runtime, network=config.limits.network)
        ensure_image(client, config.image, progress=progress)
        source = check_repo(repo)
        where = (workspace_root, status)
        made = cls._try_layered(client, source, config, run_id, where, progress, initial_patch)
        if made is not None:
            return made
        up = copy_and_start(client, source, config, run_id, workspace_root, progress, initial_patch)
        return cls._over(client, up, config, run_id, workspace_root)

    @classmethod
    def _over(
        cls,
        client: docker.DockerClient,
        up: Copied | cow.Started,
        config: DockerSandboxConfig,
        run_id: str,
        workspace_root: Path | None,
    ) -> DockerSandbox:
        """The sandbox over a started container, copied or layered."""
        return cls(
            client,
            up.container_id,
            up.workspace,
            user=user_and_owner(config)[0],
            config=config,
            channel=up.channel,
            run_id=run_id,
            workspace_root=workspace_root,
            listener=up.listener,
            read_only=up.read_only,
            layered=up.layered if isinstance(up, cow.Started) else None,
        )

    @classmethod
    def _try_layered(
        cls,
        client: docker.DockerClient,
        source: Path,
        config: DockerSandboxConfig,
        run_id: str,
        where: tuple[Path | None, TreeStatus | None],
        progress: Progress,
        initial_patch: bytes | None = None,
    ) -> DockerSandbox | None:
        """A sandbox over the tree's cached snapshot; ``None``: copy the repo as before.

        ``where``: the workspace root, and the tree's status when it was just taken.
        ``initial_patch`` (``revise``) is applied inside, before the model's first command;
        one that touches a protected path, or does not apply, gets the copy (which says why).
        """
        workspace_root, status = where
        parent = cow.parent_dir(config, workspace_root)
        if initial_patch and not cow.layers_keep_protection(initial_patch, config.protect):
            return None
        snap = cow.cached_snapshot(source, config, parent, user_and_owner(config)[1], status)
        if snap is None:
            return None
        first = cls._standby_for(snap, config, run_id, workspace_root)
        if config.gate_copy_at_start:
            first.begin()  # the gate's first copy starts beside this sandbox's container
        try:
            made = cls._layered_on(client, snap, config, run_id, workspace_root, standby=True)
        except BaseException as e:
            first.close()
            if not isinstance(e, SandboxError):
                raise
            # an engine without overlay volumes: copy as before
            progress(f"sandbox: copying the repository (no copy-on-write layer: {e})")
            return None
        if config.gate_copy_at_start and made._layered is not None:
            made._layered.standby = first  # before any command: one would start another
        if initial_patch and not made._apply_inside(
            initial_patch.decode("utf-8", "surrogateescape")
        ):
            made.close()  # and its clean copy made ahead
            return None
        return made

    @classmethod
    def _layered_on(
        cls,
        client: docker.DockerClient,
        snap: Snapshot,
        config: DockerSandboxConfig,
        run_id: str,
        workspace_root: Path | None,
        *,
        standby: bool,
        patch: bytes = b"",
    ) -> DockerSandbox:
        """A sandbox over overlay layers of ``snap``.

        ``standby``: it makes the gate's clean copies ahead, from its first command on (while
        the model works); a clean copy itself does not. ``patch``: ``cow.start``'s.
        """
        parent = cow.parent_dir(config, workspace_root)
        owner = user_and_owner(config)
        up = cow.start(
            client, snap, config, run_id=run_id, parent=parent, user_owner=owner, patch=patch
        )
        sandbox = cls._over(client, up, config, run_id, workspace_root)
        up.layered.ahead = standby
        return sandbox

    def _begin_standby(self) -> None:
        """Start the gate's next clean copy now, while the model works."""
        if self._layered is None or self._closed:
            return
        standby = self._standby_of(self._layered)
        self._layered.standby = standby
        standby.begin()

    def _standby_of(self, layered: cow.Layered, patch: bytes = b"") -> cow.Standby[DockerSandbox]:
        """A clean copy to make: a layered sandbox on the same snapshot, without network."""
        root = self._workspace_root
        return self._standby_for(layered.snapshot, self.config, self.run_id, root, patch)

    @staticmethod
    def _standby_for(
        snapshot: Snapshot,
        base: DockerSandboxConfig,
        run_id: str,
        root: Path | None,
        patch: bytes = b"",
    ) -> cow.Standby[DockerSandbox]:
        """A clean copy of ``snapshot`` for ``run_id`` (not begun); ``patch``: ``cow.start``'s."""
        config = judged_in(base).model_copy(update={"gate_copy_at_start": False})
        run_id = f"{run_id}-gate"

        def make() -> DockerSandbox:
            client = engine.connect()
            try:
                return DockerSandbox._layered_on(
                    client, snapshot, config, run_id, root, standby=False, patch=patch
                )
            except BaseException:
                client.close()
                raise

        return cow.Standby(make=make, close_one=DockerSandbox.close)

    def exec(
        self, command: str, *, timeout_s: float, max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES
    ) -> ExecResult:
        """Run ``command`` with bash in ``/workspace``; kill its process group on timeout."""
        if self._layered is not None and self._layered.ahead and self._layered.standby is None:
            self._begin_standby()  # the model works: the gate's next clean copy starts now
        return self._exec_request(command, timeout_s, max_output_bytes, _CHANNEL_MARGIN_S)

    def baseline_file(self, path: str) -> bytes | None:
        """A file's bytes at the baseline, read on the host from the read-only shadow repo."""
        return baseline_blob(self._ws, path)

    def clean_copy(self, patch: str) -> DockerSandbox:
        """A new sandbox: the baseline (from the shadow repo) with ``patch``, no network.

        Closing it returns at once: it is removed on a thread (the verdict waits for nothing),
        and this sandbox's ``close`` waits for that.

        Raises:
            SandboxError: the patch does not apply, or the sandbox did not start.
        """
        layered = self._layered
        if layered is not None:
            made = self._layered_copy(layered, patch)
            if made is not None and made._apply_inside(patch):
                made._retire_into = self._retiring
                return made
            if made is not None:
                made.close()
        config = judged_in(self.config)
        source = Path(tempfile.mkdtemp(prefix="clean-", dir=self._ws.root))  # not mounted
        try:
            export_baseline(self._ws, source / "tree")
            copy = DockerSandbox.create(
                source / "tree",
                config,
                run_id=f"{self.run_id}-gate",
                workspace_root=self._workspace_root,
                progress=lambda line: None,
                initial_patch=patch.encode("utf-8", "surrogateescape"),
            )
            copy._retire_into = self._retiring
            return copy
        except UserError as e:
            raise SandboxError(
                f"the patch does not apply to a clean copy of the baseline: {e}", op="gate"
            ) from e
        finally:
            remove_workspace(source)

    def _layered_copy(self, layered: cow.Layered, patch: str) -> DockerSandbox | None:
        """The clean copy made ahead, or one started now; ``None``: make a copy instead.

        A patch that changes a read-only file (a test file) gets one started for it, with
        those files bound as it leaves them (``patchedbinds``); the one made ahead waits.

        The next one starts at once, while the gate's tests run in this one: a finish judges
        in two to four copies one after another (the deciding tests, the suite, the flaky
        check, a split run's confirmation), and each waited half a second for its container.
        Making a container runs nothing of the project's, so it is no test run beside another.
        """
        data = patch.encode("utf-8", "surrogateescape")
        if cow.patch_touches_read_only(layered.snapshot, judged_in(self.config).protect, data):
            own = self._standby_of(layered, data)
            own.begin()
            return own.take()
        standby, layered.standby = layered.standby, None
        made: DockerSandbox | None = standby.take() if standby is not None else None
        if made is None:
            fresh: cow.Standby[DockerSandbox] = self._standby_of(layered)
            fresh.begin()
            made = fresh.take()
        if layered.ahead:
            self._begin_standby()
        return made

    def _apply_inside(self, patch: str) -> bool:
        """Apply ``patch`` with git inside this (clean, layered) sandbox; whether it applied.

        It fails where a copy would not too: a patch that changes a read-only path (the user
        allowed harness changes), or one that does not apply; the caller then makes a copy.
        """
        if not patch.strip():
            return True
        bound = self._layered.patched if self._layered is not None else ()
        try:
            done = self.exec(
                cow.apply_command(self._ws.root, patch, bound), timeout_s=GIT_TIMEOUT_S
            )
        except (SandboxError, ToolError):
            return False
        return done.exit_code == 0

    def close(self) -> None:
        """Remove the container and the workspace. Idempotent; safe on an exception path.

        SIGINT and SIGTERM are held back while it runs (main thread), so a second Ctrl-C
        cannot leave half a sandbox behind; they are delivered when it returns.
        """
        if self._closed:
            return
        self._closed = True
        retire, self._retire_into = self._retire_into, None
        if retire is not None:  # a clean copy whose verdict is known: removed off its path
            retire.close_later(self._remove)
            return
        self._remove()

    def _remove(self) -> None:
        """``close``'s work: the clean copies' removal waited for, then this sandbox's."""
        _LIVE.discard(self)
        in_main = threading.current_thread() is threading.main_thread()
        held = {signal.SIGINT, signal.SIGTERM}
        old = signal.pthread_sigmask(signal.SIG_BLOCK, held) if in_main else None
        try:
            failed = self._retiring.wait()  # its clean copies first: nothing left behind
            self._channel.close()
            if self._listener is not None:
                self._listener.close()
            try:
                if self._layered is not None and self._layered.standby is not None:
                    self._layered.standby.close()
                remove_container(self._client, self.container_id)
                if self._layered is not None:
                    overlay.remove_volumes(self._client, self._layered.volumes)
            finally:
                if self._layered is not None:
                    cow.remove_layers(self._ws.root)
                remove_workspace(self._ws.root)
                self._client.close()
        finally:
            if old is not None:
                signal.pthread_sigmask(signal.SIG_SETMASK, old)
        if failed:
            raise failed[0]

    def __enter__(self) -> DockerSandbox:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> Literal[False]:
        try:
            self.close()
        except SandboxError as e:
            if exc is None:
                raise
            exc.add_note(f"sandbox cleanup also failed: {e}")  # keep the run's own error
        return False
