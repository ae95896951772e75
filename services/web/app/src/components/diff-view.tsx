import { useMemo, useState } from 'react';
import { diffFiles } from '../file-diff';
import type { Iteration } from '../types';

/**
 * What the code changed between two iterations: pick the two (by default
 * the last one against the one before), see each changed file's hunks.
 */
export function DiffView(props: { readonly iterations: readonly Iteration[] }) {
  const numbers = props.iterations.filter((iteration) => (iteration.files ?? []).length > 0).map((iteration) => iteration.number ?? 0);
  const [chosen, setChosen] = useState<{ from?: number; to?: number }>({});
  const to = chosen.to ?? numbers.at(-1) ?? 0;
  const from = chosen.from ?? numbers.filter((number) => number < to).at(-1) ?? 0;
  const filesOf = (number: number) => props.iterations.find((iteration) => iteration.number === number)?.files ?? [];
  const diffs = useMemo(() => diffFiles(from === 0 ? [] : filesOf(from), filesOf(to)), [from, to, props.iterations]);
  if (numbers.length === 0) return <p className="muted">No code written yet.</p>;
  const picker = (label: string, value: number, onChange: (value: number) => void, withNone: boolean) => (
    <label className="inline">
      {label}{' '}
      <select value={value} onChange={(event) => onChange(Number(event.target.value))} aria-label={`${label} iteration`}>
        {withNone && <option value={0}>nothing (new files)</option>}
        {numbers.map((number) => (
          <option key={number} value={number}>
            iteration {number}
          </option>
        ))}
      </select>
    </label>
  );
  return (
    <div className="diff-view">
      <div className="diff-pickers">
        {picker('from', from, (value) => setChosen({ from: value, to }), true)}
        {picker('to', to, (value) => setChosen({ from, to: value }), false)}
      </div>
      {diffs.length === 0 && <p className="muted">No change between these iterations.</p>}
      {diffs.map((diff) => (
        <details key={diff.path} className="diff-file" open={diffs.length <= 4}>
          <summary>
            <code>{diff.path}</code> <span className="muted">{diff.change === 'changed' ? '' : diff.change}</span> <span className="added-count">+{diff.added}</span> <span className="removed-count">-{diff.removed}</span>
          </summary>
          <table className="diff-table">
            <tbody>
              {diff.hunks.map((hunk) => [
                <tr key={hunk.header} className="diff-hunk">
                  <td colSpan={3}>{hunk.header}</td>
                </tr>,
                ...hunk.lines.map((line, index) => (
                  <tr key={`${hunk.header}-${index}`} className={`diff-${line.kind}`}>
                    <td className="line-number">{line.oldLine ?? ''}</td>
                    <td className="line-number">{line.newLine ?? ''}</td>
                    <td className="line-text">
                      <span className="line-sign">{line.kind === 'added' ? '+' : line.kind === 'removed' ? '-' : ' '}</span>
                      {line.text}
                    </td>
                  </tr>
                )),
              ])}
            </tbody>
          </table>
        </details>
      ))}
    </div>
  );
}
