"""Encrypts messages with RC4 from the cryptography package."""
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms


def encrypt(key: bytes, message: bytes) -> bytes:
    cipher = Cipher(algorithms.ARC4(key), mode=None)
    encryptor = cipher.encryptor()
    return encryptor.update(message)
