"""Downloads a file over SFTP, checking the host key against known_hosts."""
import paramiko


def download(host: str, user: str, remote: str, local: str) -> None:
    client = paramiko.SSHClient()
    client.load_system_host_keys()
    client.set_missing_host_key_policy(paramiko.RejectPolicy())
    client.connect(host, username=user)
    with client.open_sftp() as sftp:
        sftp.get(remote, local)
    client.close()
