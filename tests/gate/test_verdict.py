"""The verdict's sorting of tests, and the matching of tests across runs (pure, no sandbox)."""

from __future__ import annotations

from typing import Final

from hypothesis import given
from hypothesis import strategies as st

from sandbox_agent.gate import rerun
from sandbox_agent.gate.outcomes import (
    Outcome,
    finder,
    function_of,
    in_module,
    match,
    module_of,
    to_report_id,
)
from sandbox_agent.gate.verdict import NO_PROOF, Judgement, Observed, Rule, checks, judge

P: Final = "passed"
F: Final = "failed"
S: Final = "skipped"


def outcomes(**tests: Outcome) -> dict[str, Outcome]:
    """``t_a=P`` -> ``{"tests.test_m::t_a": "passed"}``."""
    return {f"tests.test_m::{name}": outcome for name, outcome in tests.items()}


def failed(found: Judgement, rule: Rule = "proof", targets: bool = False) -> dict[str, str]:
    return {c.name: c.detail for c in checks(found, rule, targets=targets) if not c.passed}


def test_a_fixed_test_with_an_unrelated_failure_is_a_proven_fix() -> None:
    found = judge(Observed(base=outcomes(a=F, b=F, c=P), now=outcomes(a=P, b=F, c=P)))
    assert found.fail_to_pass == ["tests.test_m::a"]
    assert found.pre_existing == ["tests.test_m::b"]
    assert found.pass_to_pass == 1
    assert failed(found) == {}


def test_a_broken_passing_test_is_named() -> None:
    found = judge(Observed(base=outcomes(a=F, c=P, d=P), now=outcomes(a=P, c=F, d=S)))
    assert found.broken == ["tests.test_m::c (failed)", "tests.test_m::d (newly skipped)"]
    assert "tests.test_m::c (failed)" in failed(found)["regressions"]


def test_a_gone_test_is_broken() -> None:
    found = judge(Observed(base=outcomes(a=F, c=P), now=outcomes(a=P)))
    assert found.broken == ["tests.test_m::c (gone)"]


def test_no_test_changed_is_unproven_but_no_regression_accepts_it() -> None:
    found = judge(Observed(base=outcomes(a=F, c=P), now=outcomes(a=F, c=P)))
    assert failed(found) == {"proof": NO_PROOF}
    assert failed(found, "no-regression") == {}


def test_a_new_test_failing_on_the_baseline_code_proves_the_fix() -> None:
    new: dict[str, Outcome] = {"tests.test_new::t_fix": P}
    found = judge(
        Observed(
            base=outcomes(c=P),
            now=outcomes(c=P),
            with_new={**outcomes(c=P), **new},
            new_on_base={**outcomes(c=P), "tests.test_new::t_fix": F},
            new_modules=("tests.test_new",),
        )
    )
    assert found.proving == ["tests.test_new::t_fix"]
    assert failed(found) == {}


def test_a_new_module_that_cannot_import_on_the_baseline_code_proves_too() -> None:
    found = judge(
        Observed(
            base=outcomes(c=P),
            now=outcomes(c=P),
            with_new={**outcomes(c=P), "tests.test_new::t_fix": P},
            new_on_base={**outcomes(c=P), "::tests.test_new": F},
            new_modules=("tests.test_new",),
        )
    )
    assert found.proving == ["tests.test_new::t_fix"]


def test_a_new_test_that_already_passes_on_the_baseline_proves_nothing_and_says_so() -> None:
    found = judge(
        Observed(
            base=outcomes(c=P),
            now=outcomes(c=P),
            with_new={**outcomes(c=P), "tests.test_new::t_same": P},
            new_on_base={**outcomes(c=P), "tests.test_new::t_same": P},
            new_modules=("tests.test_new",),
        )
    )
    assert found.not_proving == ["tests.test_new::t_same"]
    detail = failed(found)["proof"]
    assert detail.startswith(NO_PROOF)
    assert "already pass on the baseline's code, so they prove nothing: tests.test_new::t_same" in (
        detail
    )


def test_a_failing_new_test_is_refused() -> None:
    found = judge(
        Observed(
            base=outcomes(a=F),
            now=outcomes(a=P),
            with_new={**outcomes(a=P), "tests.test_new::t": F},
            new_on_base={"tests.test_new::t": F},
            new_modules=("tests.test_new",),
        )
    )
    assert failed(found) == {
        "new_tests": "tests you added fail with your change: tests.test_new::t"
    }


