"""What POST /session/:id/recap keeps of the model's answer."""

from __future__ import annotations

import pytest

from activities.sessions.session import extract_recap


@pytest.mark.parametrize(
    ("answer", "recap"),
    [
        ("<recap>Fixing the race. Next: a test.</recap>", "Fixing the race. Next: a test."),
        ("Sure!\n<recap>\n  Two\n lines  </recap> trailing", "Two lines"),
        ("<recap>first</recap><recap>second</recap>", "first"),
        ("no tag at all", None),
        ("<recap>   </recap>", None),
        ("<recap>unterminated", None),
    ],
)
def test_extract_recap(answer: str, recap: str | None) -> None:
    assert extract_recap(answer) == recap
