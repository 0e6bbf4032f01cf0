"""What a gate verdict proved: fail-to-pass and pass-to-pass tests, the harness, the strength."""

from __future__ import annotations

from sandbox_agent.gate.testrun import TestReport, TestRun
from sandbox_agent.gate.verdict import Judgement, Rule, counts, strength
from sandbox_agent.types import GateEvidence

MAX_IDS = 200
"""Test ids kept per list (the counts are exact)."""


def _failed(report: TestReport) -> set[str]:
    return {f.id for f in report.failures}


def _passed(report: TestReport) -> set[str]:
    return set(report.ids) - set(report.skipped) - _failed(report)


def gather(
    baseline: TestRun | None,
    now: TestRun,
    *,
    harness_note: str | None,
    judged_in: str = "clean_copy",
    tampering: tuple[str, ...] = (),
) -> GateEvidence:
    """The evidence of ``now`` against the baseline run.

    ``tampering``: what ``tamper.scan`` found in the patch; a strong verdict becomes
    ``suspect``, naming it.
    """
    harness = now.harness.fingerprint if now.harness is not None else None
    base = baseline.report if baseline is not None else None
    report = now.report
    common = {
        "harness": harness,
        "harness_note": harness_note,
        "judged_in": judged_in,
        "tampering": tampering,
    }
    if report is None:
        return GateEvidence.model_validate(common)
    failing = sorted(_failed(report))
    if base is None:
        return GateEvidence.model_validate({**common, "still_failing": tuple(failing[:MAX_IDS])})
    fixed = sorted(_failed(base) & _passed(report))
    kept = _passed(base) & _passed(report)
    new = sorted(set(report.ids) - set(base.ids))
    strength = "strong" if fixed else ("weak" if not _failed(base) else "unknown")
    if strength == "strong" and tampering:
        strength = "suspect"
    return GateEvidence.model_validate(
        {
            **common,
            "fail_to_pass": tuple(fixed[:MAX_IDS]),
            "pass_to_pass": len(kept),
            "still_failing": tuple(failing[:MAX_IDS]),
            "new_tests": tuple(new[:MAX_IDS]),
            "strength": strength,
        }
    )


def with_judgement(
    found: GateEvidence,
    judged: Judgement | None,
    rule: Rule,
    new_files: tuple[str, ...],
    changed_files: tuple[str, ...] = (),
) -> GateEvidence:
    """The evidence of a finish, from the verdict's sorting of every test.

    Without a judgement (no per-test report), the rule and the model's test files alone.
    """
    if judged is None:
        update = {"rule": rule, "new_test_files": new_files, "changed_test_files": changed_files}
        return found.model_copy(update=update)

    def ids(values: list[str]) -> tuple[str, ...]:
        return tuple(values[:MAX_IDS])

    judged_strength: str = strength(judged)
    if found.tampering and judged_strength in ("strong", "model_tests"):
        judged_strength = "suspect"  # what the patch holds could forge it: review decides
    return found.model_copy(
        update={
            "rule": rule,
            "fail_to_pass": ids(sorted(judged.fail_to_pass)),
            "pass_to_pass": judged.pass_to_pass,
            "broken": ids(judged.broken),
            "pre_existing": ids(sorted(judged.pre_existing)),
            "flaky": ids(sorted(judged.flaky)),
            "new_tests": ids(judged.new_tests),
            "proven_by_new_tests": ids(judged.proving),
            "new_tests_not_proving": ids(judged.not_proving),
            "new_test_files": new_files[:MAX_IDS],
            "changed_test_files": changed_files[:MAX_IDS],
            "strength": judged_strength,
        }
    )


def summary(evidence: GateEvidence) -> str:
    """One line for a terminal: what the verdict rests on."""
    parts = counts(
        len(evidence.fail_to_pass),
        evidence.pass_to_pass,
        proving=len(evidence.proven_by_new_tests),
        broken=len(evidence.broken),
        pre_existing=len(evidence.pre_existing),
        failing=len(evidence.still_failing),
        flaky=len(evidence.flaky),
    )
    if evidence.rule is not None:
        parts.insert(0, f"rule {evidence.rule}")
    harness = evidence.harness or f"not pinned ({evidence.harness_note or 'no record'})"
    parts.append(f"harness {harness}")
    parts.append(f"strength {evidence.strength}")
    if evidence.tampering:
        shown = "; ".join(evidence.tampering[:5])
        more = f" and {len(evidence.tampering) - 5} more" if len(evidence.tampering) > 5 else ""
        parts.append(f"review (in-process tampering needs): {shown}{more}")
    return ", ".join(parts)
