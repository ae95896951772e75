"""A notes CLI on SQLite with query parameters."""
import argparse
import sqlite3

TABLE = "notes"


def connect(path: str) -> sqlite3.Connection:
    conn = sqlite3.connect(path)
    conn.execute(f"CREATE TABLE IF NOT EXISTS {TABLE} (id INTEGER PRIMARY KEY, title TEXT, body TEXT)")
    return conn


def add(conn: sqlite3.Connection, title: str, body: str) -> int:
    cursor = conn.execute(f"INSERT INTO {TABLE} (title, body) VALUES (?, ?)", (title, body))
    conn.commit()
    return cursor.lastrowid


def search(conn: sqlite3.Connection, word: str) -> list:
    return conn.execute("SELECT id, title FROM notes WHERE title LIKE ? ORDER BY id", (f"%{word}%",)).fetchall()


def by_ids(conn: sqlite3.Connection, ids: list) -> list:
    marks = ", ".join("?" for _ in ids)
    return conn.execute(f"SELECT id, title FROM notes WHERE id IN ({marks})", ids).fetchall()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("command", choices=["add", "search"])
    parser.add_argument("text", nargs="+")
    args = parser.parse_args()
    db = connect("notes.db")
    if args.command == "add":
        print(add(db, args.text[0], " ".join(args.text[1:])))
    else:
        print(search(db, args.text[0]))
