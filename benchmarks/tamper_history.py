"""How often the ``test_internals`` scan would refuse real commits of real projects.

Run: ``.venv/bin/python benchmarks/tamper_history.py N MIRROR...`` where each MIRROR is a
fetched project's name under ``/work/.mirror`` (``pallets+flask``). For each, the last ``N``
commits (no merges): the commit's diff of Python files is scanned as the gate scans a patch,
with each file as the commit left it (``gate/tamper.py``), and the commits with a refused line
and with a line named for review only are counted. Every commit is a change the project's
maintainers accepted, so a refusal of one in an ordinary project is a false refusal.
"""

from __future__ import annotations

import collections
import subprocess
import sys

from sandbox_agent.gate.tamper import scan


def measure(mirror: str, count: int) -> str:
    git = ["git", "--git-dir", f"/work/.mirror/{mirror}/repo"]
    listed = subprocess.run(
        [*git, "rev-list", "--no-merges", f"-{count}", "HEAD"], capture_output=True, text=True
    )
    shas = listed.stdout.split()
    refused = reviewed = 0
    kinds: collections.Counter[str] = collections.Counter()
    for sha in shas:
        patch = subprocess.run(
            [*git, "diff", f"{sha}^", sha, "--", "*.py"],
            capture_output=True,
            text=True,
            errors="replace",
        ).stdout

        def after(path: str, sha: str = sha) -> str | None:
            shown = subprocess.run(
                [*git, "show", f"{sha}:{path}"], capture_output=True, text=True, errors="replace"
            )
            return shown.stdout if shown.returncode == 0 else None

        hits = scan(patch, after) if patch else []
        reviewed += bool(hits) and not any(h.refused for h in hits)
        refused += any(h.refused for h in hits)
        kinds.update(h.what.split(":")[0] for h in hits if h.refused)
    return (
        f"| {mirror.replace('+', '/')} | {len(shas)} | {refused} | {reviewed} | "
        + (", ".join(f"{k} x{n}" for k, n in kinds.most_common(3)) or "-")
        + " |"
    )


def main() -> None:
    count = int(sys.argv[1])
    print("| project | commits | refused | named for review only | refused for |")
    print("|---|---|---|---|---|")
    for mirror in sys.argv[2:]:
        print(measure(mirror, count), flush=True)


if __name__ == "__main__":
    main()
