import { Registry } from 'prom-client';
import { createMetrics, exportedMetrics, METRIC_PREFIX, metricDefinitions, processMetrics } from './metrics';

describe('metrics', () => {
  it('defines every metric with the ratchet_ prefix, counters ending in _total, durations in seconds', () => {
    for (const definition of Object.values(metricDefinitions)) {
      expect(definition.name.startsWith(METRIC_PREFIX)).toBe(true);
      expect(definition.kind === 'counter').toBe(definition.name.endsWith('_total'));
      if (/duration/.test(definition.name)) expect(definition.name).toMatch(/_seconds$/);
      // Labels that would grow with every task or job are not allowed.
      for (const label of definition.labelNames) expect(label).not.toMatch(/task|job_id|request|trace/);
    }
  });

  it('lists the definitions and the process metrics, all prefixed', () => {
    const exported = exportedMetrics();
    const names = exported.map((metric) => metric.name);
    for (const definition of Object.values(metricDefinitions)) expect(names).toContain(definition.name);
    expect(names).toContain('ratchet_process_cpu_seconds_total');
    expect(names).toContain('ratchet_nodejs_eventloop_lag_seconds');
    expect(names.every((name) => name.startsWith(METRIC_PREFIX))).toBe(true);
    expect(exported.find((metric) => metric.name === 'ratchet_model_tokens_total')?.labelNames).toEqual(['role', 'model', 'kind']);
  });

  it('reads a gauge at scrape time, and leaves it out when the read fails', async () => {
    const metrics = createMetrics(new Registry());
    let depth: number | Error = 3;
    const stop = metrics.readAtScrape('tasksActive', (gauge) => {
      if (depth instanceof Error) throw depth;
      gauge.set({ status: 'QUEUED' }, depth);
    });
    expect(await metrics.registry.metrics()).toContain('ratchet_tasks_active{status="QUEUED"} 3');
    depth = 5;
    expect(await metrics.registry.metrics()).toContain('ratchet_tasks_active{status="QUEUED"} 5');
    depth = new Error('database down');
    expect(await metrics.registry.metrics()).not.toContain('ratchet_tasks_active{');
    stop();
    depth = 7;
    expect(await metrics.registry.metrics()).not.toContain('ratchet_tasks_active{');
  });

  it('keeps one registry per process', () => {
    expect(processMetrics()).toBe(processMetrics());
    expect(() => processMetrics().readAtScrape('tasksFinished' as never, () => undefined)).toThrow(/not a gauge/);
  });
});
