"""The completion gate: the model's ``finish`` is accepted only when tests prove the fix.

``completion`` is the gate (``patchchecks`` read the patch first, ``feedback`` tells the
model the verdict); ``runs`` and ``testrun`` run the tests in a clean copy (pinned harness:
``harness``, ``pytest_probe``, ``streamed``, ``harnessfiles``); ``outcomes``, ``verdict`` and
``evidence`` judge what they did against the baseline (``baseline``); ``newtests`` and
``tamper`` read the patch.

Exposes: ``Gate``, ``CompletionGate`` (``completion``); verdicts are ``types.GateVerdict``.
Layer 3 of 7 (judges). May import: the leaves and the adapters through their protocols
(``sandbox.base``, ``models.base``); never ``docker`` or ``openai``.
"""
