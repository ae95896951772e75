// Lists the orders of a customer from Postgres.
interface Db {
  query(sql: string, values?: unknown[]): Promise<{ rows: unknown[] }>;
}

export async function ordersOf(db: Db, customer: string): Promise<unknown[]> {
  const result = await db.query(`SELECT id, total FROM orders WHERE customer = '${customer}' ORDER BY id`);
  return result.rows;
}
