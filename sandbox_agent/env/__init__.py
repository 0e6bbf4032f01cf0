"""Project environments: a base image plus setup steps, built once and cached as a local image.

``detect`` reads a repository into an :class:`~sandbox_agent.env.model.EnvPlan` (no engine
needed; ``python``, ``node``, ``devcontainer`` and the project's own record in ``record``,
``workflows``, ``toxnox``, ``recipe``); ``build`` turns a plan into a cached image
(``ensure_environment``); ``prepare`` falls back to detection when a devcontainer base fails;
``cache`` lists and prunes those images.

Exposes: ``detect_plan`` (``detect``), ``ensure_environment`` (``build``), ``EnvPlan``/``EnvImage``.
Layer 3 of 7 (judges): above ``sandbox`` (it uses the engine and the image helpers), below
``run``. May import: the leaves and the adapters.
"""
