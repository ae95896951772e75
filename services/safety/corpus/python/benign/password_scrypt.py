"""Hashes passwords with scrypt and a random salt."""
import hashlib
import hmac
import os


def hash_password(password: str) -> bytes:
    salt = os.urandom(16)
    return salt + hashlib.scrypt(password.encode(), salt=salt, n=2**14, r=8, p=1)


def verify_password(password: str, stored: bytes) -> bool:
    salt, digest = stored[:16], stored[16:]
    return hmac.compare_digest(digest, hashlib.scrypt(password.encode(), salt=salt, n=2**14, r=8, p=1))
