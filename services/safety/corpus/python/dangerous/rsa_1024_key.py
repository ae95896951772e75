"""Generates the RSA key for a test certificate authority."""
from cryptography.hazmat.primitives.asymmetric import rsa

KEY_BITS = 1024


def make_ca_key():
    return rsa.generate_private_key(public_exponent=65537, key_size=1024)
