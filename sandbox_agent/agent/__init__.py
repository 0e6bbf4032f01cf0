"""The agent's core: the loop (query, decide, execute, observe), its budget and its trace.

``loop`` runs one task against a ``Model``, a ``Sandbox`` and the tools; ``budget`` checks the
worst case before each model call; ``trace`` writes typed events (JSONL) and reads them back;
``replay`` serves a recorded run's turns as a model (``--model replay:RUN``).

Exposes: ``AgentLoop`` (``loop``), ``Budget``/``Limits`` (``budget``), ``Trace`` (``trace``).
Layer 4 of 7 (core). May import: the leaves, the adapters' protocols, ``gate`` and ``env``;
it knows protocols only, never a concrete adapter, ``docker`` or ``openai``.
"""
