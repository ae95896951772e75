// Computes a spreadsheet cell from the formula the user typed.
export function computeCell(formula: string, cells: Record<string, number>): number {
  const expression = formula.replace(/[A-Z]\d+/g, (name) => String(cells[name] ?? 0));
  return eval(expression) as number;
}
