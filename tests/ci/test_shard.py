"""``--shard K/N`` (tests/shard.py): every test in exactly one shard, whole modules, balanced.

Real pytest runs (pytester, in process) over a small tree of modules; the assignment itself is
checked on the committed ``tests/durations.json``.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from tests import shard

pytest_plugins = ["pytester"]

TREE = {
    "test_alpha.py": "import pytest\n\n@pytest.mark.parametrize('n', range(5))\n"
    "def test_p(n):\n    pass\n",
    "test_beta.py": "def test_one():\n    pass\n\ndef test_two():\n    pass\n",
    "test_gamma.py": "class TestG:\n    def test_a(self):\n        pass\n\n"
    "    def test_b(self):\n        pass\n",
    "sub/test_delta.py": "def test_d():\n    pass\n",
    "sub/deeper/test_eps.py": "import pytest\n\n@pytest.fixture(scope='module')\n"
    "def shared():\n    return object()\n\n"
    "def test_e1(shared):\n    pass\n\ndef test_e2(shared):\n    pass\n",
    "test_zeta.py": "def test_z():\n    pass\n",
    "helper.py": "def test_not_collected():\n    pass\n",
}
DURATIONS = {
    "test_alpha.py": 30.0,
    "test_beta.py": 20.0,
    "test_gamma.py": 12.0,
    "sub/test_delta.py": 9.0,
    "sub/deeper/test_eps.py": 8.0,
    "test_zeta.py": 1.0,
}


@pytest.fixture
def tree(pytester: pytest.Pytester) -> pytest.Pytester:
    for name, text in TREE.items():
        path = pytester.path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    modules = {name: {"seconds": s, "tests": 1} for name, s in DURATIONS.items()}
    (pytester.path / "durations.json").write_text(json.dumps({"modules": modules}))
    return pytester


def collected(pytester: pytest.Pytester, *args: str) -> list[str]:
    """The node ids a real pytest run collects with ``args`` (plugin loaded with ``-p``)."""
    result = pytester.runpytest("-p", "tests.shard", "--collect-only", "-q", *args)
    assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED), result.stdout
    return [line for line in result.outlines if "::" in line]


def modules(nodes: list[str]) -> set[str]:
    return {node.split("::")[0] for node in nodes}


@pytest.mark.parametrize("count", [1, 2, 3, 4])
def test_the_shards_together_collect_each_test_exactly_once(
    tree: pytest.Pytester, count: int
) -> None:
    whole = collected(tree)
    assert len(whole) == 13  # the tree's tests: a check that the tree itself is collected
    durations = "--shard-durations=durations.json"
    parts = [collected(tree, f"--shard={k}/{count}", durations) for k in range(count)]
    together = [node for part in parts for node in part]
    assert sorted(together) == sorted(whole)
    assert len(set(together)) == len(together)
    owner = {node.split("::")[0]: k for k, part in enumerate(parts) for node in part}
    for k, part in enumerate(parts):  # a module is never split between shards
        assert all(owner[node.split("::")[0]] == k for node in part)


def test_modules_go_heaviest_first_onto_the_least_loaded_shard(tree: pytest.Pytester) -> None:
    durations = "--shard-durations=durations.json"
    first = collected(tree, "--shard=0/2", durations)
    second = collected(tree, "--shard=1/2", durations)
    # 30 -> 0, 20 -> 1, 12 -> 1 (32), 9 -> 0 (39), 8 -> 1 (40), 1 -> 0 (40)
    assert modules(first) == {"test_alpha.py", "sub/test_delta.py", "test_zeta.py"}
    assert modules(second) == {"test_beta.py", "test_gamma.py", "sub/deeper/test_eps.py"}
    assert collected(tree, "--shard=0/2", durations) == first  # deterministic


def test_files_named_on_the_command_line_are_sharded_too(tree: pytest.Pytester) -> None:
    args = ["test_alpha.py", "test_beta.py", "--shard-durations=durations.json"]
    first = collected(tree, "--shard=0/2", *args)
    second = collected(tree, "--shard=1/2", *args)
    assert modules(first) == {"test_alpha.py"}
    assert modules(second) == {"test_beta.py"}


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("3/2", "K counts from 0, so it must be below N"),
        ("2/2", "K counts from 0, so it must be below N"),
        ("x", "is not K/N"),
        ("0/0", "N must be at least 1"),
        ("-1/2", "is not K/N"),
        ("1/", "is not K/N"),
    ],
)
def test_a_bad_shard_is_a_usage_error_naming_it(
    tree: pytest.Pytester, value: str, why: str
) -> None:
    result = tree.runpytest("-p", "tests.shard", f"--shard={value}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = "\n".join(result.errlines)
    assert f"argument --shard: {value!r}" in errors
    assert why in errors
    assert "Traceback" not in errors


def test_a_module_missing_from_the_durations_is_weighed_by_its_test_count(
    tree: pytest.Pytester,
) -> None:
    (tree.path / "test_new.py").write_text(
        "".join(f"def test_{i}():\n    pass\n" for i in range(40))
    )
    recorded = shard.read_durations(tree.path / "durations.json")
    assert recorded.mean == pytest.approx(80.0 / 6)  # 80 s over 6 recorded tests
    assert shard.count_tests(tree.path / "test_new.py") == 40
    # 40 tests at the mean outweigh every recorded module: alone on its shard
    alone = collected(tree, "--shard=0/2", "--shard-durations=durations.json")
    assert modules(alone) == {"test_new.py"}


def test_recording_writes_each_modules_seconds_and_test_count(tree: pytest.Pytester) -> None:
    out = tree.path / "recorded.json"
    result = tree.runpytest("-p", "tests.shard", f"--record-durations={out}", "-q")
    assert result.ret == pytest.ExitCode.OK
    modules = json.loads(out.read_text())["modules"]
    assert {name: row["tests"] for name, row in modules.items()} == {
        "test_alpha.py": 5,
        "test_beta.py": 2,
        "test_gamma.py": 2,
        "sub/test_delta.py": 1,
        "sub/deeper/test_eps.py": 2,
        "test_zeta.py": 1,
    }
    assert all(row["seconds"] >= 0 for row in modules.values())


def test_a_broken_durations_file_is_a_usage_error_naming_it(tree: pytest.Pytester) -> None:
    (tree.path / "durations.json").write_text('{"modules": {"test_a.py": 3}}')
    result = tree.runpytest("-p", "tests.shard", "--shard=0/2", "--shard-durations=durations.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "durations.json: not a durations file" in "\n".join(result.errlines)


def committed_weights() -> dict[str, float]:
    recorded = shard.read_durations(shard.DURATIONS)
    assert len(recorded.seconds) > 100, "tests/durations.json records the whole suite"
    return recorded.seconds


@pytest.mark.parametrize("count", [2, 3, 4])
def test_the_committed_durations_split_deterministically_and_balanced(count: int) -> None:
    weights = committed_weights()
    shards = shard.assign(weights, count)
    shuffled = list(weights.items())
    random.Random(count).shuffle(shuffled)
    assert shard.assign(dict(shuffled), count) == shards  # input order does not matter
    assert sorted(name for part in shards for name in part) == sorted(weights)
    loads = [sum(weights[name] for name in part) for part in shards]
    largest = max(weights.values())
    # the greedy bound: the last module onto the fullest shard went onto the emptiest one
    assert max(loads) - min(loads) <= largest
    assert max(loads) <= sum(loads) / count + largest


def test_every_committed_module_still_exists() -> None:
    root = Path(__file__).resolve().parents[2]
    missing = [name for name in committed_weights() if not (root / name).is_file()]
    assert not missing, f"tests/durations.json names modules that are gone: {missing}"
