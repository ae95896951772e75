"""Generates a signing key pair for the license server."""
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa


def new_license_key() -> bytes:
    key = rsa.generate_private_key(public_exponent=65537, key_size=512)
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
