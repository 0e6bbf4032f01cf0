"""After a run: applying its patch to the user's repository, and reporting on runs.

``apply`` (with ``patchfile`` and ``risks``) applies a patch as bytes, paths read by git, with a
three-way check and the risks named; ``revision`` finds a revision's own change; ``report``,
``html``, ``chart``, ``calls`` and ``index`` write one offline HTML report per run or batch;
``replay`` and ``suggest`` read past runs (``policy replay``, ``policy suggest``).

Exposes: ``apply_patch``, ``plan_apply`` (``apply``); the report writers (``report``).
Layer 6 of 7 (on top of runs). May import: every lower layer; host git only through
``sandbox.hostgit``.
"""
