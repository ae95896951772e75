import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startPrometheus, type PrometheusFixture } from './prometheus';
import { waitFor } from './wait-for';

describe('startPrometheus', () => {
  let exporter: Server;
  let prometheus: PrometheusFixture | undefined;
  const authorizations: string[] = [];

  beforeAll(async () => {
    // A target that answers only with the right bearer token, like a Ratchet service.
    exporter = createServer((request, response) => {
      authorizations.push(request.headers.authorization ?? '');
      if (request.headers.authorization !== 'Bearer good-token') return void response.writeHead(401).end();
      response.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' }).end('# TYPE fixture_answers_total counter\nfixture_answers_total{kind="x"} 42\n');
    });
    await new Promise<void>((resolve) => exporter.listen(0, '127.0.0.1', resolve));
  });
  afterAll(async () => {
    await prometheus?.stop();
    await new Promise((resolve) => exporter.close(resolve));
  });

  it('scrapes its targets every second with their bearer token and answers queries', async () => {
    const address = `127.0.0.1:${(exporter.address() as AddressInfo).port}`;
    prometheus = await startPrometheus({
      jobs: [
        { name: 'good', targets: [{ address, labels: { role: 'fixture' } }], bearerToken: 'good-token' },
        { name: 'bad', targets: [{ address }], bearerToken: 'wrong-token' },
      ],
    });
    await waitFor(async () => (await prometheus!.query('up')).length === 2, { timeoutMs: 15_000, intervalMs: 200 });
    const up = await prometheus.query('up');
    expect(up.find((series) => series.metric['job'] === 'good')).toEqual({ metric: expect.objectContaining({ role: 'fixture', instance: address }), value: 1 });
    expect(up.find((series) => series.metric['job'] === 'bad')?.value).toBe(0);
    expect(await prometheus.query('fixture_answers_total')).toEqual([{ metric: expect.objectContaining({ kind: 'x', job: 'good' }), value: 42 }]);
    expect(await prometheus.query('scalar(vector(2))')).toEqual([{ metric: {}, value: 2 }]);
    const bad = (await prometheus.targets()).find((target) => target.labels['job'] === 'bad');
    expect(bad?.lastError).toMatch(/401/);
    expect(authorizations).toContain('Bearer good-token');
    await expect(prometheus.query('sum(')).rejects.toThrow(/bad_data/);
  }, 60_000);
});
