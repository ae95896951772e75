from textutils import shorten, slugify


def test_shorten_keeps_short_text():
    assert shorten("short", 10) == "short"


def test_shorten_cuts_long_text():
    assert shorten("a long sentence", 8) == "a lon..."


def test_slugify():
    assert slugify("Hello, World!") == "hello-world"
    assert slugify("  Ratchet: 2 steps forward  ") == "ratchet-2-steps-forward"
    assert slugify("already-a-slug") == "already-a-slug"
    assert slugify("!!!") == ""
