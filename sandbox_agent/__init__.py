"""sandbox-agent: a coding agent whose every tool call runs in a throwaway Docker sandbox."""

__version__ = "0.1.0"
