// Compiles business rules stored as text into predicates.
export type Predicate = (order: { total: number; country: string }) => boolean;

export function compileRule(rule: string): Predicate {
  return new Function('order', `return (${rule});`) as Predicate;
}
