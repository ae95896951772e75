"""Creates invitation codes with the secrets module."""
import secrets
import string

ALPHABET = string.ascii_uppercase + string.digits


def invitation_code(length: int = 10) -> str:
    return "".join(secrets.choice(ALPHABET) for _ in range(length))


def api_token() -> str:
    return secrets.token_urlsafe(32)
