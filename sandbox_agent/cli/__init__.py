"""The command line: flags to options, options to runs, errors to exit codes; no logic.

``app`` is the root, naming every command and importing its module only when it runs (so
``--help`` stays light); ``command``, ``options`` and ``output`` hold the one error style, the
shared options and where things print (``safe()``); the other modules are the commands.

Exposes: ``app`` (``sandbox-agent``'s entry point).
Layer 7 of 7 (entry). May import: every lower layer; nothing imports it.
"""
