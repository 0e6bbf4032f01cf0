"""Each of the engine's three stages alone, on its own input (issue 13, item 8).

1. words: a command string -> ``ShellAnalysis`` (each word exactly expanded, or dynamic);
2. effects: an argv and its program's spec -> ``Effects`` (runs, reads, writes, network);
3. decision: ``Effects`` and the policy -> ``Decision``.
"""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest

from sandbox_agent.policy import shell
from sandbox_agent.policy.analysis import Effects, Fact, Run, Shell, Word
from sandbox_agent.policy.effects import argv_effects, command_effects
from sandbox_agent.policy.engine import RuleEngine
from sandbox_agent.policy.programs import SPECS
from sandbox_agent.policy.readers import program_steps
from sandbox_agent.policy.shell import analyze
from sandbox_agent.policy.spec import ProgramSpec, WrapperSpec, opts
from sandbox_agent.settings.load import load_policy

# --- stage 1: words -----------------------------------------------------------------------


def _words(command: str) -> list[Word]:
    """The words of the last simple command (a ``$(...)`` inside comes first)."""
    return list(analyze(command).commands[-1].argv)


def test_words_are_expanded_exactly() -> None:
    analysis = analyze(r"echo x{a,b,} 'a b'c d\ e $'t\x41b' ~/x")
    assert not analysis.problems
    echo, braces, quoted, backslash, escaped, tilde = analysis.commands[0].argv
    assert echo.text == "echo"
    assert braces.fields == ("xa", "xb", "x")
    assert quoted.text == "a bc"
    assert backslash.text == "d e"
    assert escaped.text == "tAb"
    assert tilde.text == "~/x"  # the home directory is known: the path check resolves it


@pytest.mark.parametrize("word", ["$HOME", '"$1"', "$(ls)", "$'a\\0b'", "$!", "`ls`"])
def test_words_bash_expands_at_run_time_are_dynamic(word: str) -> None:
    """``text=None``: the value is not known statically (a NUL escape, ``$!``, ...)."""
    assert _words(f"cat {word}")[1].text is None


def test_words_know_nothing_of_programs() -> None:
    """``eval`` and ``bash -c`` are plain words to stage 1: judging them is stage 2's job."""
    analysis = analyze("eval x; bash -c 'rm y' > out")
    assert not analysis.problems
    assert [[w.text for w in c.argv] for c in analysis.commands] == [
        ["eval", "x"],
        ["bash", "-c", "rm y"],
    ]
    assert [(r.op, r.target.text if r.target else None) for r in analysis.redirects] == [
        (">", "out")
    ]


@pytest.mark.parametrize(
    "command",
    [
        r"cp src/app.py 'tests/test_'\ x.py",
        r'cp src/app.py "tests/test_"\ x.py',
        "cp src/app.py 'tests/test_'\\\tx.py",
    ],
)
def test_an_escaped_blank_between_quotes_is_not_a_word_break(
    engine: RuleEngine, command: str
) -> None:
    """bash reads ``'tests/test_'\\ x.py`` as one word, ``tests/test_ x.py`` (protected);
    tree-sitter-bash drops the escaped blank and gives two words, so cp seemed to write
    ``x.py``. Found while writing these tests; the read-only mounts stopped the write."""
    analysis = analyze(command)
    assert analysis.problems, [[w.text for w in c.argv] for c in analysis.commands]
    assert engine.check_command(command).decision == "deny"


def test_blanks_and_line_continuations_still_separate_words() -> None:
    analysis = analyze("cat 'a' \\\n 'b'\t\"c\"")
    assert not analysis.problems
    assert [w.text for w in analysis.commands[0].argv] == ["cat", "a", "b", "c"]


# --- stage 2: effects ---------------------------------------------------------------------


def test_sed_in_place_writes_its_operand() -> None:
    effects = argv_effects(["sed", "-i", "s/a/b/", "f"])
    assert effects.writes == ["f"]
    assert effects.runs == [("sed", "-i", "s/a/b/", "f")]
    assert not effects.problems


def test_find_exec_runs_its_command() -> None:
    steps = program_steps(Run(("find", ".", "-exec", "rm", "{}", "+")))
    assert Run(("rm", "{}")) in steps.items
    effects = argv_effects(["find", ".", "-exec", "rm", "{}", "+"])
    assert effects.runs == [("find", ".", "-exec", "rm", "{}", "+"), ("rm", "{}")]
    assert effects.writes == ["{}"]
    assert effects.reads == ["."]


def test_git_dash_c_makes_the_subcommands_paths_relative() -> None:
    effects = argv_effects(["git", "-C", "sub", "diff", "--output=x"])
    assert effects.writes == ["sub/x"]
    assert effects.reads == ["sub"]
    assert effects.runs == [("git", "diff", "--output=x")]


