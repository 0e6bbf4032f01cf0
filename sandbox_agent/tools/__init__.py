"""The tools the model calls: their argument models (= the specs it sees) and their dispatch.

``specs`` defines each tool's arguments; ``runtime`` checks a call with the policy, runs it in
the sandbox and turns every expected failure into an error observation; ``patch`` reads the
``apply_patch`` format; ``edits`` computes an edit (replace, insert, a patch's plan, lint).

Exposes: ``ToolRuntime`` (``runtime``), the argument models (``specs``).
Layer 2 of 7 (adapters). May import: the leaves and the other adapters through their protocols
(``sandbox.base``, ``policy.base``); never ``docker`` or ``openai``.
"""
