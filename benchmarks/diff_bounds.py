"""What ``Sandbox.patch()`` does with workspaces git struggles to diff: outcome, time, memory.

Run: ``.venv/bin/python benchmarks/diff_bounds.py [--cases big,sparse,many]``.

Each case gets a fresh sandbox over a small repo; the workspace is changed from inside the
container, then ``patch()`` is timed. The outcome is the patch's size and what it left out
(or the error). Host memory is this process's peak RSS (VmHWM) before and after the case.
"""

from __future__ import annotations

import argparse
import subprocess
import tempfile
import time
from pathlib import Path

from sandbox_agent.errors import SandboxAgentError
from sandbox_agent.sandbox.docker import DockerSandbox, DockerSandboxConfig

CASES = {
    "big": ("a 300 MiB random file", "head -c 300M /dev/urandom > big.bin"),
    "sparse": ("a 5 GiB sparse file", "truncate -s 5G sparse.img"),
    "many": (
        "200,000 new files",
        "python3 -c \"import os\nos.makedirs('gen')\n"
        "for i in range(200000): open(f'gen/f{i}.txt', 'w').write(str(i))\"",
    ),
}


def hwm_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def make_repo(root: Path) -> Path:
    repo = root / "repo"
    repo.mkdir()
    (repo / "a.py").write_text("A = 1\n")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(root), "GIT_CONFIG_NOSYSTEM": "1"}
    ident = ["-c", "user.name=bench", "-c", "user.email=bench@localhost"]
    for argv in (["init", "-q"], ["add", "-A"], [*ident, "commit", "-qm", "init"]):
        subprocess.run(["git", *argv], cwd=repo, check=True, env=env)
    return repo


def run_case(repo: Path, name: str) -> None:
    label, command = CASES[name]
    sandbox = DockerSandbox.create(repo, DockerSandboxConfig(), run_id=f"bench-diff-{name}")
    try:
        made = sandbox.exec(command, timeout_s=600)
        assert made.exit_code == 0, made.stderr
        before = hwm_mb()
        start = time.perf_counter()
        try:
            patch = sandbox.patch()
            left_out = ", ".join(f"{o.path} ({o.reason})" for o in patch.omitted)
            outcome = f"a patch of {len(patch.text) / (1 << 20):.1f} MiB; left out: {left_out}"
        except SandboxAgentError as e:
            outcome = f"{type(e).__name__}: {str(e)[:150]}"
        elapsed = time.perf_counter() - start
        print(
            f"{label:<22}{elapsed:>8.2f} s  peak RSS {before:.0f} -> {hwm_mb():.0f} MB  {outcome}"
        )
    finally:
        sandbox.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", default="big,sparse,many")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        repo = make_repo(Path(tmp))
        for name in args.cases.split(","):
            run_case(repo, name)


if __name__ == "__main__":
    main()
