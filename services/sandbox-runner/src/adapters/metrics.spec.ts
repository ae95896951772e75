import { SandboxJobResult } from '@ratchet/contracts';
import { processMetrics } from '@ratchet/telemetry';
import { countJobTaken, jobOutcome, observeJob, reportRunner } from './metrics';

const scrape = async (name: string) => (await processMetrics().registry.metrics()).split('\n').filter((line) => line.startsWith(name));
const result = (fields: Partial<SandboxJobResult>) => SandboxJobResult.fromPartial({ exitCode: 0, ...fields });

describe('sandbox runner metrics', () => {
  it('names how a job ended, a kill for memory or time before its exit code', () => {
    expect(jobOutcome(result({}))).toBe('passed');
    expect(jobOutcome(result({ exitCode: 1 }))).toBe('failed');
    expect(jobOutcome(result({ exitCode: -1, timedOut: true }))).toBe('timeout');
    expect(jobOutcome(result({ exitCode: 137, oomKilled: true, timedOut: true }))).toBe('oom');
  });

  it('times jobs by outcome and counts OOM kills, timeouts and jobs taken', async () => {
    const stop = reportRunner({ queue: 'jobs', warmPoolSize: () => 2, backlog: async () => ({ pending: 3, ackPending: 1 }) });
    try {
      // Every series exists before the first job.
      expect(await scrape('ratchet_sandbox_oom_kills_total')).toEqual(['ratchet_sandbox_oom_kills_total 0']);
      expect(await scrape('ratchet_sandbox_jobs_taken_total')).toEqual(['ratchet_sandbox_jobs_taken_total 0']);

      countJobTaken();
      await observeJob(async () => result({}));
      await observeJob(async () => result({ exitCode: 137, oomKilled: true }));
      await observeJob(async () => result({ exitCode: -1, timedOut: true }));
      await expect(observeJob(() => Promise.reject(new Error('docker is down')))).rejects.toThrow('docker is down');

      expect(await scrape('ratchet_sandbox_jobs_taken_total')).toEqual(['ratchet_sandbox_jobs_taken_total 1']);
      expect(await scrape('ratchet_sandbox_oom_kills_total')).toEqual(['ratchet_sandbox_oom_kills_total 1']);
      expect(await scrape('ratchet_sandbox_timeouts_total')).toEqual(['ratchet_sandbox_timeouts_total 1']);
      expect(await scrape('ratchet_sandbox_job_duration_seconds_count')).toEqual(
        expect.arrayContaining([
          'ratchet_sandbox_job_duration_seconds_count{outcome="passed"} 1',
          'ratchet_sandbox_job_duration_seconds_count{outcome="oom"} 1',
          'ratchet_sandbox_job_duration_seconds_count{outcome="timeout"} 1',
          'ratchet_sandbox_job_duration_seconds_count{outcome="error"} 1',
        ]),
      );
      expect(await scrape('ratchet_sandbox_warm_pool_size')).toEqual(['ratchet_sandbox_warm_pool_size 2']);
      expect(await scrape('ratchet_sandbox_queue_lag')).toEqual(['ratchet_sandbox_queue_lag{queue="jobs"} 4']);
    } finally {
      stop();
    }
  });

  it('leaves the queue lag out of a scrape when JetStream does not answer in time', async () => {
    const stop = reportRunner({ queue: 'jobs', warmPoolSize: () => 0, backlog: () => new Promise(() => undefined) });
    try {
      expect(await scrape('ratchet_sandbox_queue_lag')).toEqual([]);
      expect(await scrape('ratchet_sandbox_warm_pool_size')).toEqual(['ratchet_sandbox_warm_pool_size 0']);
    } finally {
      stop();
    }
  });
});