def test_a_program_reader_starts_nothing_itself() -> None:
    """Readers are pure: what a program runs is an item, expanded by the worklist."""
    steps = program_steps(Run(("timeout", "5", "bash", "-c", "rm x")))
    assert steps.items == [Fact("runs", ("timeout", "5")), Run(("bash", "-c", "rm x"))]
    assert program_steps(Run(("bash", "-c", "rm x"))).items == [
        Fact("runs", ("bash", "-c", "rm x")),
        Shell("rm x"),
    ]
    effects = argv_effects(["timeout", "5", "bash", "-c", "rm x"])
    assert effects.runs == [("timeout", "5"), ("bash", "-c", "rm x"), ("rm", "x")]
    assert effects.writes == ["x"]


@pytest.mark.parametrize(
    ("argv", "network"),
    [
        (["git", "fetch", "origin"], ["git fetch"]),
        (["curl", "https://example.com"], ["curl"]),
        (["python", "-m", "pip", "install", "x"], ["pip install"]),
        (["git", "status"], []),
        (["pip", "list"], []),
    ],
)
def test_network_is_an_effect(argv: list[str], network: list[str]) -> None:
    assert argv_effects(argv).network == network


def test_a_redirection_to_dev_tcp_reaches_the_network() -> None:
    assert command_effects("echo x > /dev/tcp/example.com/80").network == [
        "/dev/tcp/example.com/80"
    ]


def test_execdir_writes_are_a_problem_of_the_effects_stage() -> None:
    effects = argv_effects(["find", ".", "-execdir", "touch", "x", ";"])
    assert effects.writes == ["x"]
    assert any("each matched file's directory" in p for p in effects.problems)


def test_a_new_program_is_a_new_spec() -> None:
    """No reader changes: a spec says what ``deploy`` and ``retry`` do."""
    specs = {
        **SPECS,
        "deploy": ProgramSpec(opts("write", "--log"), writes="last", network=True),
        "retry": WrapperSpec(frozenset({"-n"})),
    }
    effects = argv_effects(["retry", "-n", "3", "deploy", "--log=l.txt", "a", "out"], specs=specs)
    assert effects.runs == [("retry", "-n", "3"), ("deploy", "--log=l.txt", "a", "out")]
    assert effects.writes == ["l.txt", "out"]
    assert effects.network == ["deploy"]
    assert argv_effects(["deploy", "--log=l.txt", "a", "out"]).writes == []


def test_deep_wrapper_nesting_is_a_problem_not_a_crash(engine: RuleEngine) -> None:
    """The worklist does not recurse: 5000 wrappers are refused by name, not by RecursionError."""
    decision = engine.check_command("timeout 1 " * 5000 + "ls")
    assert decision.decision == "deny"
    assert "nested too deeply" in decision.reason


# --- stage 3: decision --------------------------------------------------------------------


def test_allowed_effects_are_allowed(engine: RuleEngine) -> None:
    decision = engine.judge(Effects(runs=[("git", "status")]))
    assert decision.decision == "allow"
    assert (decision.rule or "").endswith("git status")


@pytest.mark.parametrize(
    ("effects", "rule", "reason"),
    [
        (Effects(runs=[("curl", "x")]), None, "`curl` is not allowed"),
        (Effects(runs=[("cat", "x")], problems=["a word is dynamic"]), "static", "A word is"),
        (Effects(runs=[("cat", "/etc/passwd")], reads=["/etc/passwd"]), "boundary", "outside"),
        (Effects(runs=[("tee", "t")], writes=["tests/test_a.py"]), "tests/**", "protected"),
        (Effects(runs=[("ls",)], env=["LD_PRELOAD"]), "allow_env", "LD_PRELOAD"),
        (Effects(runs=[("git", "push")]), "git push", "the sandbox has no network"),
        (Effects(runs=[("chmod", "-R", "x")]), "chmod -R", "matches the deny rule"),
        (Effects(), "static", "runs nothing"),
    ],
)
def test_effects_are_judged(engine: RuleEngine, effects: Effects, rule: str, reason: str) -> None:
    decision = engine.judge(effects)
    assert decision.decision == "deny"
    assert reason in decision.reason
    assert (decision.rule is None) if rule is None else (rule in (decision.rule or ""))


@pytest.mark.parametrize(
    ("effects", "rule", "reason"),
    [
        (Effects(runs=[("curl", "x")], network=["curl"]), "curl", "no network"),
        (Effects(runs=[("nc2", "x")], network=["nc2"]), "sandbox.network", "has none"),
        (Effects(runs=[("tee", "t")], writes=["tests/test_app.py"]), "baseline", "protected"),
        (Effects(runs=[("tee", "t")], writes=["tests/conftest.py"]), "conftest", "new"),
        (Effects(runs=[("rm", "-r", "tests")], trees=["tests"]), "baseline", "test_app.py"),
        (Effects(runs=[("tee", "t")], writes=["/etc/hosts"]), "boundary", "outside"),
    ],
)
def test_the_default_presets_refusals(
    agent_engine: RuleEngine, effects: Effects, rule: str, reason: str
) -> None:
    decision = agent_engine.judge(effects)
    assert decision.decision == "deny", decision
    assert reason in decision.reason
    assert rule in (decision.rule or "")


