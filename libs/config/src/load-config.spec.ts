import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { AppError, ErrorCode } from '@ratchet/errors';
import { z } from 'zod';
import { envVariableFor, loadConfig } from './load-config';
import { baseConfigSchema } from './schema';

describe('loadConfig', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'ratchet-config-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));
  const write = (name: string, text: string) => writeFileSync(path.join(dir, name), text);
  const load = (env: Record<string, string> = {}, service?: string) => loadConfig({ schema: baseConfigSchema, configDir: dir, env, service });
  const failure = (run: () => unknown): AppError => {
    try {
      run();
    } catch (error) {
      expect(AppError.is(error) && error.code).toBe(ErrorCode.CONFIG_INVALID);
      return error as AppError;
    }
    throw new Error('expected CONFIG_INVALID');
  };

  it('works with no files at all, from defaults', () => {
    expect(load()).toEqual({
      bus: { transport: 'nats', natsUrl: 'nats://127.0.0.1:4222', requestTimeoutMs: 5000, maxAttempts: 3, retryBackoffMs: 100 },
      log: { level: 'info' },
      shutdown: { graceMs: 10000 },
    });
  });

  it('merges ratchet.yaml, then <service>.yaml, then the environment', () => {
    write('ratchet.yaml', 'bus:\n  natsUrl: nats://nats:4222\n  maxAttempts: 5\nlog:\n  level: debug\n');
    write('planner.yaml', 'bus:\n  maxAttempts: 2\n');
    const config = load({ RATCHET_LOG_LEVEL: 'warn', RATCHET_BUS_REQUEST_TIMEOUT_MS: '750', RATCHET_SHUTDOWN_GRACE_MS: '' }, 'planner');
    expect(config.bus).toEqual(expect.objectContaining({ natsUrl: 'nats://nats:4222', maxAttempts: 2, requestTimeoutMs: 750 }));
    expect(config.log.level).toBe('warn');
    expect(config.shutdown.graceMs).toBe(10000); // empty env value counts as unset
  });

  it('coerces booleans and lists from the environment', () => {
    const schema = z.object({ feature: z.object({ enabled: z.boolean().default(false), tags: z.array(z.string()).default([]) }).prefault({}) });
    expect(loadConfig({ schema, configDir: dir, env: { RATCHET_FEATURE_ENABLED: 'yes', RATCHET_FEATURE_TAGS: 'a, b,,c' } })).toEqual({ feature: { enabled: true, tags: ['a', 'b', 'c'] } });
  });

  it('returns a deeply frozen object', () => {
    const config = load() as unknown as { bus: { maxAttempts: number } };
    expect(() => {
      config.bus.maxAttempts = 9;
    }).toThrow(TypeError);
  });

  it('lists every bad key with where it came from and the variable to fix', () => {
    write('ratchet.yaml', 'bus:\n  transport: carrier-pigeon\n');
    const error = failure(() => load({ RATCHET_BUS_MAX_ATTEMPTS: 'lots' }));
    expect(error.message).toMatch(/2 problems/);
    expect(error.message).toMatch(/bus\.transport: .*"nats"\|"inprocess".*\(from file ratchet\.yaml\); set RATCHET_BUS_TRANSPORT or bus\.transport/);
    expect(error.message).toMatch(/bus\.maxAttempts: .*expected number.*\(from env RATCHET_BUS_MAX_ATTEMPTS="lots"\); set RATCHET_BUS_MAX_ATTEMPTS/);
  });

  it('rejects keys it does not know, naming the file', () => {
    write('ratchet.yaml', 'bus:\n  natsURL: nats://typo:4222\n');
    expect(failure(() => load()).message).toMatch(/bus\.natsURL: unknown key in ratchet\.yaml; known keys here: transport, natsUrl/);
  });

  it('reports YAML syntax errors with the line', () => {
    write('ratchet.yaml', 'bus:\n  natsUrl: [unclosed\nlog: {\n');
    expect(failure(() => load()).message).toMatch(/ratchet\.yaml:\d+:\d+: YAML syntax error/);
  });

  it('derives variable names from key paths', () => {
    expect(envVariableFor(['bus', 'natsUrl'])).toBe('RATCHET_BUS_NATS_URL');
    expect(envVariableFor(['shutdown', 'graceMs'])).toBe('RATCHET_SHUTDOWN_GRACE_MS');
  });
});
