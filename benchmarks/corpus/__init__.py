"""The corpus of real agents' bash commands and its labeller (see SOURCES.md)."""
