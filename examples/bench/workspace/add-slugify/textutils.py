"""Text helpers."""


def shorten(text, width):
    """text cut to at most `width` characters, ending in "..." when it was cut."""
    if len(text) <= width:
        return text
    return text[: max(0, width - 3)] + "..."
