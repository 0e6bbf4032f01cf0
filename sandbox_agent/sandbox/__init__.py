"""The container: every tool call runs in a throwaway, hardened Docker container over a copy.

``base.Sandbox`` is the protocol the loop, the tools and the gate know. ``docker.DockerSandbox``
implements it (``container`` makes the container, ``executor`` speaks to the executor inside,
``incontainer/`` is that executor, shipped in one ``python3 -c``); ``workspace``/``baseline``
snapshot the repo and write its baseline commit; ``gitops``/``diffscan``/``diffbounds`` take the
patch inside the container; ``hostgit`` is the one place git runs on the host; ``protect``,
``runtime``, ``image``, ``engine``, ``listener``, ``gc`` and ``doctor`` do the rest.

Exposes: ``Sandbox``, ``ExecResult``, ``Patch`` (``base``); ``DockerSandbox``,
``DockerSandboxConfig`` (``docker``); ``git``/``host_git`` (``hostgit``).
Layer 2 of 7 (adapters). May import: the leaves and the other adapters; ``docker`` (the SDK)
only here and in ``env``. ``incontainer/`` and ``diffscan.py`` import the standard library only.
"""
