"""The executor's privileges: the agent's ids with a saved root id, and not dumpable."""

from __future__ import annotations

import os
import sys


def become_agent(user: str) -> None:
    """Work as the agent's user while staying out of its reach.

    Started as root with only CAP_SETUID and CAP_SETGID, the executor drops its supplementary
    groups and takes the agent's real and effective ids (``uid:gid``), keeping only the *saved*
    ids 0. Files it reads and writes are the agent's; its capabilities leave the effective set.
    The saved id is enough: no process of the agent's user may open ``/proc/<this pid>/fd``
    (the channel) or ptrace it, since all three ids must match for that, whatever the kernel
    (gVisor included) does with the dumpable flag. A command it starts execs with the agent's
    effective id, which ``execve`` copies into the saved id: the command is the agent entirely,
    with no capability, and the executor still starts it with ``vfork`` (no id to change in
    the child). The agent may still signal the executor (its real id is the agent's); a killed
    or stopped executor is replaced (``docker.py``). Started as the agent already (no user
    given, or not root), nothing changes.

    Raises:
        SystemExit: the ids could not be set; never run a command as root instead.
    """
    if not user or os.geteuid() != 0:
        return
    uid, gid = (int(x) for x in user.split(":"))
    try:
        os.setgroups([])
        os.setresgid(gid, gid, 0)
        os.setresuid(uid, uid, 0)
    except OSError as e:
        sys.stderr.write(f"sandbox-agent executor: cannot become {user}: {e}\n")
        raise SystemExit(3) from e


def not_dumpable() -> None:
    """``prctl(PR_SET_DUMPABLE, 0)``: ``/proc/<this pid>/fd`` is closed to same-uid processes.

    So the model's processes cannot open this executor's stdin, stdout or stderr (the
    channel). Already so when started from the image's execute-only interpreter.
    """
    try:
        import ctypes  # only here, at start

        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # 4: PR_SET_DUMPABLE
    except (OSError, AttributeError):
        pass
