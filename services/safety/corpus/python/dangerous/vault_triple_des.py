"""A small secrets vault using TripleDES in CBC mode."""
import os

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes


def seal(key: bytes, secret: bytes) -> bytes:
    iv = os.urandom(8)
    encryptor = Cipher(algorithms.TripleDES(key), modes.CBC(iv)).encryptor()
    padded = secret + b"\0" * (8 - len(secret) % 8)
    return iv + encryptor.update(padded) + encryptor.finalize()