def test_an_outcome_that_varies_without_the_patch_is_flaky_and_decides_nothing() -> None:
    found = judge(
        Observed(
            base=outcomes(a=F, flaky=P, wobbly=F),
            now=outcomes(a=P, flaky=F, wobbly=P),
            base_again=outcomes(a=F, flaky=F, wobbly=P),
        )
    )
    assert found.flaky == ["tests.test_m::flaky", "tests.test_m::wobbly"]
    assert found.fail_to_pass == ["tests.test_m::a"]
    assert found.broken == []


def test_a_skip_on_the_baseline_copy_too_is_not_newly_skipped() -> None:
    found = judge(
        Observed(base=outcomes(a=F, perf=P), now=outcomes(a=P, perf=S), base_again=outcomes(perf=S))
    )
    assert found.broken == []
    assert found.flaky == ["tests.test_m::perf"]


def test_a_regression_that_holds_on_the_baseline_copy_is_not_flaky() -> None:
    found = judge(
        Observed(
            base=outcomes(a=F, c=P),
            now=outcomes(a=P, c=F),
            base_again=outcomes(a=F, c=P),
            now_again=outcomes(a=P, c=P),
        )
    )
    assert found.broken == [
        "tests.test_m::c (failed, passed when run again: your change makes it flaky)"
    ]


def test_a_failing_test_that_passes_on_the_baseline_copy_is_no_proof() -> None:
    found = judge(Observed(base=outcomes(a=F), now=outcomes(a=P), base_again=outcomes(a=P)))
    assert found.fail_to_pass == []
    assert found.flaky == ["tests.test_m::a"]
    assert "proof" in failed(found)


def test_parameters_computed_at_run_time_match_by_position() -> None:
    before = ["m::test_x[12-01-2026 20:37:05]", "m::test_x[b]", "m::test_y"]
    after = ["m::test_x[12-01-2026 20:37:09]", "m::test_x[b]", "m::test_y"]
    assert match(before, after) == {
        "m::test_x[12-01-2026 20:37:05]": "m::test_x[12-01-2026 20:37:09]",
        "m::test_x[b]": "m::test_x[b]",
        "m::test_y": "m::test_y",
    }
    base: dict[str, Outcome] = {"m::test_x[12-01-2026 20:37:05]": P, "m::test_y": F}
    now: dict[str, Outcome] = {"m::test_x[12-01-2026 20:37:09]": P, "m::test_y": P}
    found = judge(Observed(base=base, now=now))
    assert found.broken == []
    assert found.pass_to_pass == 1


def test_a_rerun_with_parameters_computed_at_run_time_still_shows_a_flaky_test() -> None:
    base: dict[str, Outcome] = {"m::test_x[20:37:05]": F, "m::test_y": F}
    now: dict[str, Outcome] = {"m::test_x[20:37:09]": P, "m::test_y": P}
    again: dict[str, Outcome] = {"m::test_x[20:38:11]": P, "m::test_y": F}
    found = judge(Observed(base=base, now=now, base_again=again))
    assert found.flaky == ["m::test_x[20:37:05]"]
    assert found.fail_to_pass == ["m::test_y"]


def test_a_parameter_id_holding_colons_stays_the_tests_own() -> None:
    """pygments' ``test_func_function[dict::udict_set_builder(]``: split at the first ``::``."""
    test_id = "tests.test_func::test_func_function[dict::udict_set_builder(]"
    assert function_of(test_id) == ("tests.test_func", "test_func_function")
    assert module_of(test_id) == "tests.test_func"
    assert in_module(test_id, "tests.test_func")
    assert rerun.selection([test_id]) == ("tests.test_func::test_func_function",)
    nested = "tests.test_m.TestC::test_y[a::b::c]"
    assert function_of(nested) == ("tests.test_m.TestC", "test_y")
    assert to_report_id("tests/test_m.py::TestC::test_y[a::b::c]") == nested


_IDS = st.lists(
    st.builds(
        lambda module, function, parameter: (
            f"::{module}" if function == "" else f"{module}::{function}{parameter}"
        ),
        st.sampled_from(["m", "m.C", "n"]),
        st.sampled_from(["", "t", "u"]),
        st.sampled_from(["", "[1]", "[2]", "[x y]", "[a::b]"]),
    ),
    unique=True,
    max_size=12,
)


