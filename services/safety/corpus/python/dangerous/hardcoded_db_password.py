"""Connects to the reporting database."""
import psycopg2

DB_PASSWORD = "Reporting2024!"


def connect():
    return psycopg2.connect(host="db.internal", user="reporter", password=DB_PASSWORD, dbname="reports")
