"""Redaction of secrets from what a run writes, while the text around them stays readable."""

from __future__ import annotations

import base64
import json
import urllib.parse

import pytest

from sandbox_agent.redact import REDACTED, Redactor

KEY = "sk-live-abcdefghijklmnop0123"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("PASSWORD=hunter2 next", f"PASSWORD={REDACTED} next"),
        ("export GITHUB_TOKEN=ghp_abc", f"export GITHUB_TOKEN={REDACTED}"),
        ('{"api_key": "zzz"}', f'{{"api_key": "{REDACTED}"}}'),
        ("db_password: 'x1'", f"db_password: '{REDACTED}'"),
        ("Authorization: Bearer abcdefghijklmnop", f"Authorization: Bearer {REDACTED}"),
        (
            "curl -H 'Authorization: Basic dXNlcjpwYXNz'",
            f"curl -H 'Authorization: Basic {REDACTED}'",
        ),
        ("aws AKIAABCDEFGHIJKLMNOP", f"aws {REDACTED}"),
        ("slack xoxb-1234567890-abcdef", f"slack {REDACTED}"),
        (
            "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----\nafter",
            f"{REDACTED}\nafter",
        ),
        ("-----BEGIN PRIVATE KEY-----\nMIIEow (cut)", REDACTED),
    ],
)
def test_secret_looking_values_are_redacted(text: str, expected: str) -> None:
    assert Redactor().text(text) == expected


@pytest.mark.parametrize(
    "text",
    ["max_tokens: 100", "2 passed in 0.1s", "tokenizer: gpt2", "author: Jane", "passed=True"],
)
def test_ordinary_text_is_kept(text: str) -> None:
    assert Redactor().text(text) == text


@pytest.mark.parametrize(
    "spelling",
    [
        KEY,
        base64.b64encode(KEY.encode()).decode(),
        base64.urlsafe_b64encode(KEY.encode()).decode().rstrip("="),
        urllib.parse.quote(KEY, safe=""),
        KEY.encode().hex(),
    ],
)
def test_the_api_key_is_redacted_in_any_spelling(spelling: str) -> None:
    assert KEY not in Redactor([KEY]).text(f"x {spelling} y")
    assert spelling.rstrip("=") not in Redactor([KEY]).text(f"x {spelling} y")


def test_data_redacts_every_string_and_keeps_keys() -> None:
    data = {"command": f"echo {KEY}", "nested": [{"PASSWORD": "x"}, ("token=abc", 3)]}
    assert Redactor([KEY]).data(data) == {
        "command": f"echo {REDACTED}",
        "nested": [{"PASSWORD": "x"}, [f"token={REDACTED}", 3]],
    }


def test_a_redacted_json_line_stays_valid_json() -> None:
    """The trace redacts whole lines: no pattern may cross a JSON string's quotes."""
    event = {
        "command": "printf -----BEGIN RSA PRIVATE KEY-----\nabc",
        "reason": 'PASSWORD="x" then -----END RSA PRIVATE KEY-----',
        "auth": "Authorization: Bearer abcdefghijklmnopqrstu",
        "note": f"key {KEY}",
    }
    line = Redactor([KEY]).text(json.dumps(event))
    back = json.loads(line)
    assert set(back) == set(event)
    assert KEY not in line
    assert "abcdefghijklmnopqrstu" not in line
    assert back["command"] == f"printf {REDACTED}"
