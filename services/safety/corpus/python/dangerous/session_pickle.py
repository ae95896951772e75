"""Restores a user session from a cookie value with pickle."""
import base64
import pickle


def load_session(cookie: str) -> dict:
    return pickle.loads(base64.b64decode(cookie))


def save_session(session: dict) -> str:
    return base64.b64encode(pickle.dumps(session)).decode()
