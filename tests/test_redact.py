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


FRAGMENTS = [
    "exit code: 0",
    '"prompt_tokens":12,',
    "max_tokens: 100",
    "PASSWORD=hunter2",
    "db_password: 'x1'",
    '{"api_key": "zzz"}',
    "x-api-key:abcdef",
    "Authorization: Bearer abcdefghijklmnop",
    "token  abcdefghij",
    "BASIC dXNlcjpwYXNzd29yZA==",
    "ghp_" + "a" * 24,
    "github_pat_" + "B" * 22,
    "xoxb-1234567890-abc",
    "AKIA" + "Q" * 16,
    "AIza" + "z" * 31,
    "sk-" + "k" * 20,
    "-----BEGIN EC PRIVATE KEY-----\nabc\n-----END EC PRIVATE KEY-----",
    "my_secret_value = s3cr3t;",
    "auth-header: v",
    "credentials=(x)",
    "tokenizer: gpt2",
    "author: Jane",
    "passed=True",
    '"text":"a \\" quoted"',
    "Access_Key = AB12",
    "PRIVATE-KEY: k",
    "pa\u017f\u017fword=x",  # long s: (?i) matches it to s
    "\u212aey_auth_token=x",  # Kelvin sign: (?i) matches it to k
    "é token=abc",
]


def test_the_quick_path_redacts_exactly_what_every_pattern_would() -> None:
    """Hints skip patterns that cannot match; the result must be the same as running them all."""
    from sandbox_agent.redact import _all_patterns

    redactor = Redactor()
    count = 0
    for a in FRAGMENTS:
        for b in FRAGMENTS:
            for sep in (" ", "", '","', "\n"):
                text = a + sep + b
                assert redactor.text(text) == _all_patterns(text), text
                count += 1
    assert count == len(FRAGMENTS) ** 2 * 4
