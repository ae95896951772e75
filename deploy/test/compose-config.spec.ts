import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parse } from 'yaml';
import { composeCommand, runCommand } from './commands';

// docker-compose.yml and its offline variant, as `docker compose config`
// resolves them with the .env file deploy/compose/init.sh makes: valid, and
// secured the way deploy/README.md says.
jest.setTimeout(60_000);

const repoRoot = path.resolve(__dirname, '../..');
const ratchetServices = ['orchestrator', 'planner', 'coder', 'tester', 'reflector', 'safety', 'memory', 'sandbox-runner'];

interface ComposeService {
  image: string;
  user?: string;
  read_only?: boolean;
  cap_drop?: string[];
  profiles?: string[];
  environment?: Record<string, string>;
  ports?: (string | { host_ip?: string; published?: string | number; target: number })[];
}
interface ComposeModel {
  services: Record<string, ComposeService>;
}

let dir: string;
let envFile: string;
let compose: string[];

async function config(files: string[], env = envFile) {
  const [command, ...args] = compose;
  return runCommand(command!, [...args, '--env-file', env, ...files.flatMap((file) => ['-f', file]), 'config'], {
    cwd: repoRoot,
    env: { ...process.env, RATCHET_SECRETS_DIR: path.join(dir, 'secrets'), COMPOSE_PROJECT_NAME: 'ratchet-config-test' },
  });
}

function envValue(text: string, key: string): string {
  const line = text.split('\n').find((candidate) => candidate.startsWith(`${key}=`));
  if (line === undefined) throw new Error(`${key} is not in the env file`);
  return line.slice(key.length + 1);
}

/** Host address and port of each published port, from either form `config` prints. */
function published(service: ComposeService): { hostIp: string; port: string }[] {
  return (service.ports ?? []).map((port) => {
    if (typeof port === 'string') {
      const parts = port.split(':');
      return parts.length === 3 ? { hostIp: parts[0]!, port: parts[1]! } : { hostIp: '', port: parts[0]! };
    }
    return { hostIp: port.host_ip ?? '', port: String(port.published ?? '') };
  });
}

