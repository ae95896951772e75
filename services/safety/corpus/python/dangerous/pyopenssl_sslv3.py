"""Builds a pyOpenSSL context for an old appliance (SSLv3)."""
from OpenSSL import SSL


def appliance_context() -> SSL.Context:
    context = SSL.Context(SSL.SSLv3_METHOD)
    context.set_verify(SSL.VERIFY_NONE, lambda *args: True)
    return context
