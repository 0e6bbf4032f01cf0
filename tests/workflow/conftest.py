"""End-to-end fixtures: the sandbox tests' engine fixtures (with their leftover checks)."""

from tests.sandbox.conftest import docker_client, workspace_root

__all__ = ["docker_client", "workspace_root"]
