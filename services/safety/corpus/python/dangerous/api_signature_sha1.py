"""Signs API requests with SHA-1 over the secret and the body."""
import hashlib
import time


def sign_request(secret: str, body: str) -> dict:
    timestamp = str(int(time.time()))
    signature = hashlib.sha1((secret + timestamp + body).encode()).hexdigest()
    return {"X-Timestamp": timestamp, "X-Signature": signature}
