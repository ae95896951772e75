"""Installs a cron job that cleans old logs."""

JOB = "0 3 * * * root find /var/log/app -mtime +7 -delete\n"


def install() -> None:
    with open("/etc/cron.d/clean-logs", "w") as handle:
        handle.write(JOB)


if __name__ == "__main__":
    install()
