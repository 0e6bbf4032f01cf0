"""Text helpers shared by the tool runtime and the model adapters (a leaf module)."""

from __future__ import annotations


def truncate_middle(text: str, max_chars: int) -> str:
    """Keep the head and tail of ``text`` within ``max_chars``, noting what was cut.

    Cuts at line boundaries when a newline is near, so numbered lines stay whole.
    """
    if len(text) <= max_chars:
        return text
    head_len = max_chars * 2 // 3
    tail_len = max_chars - head_len
    head = text[:head_len]
    tail = text[len(text) - tail_len :]
    nl = head.rfind("\n")
    if nl > head_len // 2:
        head = head[: nl + 1]
    nl = tail.find("\n")
    if 0 <= nl < tail_len // 2:
        tail = tail[nl + 1 :]
    cut = len(text) - len(head) - len(tail)
    cut_lines = text.count("\n", len(head), len(text) - len(tail))
    note = (
        f"\n[... {cut} characters ({cut_lines} lines) cut from the middle of this output; "
        "to see them, read_file with start_line/end_line or run a narrower command "
        "(grep -n, sed -n 'A,Bp', head, tail) ...]\n"
    )
    return head + note + tail
