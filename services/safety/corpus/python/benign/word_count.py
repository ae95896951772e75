"""Counts the most common words of a text file in the working directory."""
import re
import sys
from collections import Counter


def top_words(path: str, count: int = 10) -> list:
    with open(path, encoding="utf-8") as handle:
        words = re.findall(r"[a-z']+", handle.read().lower())
    return Counter(words).most_common(count)


if __name__ == "__main__":
    for word, n in top_words(sys.argv[1]):
        print(f"{n:6d} {word}")
