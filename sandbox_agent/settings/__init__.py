"""Settings: every setting of a run declared once, read from policy files, merged by rule.

``tree`` is the tree (``Policy``: each field's default, validation, merge ``Rule`` and flag);
``files`` reads one policy file into ``PolicyFile``, with errors naming file, line and key;
``rulesyntax`` reads a command rule as written (words and reason); ``merge`` applies the
rules, layer by layer, flags last (``apply_overrides``); ``load`` finds the layers (presets,
the repo's file and its trust, the user's file, ``extends``) and keeps each layer's
``[commands.examples]`` unchecked; ``reference`` generates ``docs/settings.md``.

A leaf package: it imports ``types`` and ``errors`` only, never the policy engine (which
checks the examples: ``policy/examples.py``).
"""
