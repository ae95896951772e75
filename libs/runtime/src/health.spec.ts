import { HealthStatus } from '@ratchet/contracts';
import type { DependencyCheck } from './health';
import { healthReport, runChecks } from './health';

const check = (name: string, required: boolean, result: () => Promise<{ ok: boolean; detail: string }>): DependencyCheck => ({ name, required, check: result });

describe('healthReport', () => {
  const base = { service: 'planner', version: '1.2.3', instanceId: 'host:1', startedAt: 1_000, now: 62_500, draining: false };

  it('is SERVING with uptime when every dependency is up', () => {
    const report = healthReport({ ...base, results: [{ check: check('bus:nats', true, async () => ({ ok: true, detail: '' })), ok: true, detail: 'connected' }] });
    expect(report.status).toBe(HealthStatus.HEALTH_STATUS_SERVING);
    expect(report.uptime).toEqual({ seconds: 61, nanos: 500_000_000 });
    expect(report.dependencies).toEqual([{ name: 'bus:nats', status: HealthStatus.HEALTH_STATUS_SERVING, detail: 'connected' }]);
    expect(report.checkedAt).toEqual(new Date(62_500));
  });

  it('is DEGRADED when an optional dependency is down, NOT_SERVING when a required one is or while draining', () => {
    const optionalDown = { check: check('qdrant', false, async () => ({ ok: false, detail: '' })), ok: false, detail: 'refused' };
    const requiredDown = { check: check('bus:nats', true, async () => ({ ok: false, detail: '' })), ok: false, detail: 'down' };
    expect(healthReport({ ...base, results: [optionalDown] }).status).toBe(HealthStatus.HEALTH_STATUS_DEGRADED);
    expect(healthReport({ ...base, results: [optionalDown, requiredDown] }).status).toBe(HealthStatus.HEALTH_STATUS_NOT_SERVING);
    expect(healthReport({ ...base, draining: true, results: [] }).status).toBe(HealthStatus.HEALTH_STATUS_NOT_SERVING);
  });
});

describe('runChecks', () => {
  it('turns a rejection or a hung check into a down dependency', async () => {
    const results = await runChecks(
      [
        check('fine', true, async () => ({ ok: true, detail: 'ok' })),
        check('throws', true, async () => Promise.reject(new Error('connection refused'))),
        check('hangs', false, () => new Promise(() => undefined)),
      ],
      50,
    );
    expect(results.map(({ check: { name }, ok, detail }) => ({ name, ok, detail }))).toEqual([
      { name: 'fine', ok: true, detail: 'ok' },
      { name: 'throws', ok: false, detail: 'connection refused' },
      { name: 'hangs', ok: false, detail: 'no answer within 50 ms' },
    ]);
  });
});
