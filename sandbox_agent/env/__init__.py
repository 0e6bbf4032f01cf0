"""Project environments: a base image plus setup steps, built once and cached as a local image.

``detect`` reads a repository into an :class:`~sandbox_agent.env.model.EnvPlan` (no engine
needed); ``build`` turns a plan into a cached image (``ensure_environment``); ``cache`` lists and
prunes those images. Layering: above ``sandbox`` (it uses the engine and the image helpers),
below ``run``.
"""
