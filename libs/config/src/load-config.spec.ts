import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { AppError, ErrorCode } from '@ratchet/errors';
import { z } from 'zod';
import { envVariableFor, loadConfig } from './load-config';
import { baseConfigSchema, configSection, extendConfigSchema } from './schema';

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
      telemetry: { tracesExporter: 'none', serviceNamespace: 'ratchet', metrics: { host: '127.0.0.1', allowUnauthenticated: false } },
      log: { level: 'info' },
      shutdown: { graceMs: 10000 },
    });
  });

  it('accepts the committed config/ratchet.yaml and gets the defaults from it', () => {
    const committed = readFileSync(path.resolve(__dirname, '../../../config/ratchet.yaml'), 'utf8');
    write('ratchet.yaml', committed);
    const fromFile = load();
    rmSync(path.join(dir, 'ratchet.yaml'));
    expect(fromFile).toEqual(load());
  });

  it('merges ratchet.yaml, then <service>.yaml, then the environment', () => {
    write('ratchet.yaml', 'bus:\n  natsUrl: nats://nats:4222\n  maxAttempts: 5\n  retryBackoffMs: 50\nlog:\n  level: debug\n');
    write('planner.yaml', 'bus:\n  maxAttempts: 2\n  retryBackoffMs: 60\n');
    write('coder.yaml', 'bus:\n  maxAttempts: 9\n');
    const config = load({ RATCHET_LOG_LEVEL: 'warn', RATCHET_BUS_REQUEST_TIMEOUT_MS: '750', RATCHET_BUS_RETRY_BACKOFF_MS: '70' }, 'planner');
    expect(config.bus).toEqual(expect.objectContaining({ natsUrl: 'nats://nats:4222', maxAttempts: 2, requestTimeoutMs: 750, retryBackoffMs: 70 }));
    expect(config.log.level).toBe('warn');
  });

  it('treats empty environment values as unset and ignores unknown RATCHET_ variables', () => {
    write('ratchet.yaml', 'shutdown:\n  graceMs: 2000\n');
    const config = load({ RATCHET_SHUTDOWN_GRACE_MS: '', RATCHET_LOG_LEVEL: '   ', RATCHET_NO_SUCH_KEY: 'x', RATCHET_BUS: 'x' });
    expect(config.shutdown.graceMs).toBe(2000);
    expect(config.log.level).toBe('info');
  });

  it('coerces environment values to the type of their key', () => {
    const schema = z.object({
      feature: configSection({
        enabled: z.boolean().default(false),
        tags: z.array(z.string()).default([]),
        ports: z.array(z.number()).default([]),
        ratio: z.number().default(0.5),
        mode: z.enum(['fast', 'safe']).default('safe'),
      }),
    });
    expect(
      loadConfig({ schema, configDir: dir, env: { RATCHET_FEATURE_ENABLED: 'yes', RATCHET_FEATURE_TAGS: 'a, b,,c', RATCHET_FEATURE_PORTS: '80,443', RATCHET_FEATURE_RATIO: ' 0.25 ', RATCHET_FEATURE_MODE: 'FAST' } }),
    ).toEqual({ feature: { enabled: true, tags: ['a', 'b', 'c'], ports: [80, 443], ratio: 0.25, mode: 'fast' } });
    expect(loadConfig({ schema, configDir: dir, env: { RATCHET_FEATURE_ENABLED: 'off' } }).feature.enabled).toBe(false);
  });

  it('returns a deeply frozen object', () => {
    const config = load();
    expect(Object.isFrozen(config) && Object.isFrozen(config.bus)).toBe(true);
    const mutable = config as unknown as { bus: { maxAttempts: number } };
    expect(() => {
      mutable.bus.maxAttempts = 9;
    }).toThrow(TypeError);
  });

  it('lists every bad key with where it came from and the variable to fix', () => {
    write('ratchet.yaml', 'bus:\n  transport: carrier-pigeon\n');
    const error = failure(() => load({ RATCHET_BUS_MAX_ATTEMPTS: 'lots', RATCHET_TELEMETRY_OTLP_ENDPOINT: 'collector:4318' }));
    expect(error.message).toMatch(/3 problems/);
    expect(error.message).toMatch(/bus\.transport: .*"nats"\|"inprocess".*\(from file .*ratchet\.yaml\); set RATCHET_BUS_TRANSPORT or bus\.transport in .*ratchet\.yaml/);
    expect(error.message).toMatch(/bus\.maxAttempts: .*expected number.*\(from env RATCHET_BUS_MAX_ATTEMPTS="lots"\); set RATCHET_BUS_MAX_ATTEMPTS/);
    expect(error.message).toMatch(/telemetry\.otlpEndpoint: .*\(from env RATCHET_TELEMETRY_OTLP_ENDPOINT="collector:4318"\); set RATCHET_TELEMETRY_OTLP_ENDPOINT/);
    expect(error.message).not.toContain(dir);
  });

  it('names a required key that nobody set', () => {
    const schema = extendConfigSchema({ model: configSection({ apiKey: z.string().min(1) }) });
    const message = failure(() => loadConfig({ schema, configDir: dir, env: {} })).message;
    expect(message).toMatch(/model\.apiKey: .*\(not set\); set RATCHET_MODEL_API_KEY or model\.apiKey in .*ratchet\.yaml/);
  });

  it('keeps the values of credentials out of the message', () => {
    const schema = z.object({ model: configSection({ apiKey: z.string().min(20) }) });
    const message = failure(() => loadConfig({ schema, configDir: dir, env: { RATCHET_MODEL_API_KEY: 'sk-short' } })).message;
    expect(message).toMatch(/model\.apiKey: .*\(from env RATCHET_MODEL_API_KEY\)/);
    expect(message).not.toContain('sk-short');
  });

  it('names the list key, not the item, when an item is bad', () => {
    const schema = z.object({ safety: configSection({ ports: z.array(z.number().int().positive()).default([]) }) });
    write('ratchet.yaml', 'safety:\n  ports: [80, -1]\n');
    expect(failure(() => loadConfig({ schema, configDir: dir, env: {} })).message).toMatch(/safety\.ports\.1: .*\(from file .*ratchet\.yaml\); set RATCHET_SAFETY_PORTS or safety\.ports/);
  });

  it('rejects keys it does not know, naming the file, once', () => {
    write('ratchet.yaml', 'bus:\n  natsURL: nats://typo:4222\n');
    write('planner.yaml', 'planer:\n  steps: 3\n');
    const message = failure(() => load({}, 'planner')).message;
    expect(message).toMatch(/2 problems/);
    expect(message).toMatch(/bus\.natsURL: unknown key in .*ratchet\.yaml; known keys here: transport, natsUrl/);
    expect(message).toMatch(/planer: unknown key in .*planner\.yaml/);
  });

  it('allows unknown keys where the schema is loose', () => {
    write('ratchet.yaml', 'bus:\n  natsUrl: nats://nats:4222\nshutdown:\n  graceMs: 1\n');
    const schema = z.looseObject({ bus: z.object({ natsUrl: z.string() }).prefault({ natsUrl: 'x' }) });
    expect(loadConfig({ schema, configDir: dir, env: {} }).bus.natsUrl).toBe('nats://nats:4222');
  });

  it('extends the base schema with a service section', () => {
    write('planner.yaml', 'planner:\n  maxSteps: 4\n');
    const schema = extendConfigSchema({ planner: configSection({ maxSteps: z.number().int().default(8), style: z.string().default('terse') }) });
    const config = loadConfig({ schema, configDir: dir, service: 'planner', env: { RATCHET_PLANNER_STYLE: 'verbose' } });
    expect(config.planner).toEqual({ maxSteps: 4, style: 'verbose' });
    expect(config.bus.maxAttempts).toBe(3);
  });

  it('reports YAML syntax errors with file and line', () => {
    write('ratchet.yaml', 'bus:\n  natsUrl: [unclosed\nlog: {\n');
    expect(failure(() => load()).message).toMatch(/ratchet\.yaml:\d+:\d+: YAML syntax error/);
  });

  it('rejects a top level that is not a mapping', () => {
    write('ratchet.yaml', '- bus\n- log\n');
    expect(failure(() => load()).message).toMatch(/ratchet\.yaml: expected a mapping/);
  });

  it('requires files and directories that were named explicitly', () => {
    write('extra.yaml', 'log:\n  level: error\n');
    expect(loadConfig({ schema: baseConfigSchema, configDir: dir, env: {}, files: ['extra.yaml'] }).log.level).toBe('error');
    expect(failure(() => loadConfig({ schema: baseConfigSchema, configDir: dir, env: {}, files: ['missing.yaml'] })).message).toMatch(/missing\.yaml: file not found/);
    const missingDir = path.join(dir, 'nope');
    expect(failure(() => loadConfig({ schema: baseConfigSchema, env: { RATCHET_CONFIG_DIR: missingDir } })).message).toMatch(/config directory .*nope does not exist \(from env RATCHET_CONFIG_DIR\)/);
  });

  it('reads RATCHET_CONFIG_DIR when no directory is given', () => {
    const other = path.join(dir, 'other');
    mkdirSync(other);
    writeFileSync(path.join(other, 'ratchet.yaml'), 'log:\n  level: trace\n');
    expect(loadConfig({ schema: baseConfigSchema, env: { RATCHET_CONFIG_DIR: other } }).log.level).toBe('trace');
  });

  it('derives variable names from key paths', () => {
    expect(envVariableFor(['bus', 'natsUrl'])).toBe('RATCHET_BUS_NATS_URL');
    expect(envVariableFor(['shutdown', 'graceMs'])).toBe('RATCHET_SHUTDOWN_GRACE_MS');
    expect(envVariableFor(['telemetry', 'otlpEndpoint'])).toBe('RATCHET_TELEMETRY_OTLP_ENDPOINT');
  });
});
