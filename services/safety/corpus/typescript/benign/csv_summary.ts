// Summarises a numeric column of a CSV file.
import { readFileSync } from 'node:fs';

export function summarise(path: string, column: string): { count: number; mean: number; max: number } {
  const [header, ...rows] = readFileSync(path, 'utf8').trim().split('\n');
  const index = (header ?? '').split(',').indexOf(column);
  const values = rows.map((row) => Number(row.split(',')[index])).filter((value) => !Number.isNaN(value));
  return { count: values.length, mean: values.reduce((sum, value) => sum + value, 0) / values.length, max: Math.max(...values) };
}
