"""One run, wired: the only package that chooses concrete classes (model, sandbox, gate).

``prepare`` validates everything before anything starts (``FixOptions`` -> ``Prepared``);
``runner.run_fix`` does the preflight, the environment and the sandbox; ``start`` starts the
sandbox; ``execute`` runs the baseline, the loop and the final patch; ``artifacts`` writes and
finds run directories; ``revision`` prepares ``revise``.

Exposes: ``run_fix`` (``runner``), ``prepare``/``FixOptions`` (``prepare``), ``RunRecord``.
Layer 5 of 7 (wiring). May import: every lower layer.
"""
