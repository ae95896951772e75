"""Prints count, mean, median and standard deviation of a CSV column."""
import csv
import statistics
import sys


def column(path: str, name: str) -> list:
    with open(path, newline="") as handle:
        return [float(row[name]) for row in csv.DictReader(handle) if row[name]]


def summary(values: list) -> dict:
    return {
        "count": len(values),
        "mean": statistics.fmean(values),
        "median": statistics.median(values),
        "stdev": statistics.stdev(values) if len(values) > 1 else 0.0,
    }


if __name__ == "__main__":
    for key, value in summary(column(sys.argv[1], sys.argv[2])).items():
        print(f"{key}: {value:.3f}")
