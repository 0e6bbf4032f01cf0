"""The command policy: the early, explained refusal of a bash command, before it runs.

Three stages, one way: words (``shell``, ``walker``, ``words``, ``braces``: each word as bash
reads it, or dynamic), effects (``effects``, ``readers``, ``options`` with the program data in
``spec``, ``programs``, ``writers``, ``searchers``, ``git``, ``gitopts``, ``scripts``), and the
decision (``engine``, ``pathcheck``, ``rules``, ``paths``); ``render`` re-quotes what it allowed.
``examples`` checks a policy's ``[commands.examples]`` (the settings live in ``settings/``).
The container is the boundary; this is the refusal on top that tells the model what to do.

Exposes: ``PolicyEngine``, ``Decision`` (``base``); ``RuleEngine`` (``engine``).
Layer 2 of 7 (adapters). May import: the leaves and the other adapters.
"""
