"""Build output: whole lines out of a byte stream, stamped, to a callback and a file."""

from __future__ import annotations

from pathlib import Path

from sandbox_agent.env.stream import BuildLog, split_lines


def test_lines_split_on_newlines_and_redraws_across_chunks() -> None:
    chunks = [
        b"one\ntw",
        b"o\r\n",
        b"50%\r100%\rdone",
        "\u00e9".encode()[:1],
        "\u00e9".encode()[1:],
    ]
    assert list(split_lines(iter(chunks))) == ["one", "two", "50%", "100%", "done\u00e9"]


def test_build_log_stamps_each_line_to_both_sinks(tmp_path: Path) -> None:
    heard: list[str] = []
    log = BuildLog(heard.append, tmp_path / "logs" / "build.log")
    log.line("step 1/1: true")
    log.close()
    assert heard[0].endswith("s] step 1/1: true")
    assert heard[0].startswith("[")
    assert (tmp_path / "logs" / "build.log").read_text() == heard[0] + "\n"
