"""The sandbox's own Python never imports the model's files.

``python3 -c`` puts the working directory (``/workspace``) first on ``sys.path``. The model
writes ``json.py``, ``socket.py``, ``signal.py`` ... into the workspace; an executor started
afterwards (the gate's ``reset_processes``), the diff scan, and the PID 1 and executor of a
clean copy whose patch carries those files must run the standard library's modules, not the
model's (which would forge the gate's answers, or run as root before PID 1 drops its ids).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.sandbox.conftest import MakeSandbox

pytestmark = pytest.mark.docker

SHADOWED = [
    "json",
    "base64",
    "os",
    "signal",
    "socket",
    "select",
    "struct",
    "threading",
    "subprocess",
    "selectors",
    "errno",
    "fcntl",
    "ctypes",
    "importlib",
    "types",
    "codecs",
    "re",
    "enum",
    "functools",
    "collections",
    "typing",
]
PLANT = "; ".join(
    f"printf 'import pathlib; pathlib.Path(\"/tmp/ran-{m}\").touch()\\n' > {m}.py" for m in SHADOWED
)


@pytest.mark.parametrize("copy_on_write", [False, True], ids=["copy", "layered"])
def test_the_models_modules_never_run_in_the_sandboxs_own_python(
    tmp_path: Path, make_sandbox: MakeSandbox, copy_on_write: bool
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "README.md").write_text("# r\n")
    sb = make_sandbox(repo, copy_on_write=copy_on_write)
    planted = sb.exec(PLANT + "; ls *.py | wc -l", timeout_s=60)
    assert planted.stdout.strip() == str(len(SHADOWED)), planted.stderr

    sb.reset_processes()  # a fresh executor, started in /workspace among the planted files
    patch = sb.patch()  # the diff scan, a Python started in /workspace too
    assert {f"{m}.py" for m in SHADOWED} <= set(patch.paths)
    assert sb.exec("ls /tmp | grep -c '^ran-' || true", timeout_s=60).stdout.strip() == "0"

    with sb.clean_copy(patch.text) as copy:  # the planted files are in the copy's workspace
        copy.reset_processes()
        assert copy.exec("cat json.py", timeout_s=60).stdout.startswith("import pathlib")
        ran = copy.exec("ls /tmp | grep -c '^ran-' || true", timeout_s=60)
        assert ran.stdout.strip() == "0"
