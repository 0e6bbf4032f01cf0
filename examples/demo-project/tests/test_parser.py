import pytest

from kvparse import parse_records


def test_simple_file():
    assert parse_records("name = demo\nsize = 3\n") == {"name": "demo", "size": "3"}


def test_comments_and_blank_lines_are_skipped():
    text = "# settings\n\nname = demo\n"
    assert parse_records(text) == {"name": "demo"}


def test_last_line_without_newline_is_kept():
    assert parse_records("name = demo\nsize = 3") == {"name": "demo", "size": "3"}


def test_bad_line_is_an_error():
    with pytest.raises(ValueError, match="not a key = value line"):
        parse_records("just words\n")
