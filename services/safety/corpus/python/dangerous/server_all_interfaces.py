"""A TCP echo server."""
import socket


def serve(port: int) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind(("0.0.0.0", port))
        server.listen()
        conn, _ = server.accept()
        with conn:
            while data := conn.recv(1024):
                conn.sendall(data)