@given(before=_IDS, after=_IDS)
def test_a_finder_answers_as_match_asked_for_one_test(before: list[str], after: list[str]) -> None:
    """The verdict asks a rerun for each test once; it must answer as ``match([test], rerun)``."""
    find = finder(after)
    for test_id in before + after:
        assert find(test_id) == match([test_id], after).get(test_id)


def test_a_changed_parameter_list_does_not_pair_by_position() -> None:
    assert match(["m::t[1]", "m::t[2]"], ["m::t[3]"]) == {}


def test_a_module_that_collects_now_is_progress_not_a_lost_test() -> None:
    base: dict[str, Outcome] = {"::tests.test_new_api": F, "tests.test_m::c": P}
    now: dict[str, Outcome] = {
        "tests.test_new_api::t1": P,
        "tests.test_new_api::t2": F,
        "tests.test_m::c": P,
    }
    found = judge(Observed(base=base, now=now))
    assert found.broken == []
    assert found.fail_to_pass == ["tests.test_new_api::t1"]
    assert found.pre_existing == ["tests.test_new_api::t2"]
    assert found.new_tests == []
    assert failed(found) == {}


def test_a_module_still_failing_to_collect_is_pre_existing() -> None:
    base: dict[str, Outcome] = {"::tests.test_broken": F, "tests.test_m::a": F}
    found = judge(Observed(base=base, now={"::tests.test_broken": F, "tests.test_m::a": P}))
    assert found.pre_existing == ["::tests.test_broken"]
    assert failed(found) == {}


def test_a_module_skipped_at_module_level_is_no_pre_existing_failure() -> None:
    # structlog's tests/test_twisted.py: ``pytest.importorskip("twisted")`` skips the whole
    # module, which the JUnit report writes as the pseudo-test ``::tests.test_twisted``
    base: dict[str, Outcome] = {"::tests.test_twisted": S, "tests.test_m::a": P}
    found = judge(Observed(base=base, now=dict(base)))
    assert found.pre_existing == []
    assert found.broken == []


def test_a_module_skipped_at_the_baseline_that_runs_now_proves_nothing() -> None:
    # a patch that makes a skipped module collect (its skip condition reads the source) turns
    # no failing test into a passing one: skipped -> passed is not fail-to-pass
    base: dict[str, Outcome] = {"::tests.test_optional": S, "tests.test_m::a": P}
    now: dict[str, Outcome] = {"tests.test_optional::t1": P, "tests.test_m::a": P}
    found = judge(Observed(base=base, now=now))
    assert found.fail_to_pass == []
    assert found.broken == []
    assert failed(found) == {"proof": NO_PROOF}


def test_a_skipped_module_that_fails_now_is_broken() -> None:
    base: dict[str, Outcome] = {"::tests.test_optional": S, "tests.test_m::a": P}
    failing: dict[str, Outcome] = {"::tests.test_optional": F, "tests.test_m::a": P}
    assert judge(Observed(base=base, now=failing)).broken == ["::tests.test_optional (failed)"]
    ran: dict[str, Outcome] = {"tests.test_optional::t1": F, "tests.test_m::a": P}
    assert judge(Observed(base=base, now=ran)).broken == [
        "tests.test_optional::t1 (failed; its module was skipped at the baseline)"
    ]


def test_targets_must_go_from_failing_to_passing() -> None:
    seen = Observed(base=outcomes(a=F, b=F, c=P), now=outcomes(a=P, b=F, c=P))
    assert failed(judge(seen, ["tests/test_m.py::a"]), targets=True) == {}
    found = judge(seen, ["tests/test_m.py::b", "tests/test_m.py::c", "tests/test_m.py::zz"])
    assert found.targets == [
        "tests/test_m.py::b (failed with the patch)",
        "tests/test_m.py::c (passed at the baseline already: it proves nothing)",
        "tests/test_m.py::zz (did not run)",
    ]
    assert "targets" in failed(found, "no-regression", targets=True)


def test_node_ids_become_report_ids() -> None:
    assert (
        to_report_id("tests/test_x.py::TestC::test_y[1-a/b]") == "tests.test_x.TestC::test_y[1-a/b]"
    )
    assert to_report_id("test_x.py::test_y") == "test_x::test_y"
    assert to_report_id("tests.test_x::test_y") == "tests.test_x::test_y"
