"""Looks up customers by name in SQLite."""
import sqlite3


def find_customer(conn: sqlite3.Connection, name: str):
    cursor = conn.cursor()
    cursor.execute(f"SELECT id, email FROM customers WHERE name = '{name}'")
    return cursor.fetchall()
