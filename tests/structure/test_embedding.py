"""Records embed domain objects whole: no trace event or batch run copies an object's fields.

A trace event or a batch's run that records a domain object (a policy decision, an
observation's facts, a gate outcome, a run's outcome or summary) holds it under one field named
in ``embedded``. Copying its fields beside the record's own (by inheriting the object, or by
declaring fields of the same names) is what ``.of(...)`` constructors did; these checks keep it
from coming back.
"""

from __future__ import annotations

import typing
from typing import ClassVar

import pytest
from pydantic import BaseModel

from sandbox_agent.agent.trace import TraceEvent
from sandbox_agent.batch.records import BatchRun
from sandbox_agent.policy.base import Decision
from sandbox_agent.types import Embeds, Frozen, GateOutcome

RECORDS: tuple[type[Embeds], ...] = (
    *typing.get_args(typing.get_args(TraceEvent)[0]),
    BatchRun,
)


def problems(record: type[BaseModel]) -> list[str]:
    """How ``record`` copies a domain object instead of embedding it (empty: it does not)."""
    found = []
    for base in record.__mro__[1:]:
        if issubclass(base, Frozen) and base is not Frozen and not issubclass(base, Embeds):
            found.append(f"{record.__name__} inherits {base.__name__}'s fields")
    embedded: dict[str, type[Frozen]] = getattr(record, "embedded", {})
    for name, kind in embedded.items():
        if name not in record.model_fields:
            found.append(f"{record.__name__}.embedded names {name!r}, not one of its fields")
            continue
        if kind not in _types(record.model_fields[name].annotation):
            found.append(f"{record.__name__}.{name} does not hold a {kind.__name__}")
        copied = (set(record.model_fields) - {name}) & set(kind.model_fields)
        found += [f"{record.__name__}.{c} copies {kind.__name__}.{c}" for c in sorted(copied)]
    return found


def _types(annotation: object) -> set[object]:
    args = typing.get_args(annotation)
    return {annotation, *args}


@pytest.mark.parametrize("record", RECORDS, ids=lambda r: r.__name__)
def test_a_record_embeds_the_objects_it_records_and_copies_none_of_their_fields(
    record: type[Embeds],
) -> None:
    assert problems(record) == []


def test_every_object_a_record_embeds_is_declared_once() -> None:
    embedding = [r for r in RECORDS if r.embedded]
    assert {r.__name__ for r in embedding} == {
        "PolicyDecisionEvent",
        "ObservationEvent",
        "GateResultEvent",
        "RunFinished",
        "BatchRun",
    }


class _Inherits(Embeds, GateOutcome):
    """The old shape: the event is its object, fields and all."""


class _Copies(Embeds):
    """An embedded object with one of its fields copied beside it."""

    embedded: ClassVar[dict[str, type[Frozen]]] = {"decision": Decision}
    decision: Decision
    reason: str


class _Misnamed(Embeds):
    embedded: ClassVar[dict[str, type[Frozen]]] = {"outcome": GateOutcome}
    gate: GateOutcome


def test_the_check_finds_each_way_of_copying() -> None:
    assert problems(_Inherits) == ["_Inherits inherits GateOutcome's fields"]
    assert problems(_Copies) == ["_Copies.reason copies Decision.reason"]
    assert problems(_Misnamed) == ["_Misnamed.embedded names 'outcome', not one of its fields"]
