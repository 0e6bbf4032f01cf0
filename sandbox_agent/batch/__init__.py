"""Batch runs: many ``fix`` runs at once, locally or on Ray, under one hard budget.

``tasks`` reads the tasks file; ``start`` checks and starts a batch; ``scheduler``, ``child``,
``process`` and ``worker`` run one task per local worker process (``ray_backend`` on Ray, an
optional extra); ``budget`` holds one hard budget over every run; ``records`` is ``batch.json``.

Exposes: ``check_tasks``, ``new_batch``, ``resume_specs`` (``start``); ``BatchBudget`` (``budget``).
Layer 6 of 7 (on top of runs): above ``run`` (each task is an ordinary ``run_fix``), below
``cli``. May import: every lower layer; host git only through ``sandbox.hostgit``.
"""
