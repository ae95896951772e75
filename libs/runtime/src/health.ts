import { HealthStatus } from '@ratchet/contracts';
import type { DependencyHealth, HealthResponse } from '@ratchet/contracts';

/** Something a service needs, probed on every Health call. */
export interface DependencyCheck {
  readonly name: string;
  /** A required dependency that is down makes the service NOT_SERVING; an optional one only DEGRADED. */
  readonly required: boolean;
  /** Resolves with the dependency's state; a rejection or a timeout counts as down. */
  check(): Promise<{ ok: boolean; detail: string }>;
}

export interface HealthInput {
  readonly service: string;
  readonly version: string;
  readonly instanceId: string;
  readonly startedAt: number;
  readonly now: number;
  readonly draining: boolean;
  readonly results: readonly { check: DependencyCheck; ok: boolean; detail: string }[];
}

/** The overall status is the worst of the service's own state and its dependencies'. */
export function healthReport(input: HealthInput): HealthResponse {
  const dependencies: DependencyHealth[] = input.results.map(({ check, ok, detail }) => ({
    name: check.name,
    status: ok ? HealthStatus.HEALTH_STATUS_SERVING : HealthStatus.HEALTH_STATUS_NOT_SERVING,
    detail,
  }));
  let status: HealthStatus = HealthStatus.HEALTH_STATUS_SERVING;
  if (input.results.some(({ check, ok }) => !ok && !check.required)) status = HealthStatus.HEALTH_STATUS_DEGRADED;
  if (input.draining || input.results.some(({ check, ok }) => !ok && check.required)) status = HealthStatus.HEALTH_STATUS_NOT_SERVING;
  const uptimeMs = Math.max(0, input.now - input.startedAt);
  return {
    service: input.service,
    version: input.version,
    status,
    uptime: { seconds: Math.floor(uptimeMs / 1000), nanos: (uptimeMs % 1000) * 1_000_000 },
    dependencies,
    instanceId: input.instanceId,
    checkedAt: new Date(input.now),
  };
}

/** Runs every check with a time limit; never throws. */
export async function runChecks(checks: readonly DependencyCheck[], timeoutMs: number): Promise<HealthInput['results']> {
  return Promise.all(
    checks.map(async (check) => {
      let timer: NodeJS.Timeout | undefined;
      try {
        const result = await Promise.race([
          check.check(),
          new Promise<{ ok: boolean; detail: string }>((resolve) => (timer = setTimeout(() => resolve({ ok: false, detail: `no answer within ${timeoutMs} ms` }), timeoutMs))),
        ]);
        return { check, ...result };
      } catch (error) {
        return { check, ok: false, detail: error instanceof Error ? error.message : String(error) };
      } finally {
        clearTimeout(timer);
      }
    }),
  );
}
