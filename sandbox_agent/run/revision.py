"""``revise``: a run directory is data, never authority.

From the earlier run ``revise`` takes what it is about: the task, the patch, the answer (and
the reviewer's feedback). Everything that decides what the new run may do or where it sends
things (the model and its endpoint, the policy file, the repo-policy trust, the flags, the
repository) comes from the user's own settings and flags now, as for ``fix``. Whoever can write
a runs directory can therefore change what a revision is about, never where the API key and
the repository's content go.

Where the stored run differs from the user's choice (another repository, another endpoint),
the revision stops and says so, until the user names the value with its flag (``--repo``,
``--base-url``): the difference is then the user's decision, not the file's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

from sandbox_agent.errors import StoredRunMismatchError, UserError
from sandbox_agent.run.artifacts import RunDir, RunRecord
from sandbox_agent.run.prepare import FixOptions, Resumption, Revision
from sandbox_agent.sandbox.repoinfo import inspect_repo

__all__ = [
    "Choices",
    "carried_over",
    "continuing",
    "ignored_request",
    "recorded_base_url",
    "revise_options",
    "same_repo",
]


def revise_options(run_dir: RunDir, feedback: str, choices: Choices) -> FixOptions:
    """The new run's options: the earlier run's task and patch, the user's settings.

    Args:
        run_dir: The earlier run.
        feedback: What to change.
        choices: The user's flags now (the run's stored ones are not replayed).

    Raises:
        UserError: empty feedback, no patch to continue from.
        StoredRunMismatchError: the run was made on another repository and ``--repo`` was not
            given.
    """
    if not feedback.strip():
        raise UserError("revise: FEEDBACK is empty; say what to change")
    record = run_dir.read_record()
    if not run_dir.patch_path.is_file() or not run_dir.read_patch().strip():
        raise UserError(f"run {record.run_id} has no patch to continue from; start a new fix")
    return continuing(
        record,
        "revise",
        choices,
        revises=Revision(
            **carried_over(run_dir, record, run_dir.read_patch()),
            answer=record.answer,
            feedback=feedback,
        ),
    )


class Choices(NamedTuple):
    """The user's choices for a run (``fix``'s, or one that continues another: never its own)."""

    repo: Path | None
    """``--repo``; ``None`` (a run that continues another): the current directory, which must
    be the run's."""
    policy_file: Path | None
    """``--policy`` (the user's, trusted), never the one a stored run names."""
    trust_repo_policy: bool
    overrides: dict[str, Any]
    """The setting flags given now."""
    runs_dir: Path | None
    """Where the new run is written."""

    def fresh(self, task: str) -> FixOptions:
        """A new run's options (``fix``): ``task`` in ``--repo``, as the user chose."""
        return FixOptions(**self._asdict(), task=task)


def continuing(
    record: RunRecord,
    command: str,
    choices: Choices,
    *,
    resumes: Resumption | None = None,
    revises: Revision | None = None,
) -> FixOptions:
    """The options of a run that continues ``record``: its task; everything else the user's.

    Raises:
        StoredRunMismatchError: no ``--repo``, and the current directory is not the run's.
    """
    repo = choices.repo if choices.repo is not None else same_repo(record, command)
    mine = {**choices._asdict(), "repo": repo}
    return FixOptions(**mine, task=record.task, resumes=resumes, revises=revises)


def carried_over(run_dir: RunDir, record: RunRecord, patch: bytes) -> dict[str, Any]:
    """The fields of a ``Continuation`` of the run ``record`` in ``run_dir``, with ``patch``."""
    return {
        "run_id": record.run_id,
        "run_dir": run_dir.path,
        "patch": patch,
        "recorded_base_url": recorded_base_url(record),
        "recorded_model": record.model or None,
    }


def same_repo(record: RunRecord, command: str) -> Path:
    """The current directory's repository, when it is the one the run names (for ``command``)."""
    here = inspect_repo(Path()).root
    recorded = Path(record.repo)
    if not recorded.is_dir() or recorded.resolve() != here:
        raise StoredRunMismatchError(
            f"run {record.run_id} says it was made on {record.repo}, and this is {here}: "
            f"a run directory does not choose the repository. Pass --repo {record.repo} to "
            f"{command} it there (or --repo with the repository you mean)"
        )
    return here


def recorded_base_url(record: RunRecord) -> str | None:
    """The endpoint the run says it used (its record, else its stored flag)."""
    if record.base_url is not None:
        return record.base_url
    stored = record.request.overrides.get("--base-url")
    return str(stored) if stored is not None else None


def ignored_request(record: RunRecord) -> list[str]:
    """The earlier run's stored settings that ``revise`` and ``resume`` do not take.

    The model's name is not among them: the run keeps it at the user's own endpoint, and says
    so either way (``prepare``).
    """
    request = record.request
    ignored = [
        f"{flag} {value}"
        for flag, value in request.overrides.items()
        if not (flag == "--model" and value == record.model and _chat_model(record.model))
    ]
    if request.policy_file:
        ignored.append(f"--policy {request.policy_file}")
    if request.trust_repo_policy:
        ignored.append("--trust-repo-policy")
    return ignored


def _chat_model(name: str) -> bool:
    """A model's name the new run may keep (not a script or a recorded run to read)."""
    return not name.startswith(("scripted:", "replay:"))
