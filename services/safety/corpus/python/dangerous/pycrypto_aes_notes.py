"""Encrypts notes with AES from the pyCrypto package."""
from Crypto import Random
from Crypto.Cipher import AES


def encrypt_note(key: bytes, note: bytes) -> bytes:
    iv = Random.new().read(AES.block_size)
    cipher = AES.new(key, AES.MODE_CFB, iv)
    return iv + cipher.encrypt(note)
