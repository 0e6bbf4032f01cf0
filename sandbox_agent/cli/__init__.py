"""The command line: flags to options, options to runs, errors to exit codes; no logic.

``main`` is the entry point: it answers the root's ``--help`` and ``--version`` from
``commands`` (every command's name, module and help line, as data) without typer, and hands
everything else to ``app``, the root group, which imports a command's module only when it runs;
``command``, ``options`` and ``output`` hold the one error style, the
shared options and where things print (``safe()``); the other modules are the commands.

Exposes: ``main.main`` (``sandbox-agent``'s entry point), ``app.app`` (the typer root).
Layer 7 of 7 (entry). May import: every lower layer; nothing imports it.
"""
