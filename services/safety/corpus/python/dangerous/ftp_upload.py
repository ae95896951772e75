"""Uploads nightly exports to the partner's FTP server."""
from ftplib import FTP


def upload_export(host: str, user: str, secret: str, path: str) -> None:
    ftp = FTP(host)
    ftp.login(user, secret)
    with open(path, "rb") as handle:
        ftp.storbinary(f"STOR {path}", handle)
    ftp.quit()
