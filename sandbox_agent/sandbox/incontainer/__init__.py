"""The executor that runs INSIDE the container (standard library only, Python 3.9+).

What it does: one executor per sandbox, started by one ``docker exec`` as ``python3 -c <the
bundle> [uid:gid [socket]]``, serves JSON-lines requests and answers each with one line, so a
tool call costs a round trip plus the command itself. The bundle is ``boot.py`` followed by
every module's source (``executor.bundle``): shipped as one unit, imported from memory there.

Modules, by concern:
    wire       the request and answer messages, one class per kind; the host imports it too
    main       the request loop
    ops        what each request does (exec, read, write, run, ping, killall)
    channel    the channel to the host (socket with token and lifeline, or stdio)
    pump       waiting for a command: pipes into captures, timeout, lingering children
    capture    head and tail of an output, or all of it up to a cap
    spawn      ``bash -c`` in its own process group, past the pids limit; killing the group
    ready      the waiting bash started ahead of the next ``exec``
    privilege  the agent's ids with a saved root id; not dumpable
    boot       serves these sources as the package ``incontainer`` and calls ``main``

Exposes: ``wire`` (to the host). Layer 2 of 7 (adapters, inside ``sandbox``), but standalone:
May import: the standard library and its own modules (relative imports), nothing else of
``sandbox_agent``. The host imports only ``wire`` from it (``tests/structure`` checks both).
"""
