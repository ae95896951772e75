"""Encrypts a settings file with DES from pyCrypto."""
from Crypto.Cipher import DES


def pad(data: bytes) -> bytes:
    return data + b" " * (8 - len(data) % 8)


def encrypt_settings(key: bytes, path: str) -> bytes:
    cipher = DES.new(key, DES.MODE_ECB)
    with open(path, "rb") as handle:
        return cipher.encrypt(pad(handle.read()))
