"""Processes an upload in a temporary directory, created safely."""
import os
import shutil
import tempfile


def process(data: bytes) -> int:
    with tempfile.TemporaryDirectory() as workdir:
        path = os.path.join(workdir, "upload.bin")
        with open(path, "wb") as handle:
            handle.write(data)
        fd, copy = tempfile.mkstemp(dir=workdir)
        os.close(fd)
        shutil.copyfile(path, copy)
        return os.path.getsize(copy)
