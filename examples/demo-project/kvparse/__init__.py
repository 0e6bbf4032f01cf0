"""kvparse: read ``key = value`` configuration files."""

from kvparse.parser import parse_records

__all__ = ["parse_records"]
