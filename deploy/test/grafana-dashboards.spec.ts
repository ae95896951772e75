import { readFileSync } from 'node:fs';
import path from 'node:path';
import { exportedMetrics, metricDefinitions } from '@ratchet/telemetry';
import { parse as parseYaml } from 'yaml';
import { analysePromql, dashboards, panelsOf, prometheusQueries } from './dashboards';

// The dashboards are JSON that nothing compiles: this keeps them from
// drifting from the code. Every PromQL query may name only metrics the
// Ratchet registry exports (or Prometheus's own `up`), match and group only
// on their labels (or the target labels job and instance), and give rate()
// and increase() only counters and histogram series.

/** Labels every scraped series gets from its target. */
const targetLabels = ['job', 'instance'];

/** Series name -> its labels and whether it counts (rate() makes sense of it). */
function knownSeries(): Map<string, { labels: string[]; counts: boolean }> {
  const series = new Map<string, { labels: string[]; counts: boolean }>();
  for (const metric of exportedMetrics()) {
    const labels = [...metric.labelNames, ...targetLabels];
    if (metric.kind === 'histogram') {
      series.set(`${metric.name}_bucket`, { labels: [...labels, 'le'], counts: true });
      series.set(`${metric.name}_sum`, { labels, counts: true });
      series.set(`${metric.name}_count`, { labels, counts: true });
    } else if (metric.kind === 'summary') {
      series.set(metric.name, { labels: [...labels, 'quantile'], counts: false });
      series.set(`${metric.name}_sum`, { labels, counts: true });
      series.set(`${metric.name}_count`, { labels, counts: true });
    } else {
      series.set(metric.name, { labels, counts: metric.kind === 'counter' });
    }
  }
  // Written by Prometheus itself for every target.
  series.set('up', { labels: targetLabels, counts: false });
  return series;
}

describe('Grafana dashboards', () => {
  const all = dashboards();
  const series = knownSeries();

  it('has the loop and sandbox dashboards, each a provisionable dashboard with its own uid', () => {
    expect(all.map((dashboard) => dashboard.file)).toEqual(expect.arrayContaining(['loop.json', 'sandbox.json']));
    const uids = all.map((dashboard) => dashboard.json.uid);
    expect(new Set(uids).size).toBe(uids.length);
    for (const { file, json } of all) {
      expect({ file, uid: typeof json.uid, title: typeof json.title }).toEqual({ file, uid: 'string', title: 'string' });
      expect(json.schemaVersion).toBeGreaterThanOrEqual(36);
    }
  });

  it('lays every panel out on the 24-column grid without overlaps, with unique ids, on the provisioned datasources', () => {
    for (const dashboard of all) {
      const panels = panelsOf(dashboard);
      const ids = panels.map((panel) => panel.id);
      expect({ file: dashboard.file, duplicates: ids.filter((id, index) => ids.indexOf(id) !== index) }).toEqual({ file: dashboard.file, duplicates: [] });
      for (const panel of panels) {
        const { x, y, w, h } = panel.gridPos;
        expect({ panel: panel.title, fits: x >= 0 && y >= 0 && w > 0 && h > 0 && x + w <= 24 }).toEqual({ panel: panel.title, fits: true });
        for (const datasource of [panel.datasource, ...(panel.targets ?? []).map((target) => target.datasource)]) {
          if (datasource?.uid !== undefined) expect(['prometheus', 'tempo']).toContain(datasource.uid);
        }
      }
      const overlapping = panels.flatMap((left, index) =>
        panels.slice(index + 1).filter((right) => {
          const a = left.gridPos;
          const b = right.gridPos;
          return a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;
        }).map((right) => `${left.title} / ${right.title}`),
      );
      expect({ file: dashboard.file, overlapping }).toEqual({ file: dashboard.file, overlapping: [] });
    }
  });

  it('queries only metrics the registry defines, with their labels', () => {
    const problems: string[] = [];
    const queries = all.flatMap(prometheusQueries);
    expect(queries.length).toBeGreaterThan(20);
    for (const { panel, expr, legendFormat } of queries) {
      const { selectors, groupingLabels } = analysePromql(expr);
      if (selectors.length === 0) problems.push(`${panel}: no metric in ${expr}`);
      const available = new Set<string>([...targetLabels]);
      for (const selector of selectors) {
        const known = series.get(selector.name);
        if (known === undefined) {
          problems.push(`${panel}: ${selector.name} is not a metric of the registry (${expr})`);
          continue;
        }
        for (const label of known.labels) available.add(label);
        for (const label of selector.labels) if (!known.labels.includes(label)) problems.push(`${panel}: ${selector.name} has no label ${label}`);
        if ((selector.enclosingFunction === 'rate' || selector.enclosingFunction === 'increase') && !known.counts) problems.push(`${panel}: ${selector.enclosingFunction}() of ${selector.name}, which is not a counter`);
        if (selector.enclosingFunction === undefined && known.counts && selector.name !== 'up') problems.push(`${panel}: ${selector.name} is a counter, shown without rate() or increase()`);
      }
      for (const label of groupingLabels) if (!available.has(label)) problems.push(`${panel}: groups by ${label}, which none of its metrics has`);
      for (const [, label] of legendFormat.matchAll(/\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}/g)) if (!available.has(label as string)) problems.push(`${panel}: the legend names ${label}, which none of its metrics has`);
    }
    expect(problems).toEqual([]);
  });

  it('shows every Ratchet metric on some dashboard', () => {
    const shown = new Set(all.flatMap(prometheusQueries).flatMap(({ expr }) => analysePromql(expr).selectors.map((selector) => selector.name.replace(/_(bucket|sum|count)$/, ''))));
    const missing = Object.values(metricDefinitions)
      .map((definition) => definition.name)
      .filter((name) => !shown.has(name));
    expect(missing).toEqual([]);
  });

  it('reads PromQL the way the checks above need', () => {
    expect(analysePromql('histogram_quantile(0.9, sum by (le, role) (rate(ratchet_model_call_duration_seconds_bucket{role!="x"}[5m])))')).toEqual({
      selectors: [{ name: 'ratchet_model_call_duration_seconds_bucket', labels: ['role'], enclosingFunction: 'rate' }],
      groupingLabels: ['le', 'role'],
    });
    expect(analysePromql('a * on (instance) group_left () b{c="d"} > bool 0').selectors.map((selector) => selector.name)).toEqual(['a', 'b']);
    expect(() => analysePromql('{__name__="x"}')).toThrow(/name the metric/);
  });

  it('has a dashboards provider that loads the mounted dashboards directory', () => {
    const provider = parseYaml(readFileSync(path.resolve(__dirname, '../grafana/provisioning/dashboards/ratchet.yaml'), 'utf8')) as { apiVersion: number; providers: { type: string; options: { path: string } }[] };
    expect(provider.apiVersion).toBe(1);
    expect(provider.providers).toEqual([expect.objectContaining({ type: 'file', options: expect.objectContaining({ path: '/var/lib/grafana/dashboards' }) })]);
  });
});
