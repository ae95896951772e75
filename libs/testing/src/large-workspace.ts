import type { SourceFile } from '@ratchet/contracts';

/**
 * A Python module of `functions` report functions named `<name>_<n>`, 9
 * lines each (about 80 tokens): `def <name>_<n>(rows, width=<n>):` on line
 * `9 * n + 1`, its `lines = []` two lines further.
 */
export function reportModule(name: string, functions: number): string {
  return Array.from(
    { length: functions },
    (_, number) => `def ${name}_${number}(rows, width=${number}):
    """Report ${number} of ${name}."""
    lines = []
    for row in rows:
        text = f"{row.key:<20} {row.amount:>10}"
        lines.append(text[:width])
    return "\\n".join(lines)
`,
  ).join('\n\n');
}

/**
 * A workspace of `count` large Python files for prompt budget tests: modules
 * `app/pkg_<i % 9>/area_<i % 4>/records_<i>.py` of 60 report functions
 * (about 5,000 tokens each) named `report_<i>_<n>`, and every fifth file a
 * test `tests/test_records_<i>.py` of the same size. Deterministic.
 */
export function largeWorkspace(count: number): SourceFile[] {
  return Array.from({ length: count }, (_, index) =>
    index % 5 === 4
      ? { path: `tests/test_records_${index}.py`, content: `from app.records_${index - 1} import report_${index - 1}_0\n\n\n${reportModule(`test_report_${index}`, 60)}` }
      : { path: `app/pkg_${index % 9}/area_${index % 4}/records_${index}.py`, content: reportModule(`report_${index}`, 60) },
  );
}

/**
 * `content` with one line changed: the `lines = []` of function `number`
 * of a `reportModule` becomes `lines = ["<marker>"]`; its 1-based line is
 * `9 * number + 3` (see `reportModule`).
 */
export function changeReport(content: string, name: string, number: number, marker: string): { readonly content: string; readonly line: number } {
  const anchor = `"""Report ${number} of ${name}."""\n    lines = []`;
  if (!content.includes(anchor)) throw new Error(`no function ${name}_${number} in the module`);
  const changed = content.replace(anchor, `"""Report ${number} of ${name}."""\n    lines = ["${marker}"]`);
  return { content: changed, line: changed.slice(0, changed.indexOf(`lines = ["${marker}"]`)).split('\n').length };
}
