"""Checks a login against the users table."""
import sqlite3


def login(db_path: str, username: str, password: str) -> bool:
    conn = sqlite3.connect(db_path)
    query = "SELECT COUNT(*) FROM users WHERE username = '" + username + "' AND password = '" + password + "'"
    (count,) = conn.execute(query).fetchone()
    return count == 1
