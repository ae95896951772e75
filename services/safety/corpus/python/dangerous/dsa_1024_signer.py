"""Signs release files with a DSA key."""
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import dsa


def sign_release(data: bytes) -> bytes:
    key = dsa.generate_private_key(key_size=1024)
    return key.sign(data, hashes.SHA256())
