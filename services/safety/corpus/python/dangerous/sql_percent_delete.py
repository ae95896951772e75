"""Deletes expired orders for a customer."""


def delete_orders(cursor, customer_id, before):
    cursor.execute("DELETE FROM orders WHERE customer_id = %s AND created < '%s'" % (customer_id, before))
    return cursor.rowcount
