"""``--shard K/N``: run only the test modules assigned to shard K of N (0-based).

A pytest plugin of our own (loaded from ``tests/conftest.py``) so that ``.ci/test`` can run the
suite as N pytest processes at once; the suite waits on the Docker engine more than it computes.
A module (file) is never split, so its module fixtures and shared containers stay whole.

Assignment: every test module under the run's paths is weighed by its seconds in
``tests/durations.json`` (written by ``.ci/test --record``); a module missing from the file is
estimated as its number of test functions times the mean seconds per test. The heaviest module
goes first onto the least-loaded shard, ties by name and shard number, so every shard computes
the same assignment from the same paths. Modules that must share a process are in ``TOGETHER``.

``--record-durations PATH`` writes the seconds (setup, call and teardown) and the test count of
each module this process ran, for ``.ci/test --record`` to merge into ``tests/durations.json``.
"""

from __future__ import annotations

import argparse
import ast
import fnmatch
import heapq
import json
import os
import re
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import pytest

DURATIONS = Path(__file__).with_name("durations.json")
SHARD = re.compile(r"(\d+)/(\d+)")
SKIPPED_DIRS = frozenset({"__pycache__", "node_modules", "venv", "build", "dist"})

# Groups of modules that cannot run beside each other and so always share one shard. Empty:
# every module makes its own names, ports (0), directories and images, so none needs it yet.
TOGETHER: tuple[tuple[str, ...], ...] = ()


@dataclass(frozen=True)
class Shard:
    index: int
    count: int


def parse_shard(text: str) -> Shard:
    """``K/N`` with 0 <= K < N, as argparse's ``type`` (so a bad value is a usage error)."""
    match = SHARD.fullmatch(text.strip())
    if match is None:
        raise argparse.ArgumentTypeError(f"{text!r} is not K/N (shard K of N, e.g. 0/3)")
    index, count = int(match[1]), int(match[2])
    if count < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: N must be at least 1")
    if index >= count:
        raise argparse.ArgumentTypeError(f"{text!r}: K counts from 0, so it must be below N")
    return Shard(index, count)


def assign(weights: Mapping[str, float], count: int) -> list[list[str]]:
    """Units (module names, or groups joined by ``|``) greedily onto ``count`` shards."""
    shards: list[list[str]] = [[] for _ in range(count)]
    heap = [(0.0, index) for index in range(count)]
    for unit in sorted(weights, key=lambda name: (-weights[name], name)):
        load, index = heapq.heappop(heap)
        shards[index].append(unit)
        heapq.heappush(heap, (load + weights[unit], index))
    return shards


class Durations(NamedTuple):
    seconds: dict[str, float]
    mean: float
    """Mean seconds per test over the recorded modules (1.0 when nothing is recorded)."""


def read_durations(path: Path) -> Durations:
    """The committed per-module seconds; a missing file weighs every test the same."""
    if not path.is_file():
        return Durations({}, 1.0)
    try:
        modules = json.loads(path.read_text())["modules"]
        seconds = {name: float(row["seconds"]) for name, row in modules.items()}
        tests = sum(int(row["tests"]) for row in modules.values())
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise pytest.UsageError(f"{path}: not a durations file ({e!r}); rewrite it") from e
    return Durations(seconds, sum(seconds.values()) / tests if tests else 1.0)


def count_tests(path: Path) -> int:
    """Test functions in a module as written (parametrized ones count once); 1 if unreadable."""
    try:
        tree = ast.parse(path.read_bytes())
    except (OSError, SyntaxError, ValueError):
        return 1
    kinds = (ast.FunctionDef, ast.AsyncFunctionDef)
    found = sum(1 for n in ast.walk(tree) if isinstance(n, kinds) and n.name.startswith("test"))
    return max(found, 1)


def is_test_module(config: pytest.Config, path: Path) -> bool:
    return any(fnmatch.fnmatch(path.name, pattern) for pattern in config.getini("python_files"))


def files_under(path: Path) -> Iterator[Path]:
    """``path`` itself, or the files under it (hidden and cache directories left out)."""
    if not path.is_dir():
        yield path
        return
    for parent, dirs, files in os.walk(path):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in SKIPPED_DIRS)
        yield from (Path(parent, name) for name in files)


