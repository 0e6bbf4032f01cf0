"""Parse ``key = value`` lines; blank lines and ``#`` comments are skipped."""


def parse_records(text: str) -> dict[str, str]:
    """Return the key/value pairs of a configuration file's text, in order."""
    records: dict[str, str] = {}
    lines = text.split("\n")
    for line in lines[:-1]:
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        if not sep:
            raise ValueError(f"not a key = value line: {line!r}")
        records[key.strip()] = value.strip()
    return records