beforeAll(async () => {
  compose = await composeCommand();
  dir = await mkdtemp(path.join(tmpdir(), 'ratchet-compose-config-'));
  envFile = path.join(dir, '.env');
  const init = await runCommand('bash', ['deploy/compose/init.sh'], { cwd: repoRoot, env: { ...process.env, RATCHET_ENV_FILE: envFile, RATCHET_SECRETS_DIR: path.join(dir, 'secrets') } });
  if (init.code !== 0) throw new Error(`init.sh failed:\n${init.stderr}`);
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('docker-compose.yml', () => {
  it('validates, and runs every service as the hardened image with its own NATS user', async () => {
    const result = await config(['docker-compose.yml']);
    expect(result.stderr).not.toMatch(/error/i);
    expect(result.code).toBe(0);
    const model = parse(result.stdout) as ComposeModel;
    expect(Object.keys(model.services).sort()).toEqual([...ratchetServices, 'web', 'nats', 'postgres', 'qdrant', 'otel-collector', 'tempo', 'prometheus', 'grafana'].sort());

    const env = await readFile(envFile, 'utf8');
    for (const name of ratchetServices) {
      const service = model.services[name]!;
      expect(service).toMatchObject({ user: '10001:10001', read_only: true, cap_drop: ['ALL'] });
      expect(service.environment).toMatchObject({
        RATCHET_BUS_NATS_USER: name,
        RATCHET_BUS_NATS_PASSWORD: envValue(env, `RATCHET_NATS_PASSWORD_${name.toUpperCase().replace(/-/g, '_')}`),
        RATCHET_BUS_NATS_TLS_CA_FILE: '/run/secrets/ratchet/ca.crt',
        RATCHET_TELEMETRY_METRICS_TOKEN: envValue(env, 'RATCHET_METRICS_TOKEN'),
      });
    }
    expect(model.services['memory']!.environment).toMatchObject({ RATCHET_MEMORY_VECTORS: 'qdrant', RATCHET_MEMORY_QDRANT_URL: 'http://qdrant:6333' });
    expect(model.services['orchestrator']!.environment).toMatchObject({ RATCHET_GRPC_CERT_FILE: '/run/secrets/ratchet/grpc.crt', RATCHET_GRPC_TOKENS: envValue(env, 'RATCHET_GRPC_TOKENS') });
    // The dashboard: the same hardened image, no NATS credentials, the orchestrator over TLS, metrics behind the token.
    const web = model.services['web']!;
    expect(web).toMatchObject({ user: '10001:10001', read_only: true, cap_drop: ['ALL'] });
    expect(web.environment).toMatchObject({
      RATCHET_WEB_ORCHESTRATOR_ADDRESS: 'orchestrator:50051',
      RATCHET_WEB_ORCHESTRATOR_CA_FILE: '/run/secrets/ratchet/ca.crt',
      RATCHET_TELEMETRY_METRICS_TOKEN: envValue(env, 'RATCHET_METRICS_TOKEN'),
      RATCHET_WEB_TRACE_URL_TEMPLATE: expect.stringMatching(/^http:\/\/localhost:3000\/d\/ratchet-tasks\/ratchet-tasks\?var-task_id=\{taskId\}&var-trace_id=\{traceId\}$/),
    });
    // Opened as localhost (its port is published on loopback), which it always answers to; a proxy's name is set in .env.
    expect(web.environment?.['RATCHET_WEB_ALLOWED_HOSTS'] ?? '').toBe('');
    expect(Object.keys(web.environment ?? {}).filter((key) => key.startsWith('RATCHET_BUS_'))).toEqual([]);

    // nats-server gets a password for every user of the shipped authorization.
    const authorization = await readFile(path.join(repoRoot, 'deploy/nats/authorization.conf'), 'utf8');
    const users = [...authorization.matchAll(/^\s*user: "([^"]+)"$/gm)].map((match) => match[1]!);
    expect(users.length).toBeGreaterThanOrEqual(ratchetServices.length);
    for (const user of users) expect(model.services['nats']!.environment?.[`RATCHET_NATS_PASSWORD_${user.toUpperCase().replace(/-/g, '_')}`]).toMatch(/^r[0-9a-f]{48}$/);
  });

  it('publishes only what authenticates beyond loopback: gRPC (TLS and token) and Grafana (password); Prometheus and the plain-HTTP dashboard on 127.0.0.1', async () => {
    const model = parse((await config(['docker-compose.yml'])).stdout) as ComposeModel;
    const exposed = Object.entries(model.services).flatMap(([name, service]) => published(service).map((port) => ({ name, ...port })));
    expect(exposed.map(({ name }) => name).sort()).toEqual(['grafana', 'orchestrator', 'prometheus', 'web']);
    expect(exposed.find(({ name }) => name === 'prometheus')?.hostIp).toBe('127.0.0.1');
    expect(exposed.find(({ name }) => name === 'web')).toEqual({ name: 'web', hostIp: '127.0.0.1', port: '8080' });
  });

  it('names the missing secret and what to do when .env lacks one', async () => {
    const env = await readFile(envFile, 'utf8');
    const broken = path.join(dir, 'broken.env');
    await writeFile(broken, env.replace(/^RATCHET_METRICS_TOKEN=.*$/m, 'RATCHET_METRICS_TOKEN='));
    const result = await config(['docker-compose.yml'], broken);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(/RATCHET_METRICS_TOKEN/);
    expect(result.stderr).toMatch(/set it in \.env \(deploy\/compose\/init\.sh makes one\)/);
  });
});

describe('deploy/compose/offline.yml', () => {
  it('runs the offline images, keeps vectors in embedded PGlite and leaves Qdrant, Tempo, Grafana and the Collector to a profile', async () => {
    const result = await config(['docker-compose.yml', 'deploy/compose/offline.yml']);
    expect(result.code).toBe(0);
    const model = parse(result.stdout) as ComposeModel;
    expect(model.services['nats']!.image).toBe('ratchet-nats:2.9');
    expect(model.services['postgres']!.image).toBe('ratchet-postgres:15');
    expect(model.services['prometheus']!.image).toBe('ratchet-prometheus:2.42');
    for (const name of ['qdrant', 'tempo', 'grafana', 'otel-collector']) expect(model.services[name]!.profiles).toEqual(['online']);
    expect(model.services['memory']!.environment).toMatchObject({ RATCHET_MEMORY_VECTORS: 'pglite', RATCHET_MEMORY_VECTOR_DATA_DIR: '/data/memory-vectors' });
    for (const name of [...ratchetServices, 'web']) expect(model.services[name]!.environment).toMatchObject({ OTEL_TRACES_EXPORTER: 'none' });
    // No Grafana offline: the dashboard links no traces.
    expect(model.services['web']!.environment?.['RATCHET_WEB_TRACE_URL_TEMPLATE']).toBe('');
  });
});