def module_files(config: pytest.Config) -> list[Path]:
    """Every test module under the run's paths (files named as ``python_files`` says)."""
    found: set[Path] = set()
    for arg in config.args:
        path = config.invocation_params.dir / arg.split("::")[0]
        found.update(f.resolve() for f in files_under(path) if is_test_module(config, f))
    return sorted(found)


def module_name(config: pytest.Config, path: Path) -> str:
    """A module's key in the durations file: its path from the root directory."""
    try:
        return path.resolve().relative_to(config.rootpath).as_posix()
    except ValueError:
        return path.resolve().as_posix()


def unit_weights(names: Iterable[str], weight: Mapping[str, float]) -> dict[str, float]:
    """Each module, or each ``TOGETHER`` group joined by ``|``, with its weight."""
    names = set(names)
    units: dict[str, float] = {}
    for group in TOGETHER:
        present = sorted(names.intersection(group))
        if present:
            units["|".join(present)] = sum(weight[n] for n in present)
            names.difference_update(present)
    units.update((name, weight[name]) for name in names)
    return units


def modules_of_shard(config: pytest.Config, shard: Shard) -> frozenset[str]:
    """The modules shard ``shard`` runs, out of every module under the run's paths."""
    recorded = read_durations(Path(config.getoption("shard_durations")))
    weight = {}
    for path in module_files(config):
        name = module_name(config, path)
        estimate = count_tests(path) * recorded.mean
        weight[name] = recorded.seconds.get(name, estimate)
    units = assign(unit_weights(weight, weight), shard.count)[shard.index]
    return frozenset(name for unit in units for name in unit.split("|"))


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("shard", "running the suite in parallel shards (.ci/test)")
    group.addoption(
        "--shard",
        type=parse_shard,
        metavar="K/N",
        help="run only the test modules of shard K of N (0-based; modules weighed by "
        "tests/durations.json)",
    )
    group.addoption(
        "--shard-durations",
        default=str(DURATIONS),
        metavar="PATH",
        help="the per-module seconds --shard weighs modules by (default: tests/durations.json)",
    )
    group.addoption(
        "--record-durations",
        metavar="PATH",
        help="write each test module's seconds and test count to PATH (JSON)",
    )


class ShardFilter:
    """Leaves out the modules of other shards: uncollected, or dropped once collected."""

    def __init__(self, config: pytest.Config, shard: Shard) -> None:
        self.config = config
        self.mine = modules_of_shard(config, shard)

    def _others(self, path: Path) -> bool:
        mine = module_name(self.config, path) in self.mine
        return not mine and path.is_file() and is_test_module(self.config, path)

    def pytest_ignore_collect(self, collection_path: Path) -> bool | None:
        return True if self._others(collection_path) else None

    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        """Files named on the command line are collected anyway: drop other shards' tests here,
        unreported (not "deselected"), as if uncollected, so the shards' counts add up."""
        items[:] = [item for item in items if not self._others(item.path)]


class DurationRecorder:
    """Sums each module's setup, call and teardown seconds; writes them when the run ends."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.seconds: defaultdict[str, float] = defaultdict(float)
        self.tests: defaultdict[str, int] = defaultdict(int)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        name = report.nodeid.split("::")[0]  # the module's path from the root directory
        self.seconds[name] += report.duration
        if report.when == "call" or (report.when == "setup" and report.skipped):
            self.tests[name] += 1

    def pytest_sessionfinish(self) -> None:
        modules = {
            name: {"seconds": round(self.seconds[name], 2), "tests": self.tests[name]}
            for name in sorted(self.seconds)
        }
        self.path.write_text(json.dumps({"modules": modules}, indent=1) + "\n")


def pytest_configure(config: pytest.Config) -> None:
    shard: Shard | None = config.getoption("shard")
    if shard is not None:
        config.pluginmanager.register(ShardFilter(config, shard), "shard-filter")
    record: str | None = config.getoption("record_durations")
    if record is not None:
        recorder = DurationRecorder(Path(record).resolve())
        config.pluginmanager.register(recorder, "shard-durations")
