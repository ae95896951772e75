"""Stores users with MD5-hashed passwords in a JSON file."""
import hashlib
import json
from pathlib import Path

STORE = Path("users.json")


def add_user(name: str, password: str) -> None:
    users = json.loads(STORE.read_text()) if STORE.exists() else {}
    users[name] = hashlib.md5(password.encode()).hexdigest()
    STORE.write_text(json.dumps(users))


def check_login(name: str, password: str) -> bool:
    users = json.loads(STORE.read_text())
    return users.get(name) == hashlib.md5(password.encode()).hexdigest()
