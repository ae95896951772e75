"""Signs documents with a 3072-bit RSA key and PSS."""
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa


def new_key():
    return rsa.generate_private_key(public_exponent=65537, key_size=3072)


def sign(key, document: bytes) -> bytes:
    return key.sign(document, padding.PSS(mgf=padding.MGF1(hashes.SHA256()), salt_length=padding.PSS.MAX_LENGTH), hashes.SHA256())
