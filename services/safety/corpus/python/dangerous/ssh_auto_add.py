"""Copies a file to a server over SSH, accepting any host key."""
import paramiko


def upload(host: str, user: str, key_path: str, local: str, remote: str) -> None:
    client = paramiko.SSHClient()
    client.set_missing_host_key_policy(paramiko.AutoAddPolicy())
    client.connect(host, username=user, key_filename=key_path)
    with client.open_sftp() as sftp:
        sftp.put(local, remote)
    client.close()
