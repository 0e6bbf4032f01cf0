"""The model: what the agent asks next, behind one protocol, and what each call costs.

``base.Model`` is the protocol the loop knows. ``chat_model``/``openai_compat``/``json_protocol``
speak Chat Completions (native tools, or a JSON text protocol); ``chat_client`` is where the
``openai`` package enters and every one of its errors is mapped; ``retry`` is the one retry
policy; ``scripted`` is the strict fake (``--model scripted:PATH``). ``context`` compacts the
history, ``prices``/``catalog`` price a call, ``prompt`` is the system prompt.

Exposes: ``Model`` (``base``), ``OpenAICompatModel``, ``ScriptedModel``, ``ModelPrice``.
Layer 2 of 7 (adapters). May import: the leaves (``types``, ``errors``, ``settings``, ...) and
the other adapters; ``openai`` only in ``chat_client`` and the adapters.
"""