@pytest.mark.parametrize(
    "effects",
    [
        Effects(runs=[("cat", "x")], problems=["a word is dynamic"]),
        Effects(problems=["`source` runs a script the policy cannot see"]),
        Effects(runs=[("python", "repro.py")]),
        Effects(runs=[("cat", "/opt/venv/lib/x.py")], reads=["/opt/venv/lib/x.py"]),
        Effects(runs=[("tee", "t")], writes=["tests/test_new.py"]),
        Effects(runs=[("ls",)], env=["LD_PRELOAD"]),
        Effects(runs=[("rm", "-r", "build")], trees=["build"]),
    ],
)
def test_the_default_preset_allows_what_the_sandbox_holds(
    agent_engine: RuleEngine, effects: Effects
) -> None:
    assert agent_engine.judge(effects).decision == "allow"


def test_ask_rules_make_an_ask(engine: RuleEngine) -> None:
    decision = engine.judge(Effects(runs=[("rm", "-r", "build")], writes=["build"]))
    assert decision.decision == "ask"
    assert "rm -r" in (decision.rule or "")


@pytest.mark.parametrize(
    "command",
    ["git -C src diff --output=x", "find . -exec rm {} +", "cat /etc/passwd", "rm -r build"],
)
def test_check_command_is_the_three_stages(engine: RuleEngine, command: str) -> None:
    """``check_command`` judges only the ``Effects``; it adds the rendering to what it allows."""
    judged = engine.judge(command_effects(command))
    checked = engine.check_command(command)
    assert checked.model_copy(update={"rendered": None}) == judged


STAGES = {
    "words": {"shell", "walker"},
    "effects": {"effects", "readers", "spec", "programs", "writers", "searchers", "git", "scripts"},
    "decision": {"pathcheck"},
    "render": {"render"},
}
"""The modules only one stage runs (the plain data of ``analysis``, the shared readers of
words, braces, options, rules and paths, and the engine that calls each stage are not here)."""


def _parser_method(arg: object) -> bool:
    return isinstance(arg, types.BuiltinMethodType) and type(arg.__self__).__name__ == "Parser"


def _walk(engine: RuleEngine, command: str) -> tuple[list[tuple[str, str]], object]:
    """Each call into the policy package while ``check_command`` runs: (module, function)."""
    calls: list[tuple[str, str]] = []

    def profile(frame: types.FrameType, event: str, arg: object) -> None:
        name = frame.f_globals.get("__name__", "")
        if event == "call" and name.startswith("sandbox_agent.policy."):
            calls.append((name.rsplit(".", 1)[-1], frame.f_code.co_name))
        elif event == "c_call" and _parser_method(arg):  # tree-sitter parsing the text
            calls.append(("tree_sitter", getattr(arg, "__name__", "")))

    sys.setprofile(profile)
    try:
        decision = engine.check_command(command)
    finally:
        sys.setprofile(None)
    return calls, decision


@pytest.mark.parametrize(
    "command",
    [
        "grep -rn foo src | head -5 && sed -i 's/a/b/' x.py",
        "ls -la $(pwd)",
        "find . -name '*.py' -exec wc -l {} +",
        "git -C sub log --oneline | cat > out.txt",
        "echo x{a,b} > f; cat f",
    ],
)
def test_a_command_walks_the_stages_forward_and_is_parsed_once(
    tmp_path: Path, command: str
) -> None:
    """Issue 23: words, effects, decision, rendering, each entered once and never again.

    The command is parsed once (rendering reads the same tree), the program checks run once,
    and no stage is re-entered after a later one began.
    """
    engine = RuleEngine(load_policy(tmp_path).policy)
    engine.check_command("ls")  # warm: what is imported or built on first use
    shell.parse_tree.cache_clear()  # the analysis and the tree of an earlier test's command
    shell._analyze_cached.cache_clear()
    calls, decision = _walk(engine, command)
    assert getattr(decision, "decision", None) == "allow"
    assert calls.count(("tree_sitter", "parse")) == 1
    functions = [f for _, f in calls]
    assert functions.count("judge") == functions.count("_program_gaps") == 1
    spans = {
        stage: [i for i, (module, _) in enumerate(calls) if module in modules]
        for stage, modules in STAGES.items()
    }
    assert all(spans.values()), spans.keys()
    assert max(spans["words"]) < max(spans["effects"]) < min(spans["decision"])
    assert max(spans["decision"]) < min(spans["render"])
