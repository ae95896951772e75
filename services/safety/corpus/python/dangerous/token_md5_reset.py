"""Creates password reset tokens."""
import hashlib
import time


def reset_token(email: str) -> str:
    return hashlib.md5(f"{email}{time.time()}".encode()).hexdigest()


def store_reset(db, email: str) -> str:
    token = reset_token(email)
    db.execute("INSERT INTO resets (email, token) VALUES (?, ?)", (email, token))
    return token
