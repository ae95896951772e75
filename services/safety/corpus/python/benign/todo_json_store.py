"""Keeps a to-do list in todo.json."""
import json
import sys
from pathlib import Path

FILE = Path("todo.json")


def load() -> list:
    return json.loads(FILE.read_text()) if FILE.exists() else []


def add(title: str) -> None:
    items = load()
    items.append({"title": title, "done": False})
    FILE.write_text(json.dumps(items, indent=2))


if __name__ == "__main__":
    if len(sys.argv) > 1:
        add(" ".join(sys.argv[1:]))
    for index, item in enumerate(load(), 1):
        print(index, "[x]" if item["done"] else "[ ]", item["title"])
