r"""Redaction of secrets from what a run writes to disk (a leaf: imports nothing of the project).

Two layers. Known secrets (the API key) are replaced in every spelling a tool might print:
as is, base64, URL-encoded and hex. Secret-looking values are replaced by pattern: private key
blocks, ``Authorization``/``Bearer`` credentials, well-known token formats (``sk-...``,
``ghp_...``, ``xoxb-...``, ``AKIA...``), and the value of any ``NAME=value`` or
``NAME: value`` whose name looks secret (``PASSWORD``, ``API_KEY``, ``token``, ...). The names
stay, so a reader still sees what was there.
"""

from __future__ import annotations

import base64
import re
import urllib.parse
from collections.abc import Iterable
from typing import Any

__all__ = ["REDACTED", "Redactor"]

REDACTED = "[REDACTED]"

_PATTERNS = (
    re.compile(  # never across a quote: redacting a JSON line keeps it valid JSON
        r'-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[^"]*?'
        r'(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|(?=")|\Z)'
    ),
    re.compile(r"(?i)\b(bearer|basic|token)(\s+)[A-Za-z0-9._~+/=-]{8,}"),
    re.compile(
        r"\b(?:sk-[A-Za-z0-9_-]{16,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}"
        r"|xox[abposr]-[A-Za-z0-9-]{10,}|AKIA[0-9A-Z]{16}|AIza[0-9A-Za-z_-]{30,})"
    ),
)
_SECRET_NAME = (
    r"(?:[A-Za-z0-9]+[_.-])*(?:passw(?:or)?d|passphrase|secret|token|api[_-]?key|access[_-]?key"
    r"|private[_-]?key|credentials?|authorization|auth[_-]?(?:token|key|header))"
    r"(?:[_-][A-Za-z0-9]+)*"
)
_ASSIGNMENT = re.compile(
    rf"(?i)(\b{_SECRET_NAME}\b[\"']?\s*(?:=|:)\s*[\"']?)(?!(?:bearer|basic)\b)([^\s\"'\\,;&|)]+)"
)
"""``NAME=value``, ``NAME: value``, ``"name": "value"``: the value (up to a quote or space)."""

# Cheap necessary conditions, tried first: a pattern runs only where its hint is found. They
# are checked on the lower-cased text, which is only equivalent to ``(?i)`` for ASCII; other
# text runs every pattern. (Most trace lines hold no hint at all: redaction then costs a few
# substring searches instead of four scans of the line.)
_KEY_BLOCK_HINT = "-----BEGIN"
_SCHEMES = ("bearer", "basic", "token")
_CREDENTIAL_HINT = re.compile(r"(?:bearer|basic|token)\s")
_TOKEN_HINT = re.compile(r"sk-|gh[pousr]_|github_pat_|xox[abposr]-|AKIA|AIza")
_NAME_STEMS = ("pass", "secret", "token", "api", "access", "private", "credential", "auth")
_NAME_HINT = re.compile(
    r"(?:passw(?:or)?d|passphrase|secret|token|api[_-]?key|access[_-]?key|private[_-]?key"
    r"|credentials?|authorization|auth[_-]?(?:token|key|header))(?![a-z0-9])"
)
"""A secret name's keyword as ``_SECRET_NAME`` ends it: not followed by a letter or digit."""


class Redactor:
    """Replaces known secrets (in every common spelling) and secret-looking values."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        spellings: set[str] = set()
        for secret in secrets:
            if len(secret) >= 4:
                spellings.update(_spellings(secret))
        self._known = sorted(spellings, key=len, reverse=True)

    def text(self, value: str) -> str:
        """``value`` with every secret replaced by ``[REDACTED]``."""
        for known in self._known:
            value = value.replace(known, REDACTED)
        if not value.isascii():
            return _all_patterns(value)
        if _KEY_BLOCK_HINT in value:
            value = _PATTERNS[0].sub(REDACTED, value)
        low = value.lower()  # replacements below add no hint, so it stays a superset
        if any(word in low for word in _SCHEMES) and _CREDENTIAL_HINT.search(low):
            value = _PATTERNS[1].sub(_keep_scheme, value)
        if _TOKEN_HINT.search(value):
            value = _PATTERNS[2].sub(REDACTED, value)
        if any(stem in low for stem in _NAME_STEMS) and _NAME_HINT.search(low):
            value = _ASSIGNMENT.sub(_keep_name, value)
        return value

    def data(self, value: Any) -> Any:
        """Every string inside ``value`` (dicts, lists, tuples) redacted; keys are kept."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {k: self.data(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.data(v) for v in value]
        return value


def _keep_scheme(m: re.Match[str]) -> str:
    return f"{m.group(1)}{m.group(2)}{REDACTED}"


def _keep_name(m: re.Match[str]) -> str:
    return m.group(1) + REDACTED


def _all_patterns(value: str) -> str:
    """Every pattern, unconditionally (the reference the hints must agree with)."""
    value = _PATTERNS[0].sub(REDACTED, value)
    value = _PATTERNS[1].sub(_keep_scheme, value)
    value = _PATTERNS[2].sub(REDACTED, value)
    return _ASSIGNMENT.sub(_keep_name, value)


def _spellings(secret: str) -> set[str]:
    raw = secret.encode("utf-8", "surrogateescape")
    return {
        secret,
        base64.b64encode(raw).decode().rstrip("="),
        base64.urlsafe_b64encode(raw).decode().rstrip("="),
        urllib.parse.quote(secret, safe=""),
        raw.hex(),
    }
