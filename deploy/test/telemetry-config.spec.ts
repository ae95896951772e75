import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';

// The trace path's configuration: services -> OpenTelemetry Collector ->
// Tempo -> Grafana. Neither the Collector nor Tempo runs on a build machine,
// so this checks what can go wrong without them: every file parses, uses only
// keys its program knows, every pipeline names components that are defined,
// and the addresses each file sends to are the ones the next one listens on.

const repoRoot = path.resolve(__dirname, '..', '..');
const read = (file: string): string => readFileSync(path.join(repoRoot, file), 'utf8');
const yamlOf = (file: string) => parse(read(file)) as Record<string, unknown>;

type Tree = Record<string, unknown>;
/** The value at a dotted path, or undefined. */
function at(tree: unknown, keyPath: string): unknown {
  return keyPath.split('.').reduce<unknown>((node, key) => (node !== null && typeof node === 'object' ? (node as Tree)[key] : undefined), tree);
}
/** The port of `host:port` or a URL. */
function portOf(address: unknown): number {
  const text = String(address);
  const url = /^[a-z]+:\/\//.test(text) ? new URL(text) : new URL(`tcp://${text}`);
  return Number(url.port);
}
function hostOf(address: unknown): string {
  const text = String(address);
  return (/^[a-z]+:\/\//.test(text) ? new URL(text) : new URL(`tcp://${text}`)).hostname;
}
/** A component id's type: `otlp/tempo` -> `otlp`. */
const typeOf = (id: string): string => id.split('/')[0] as string;

const collector = yamlOf('deploy/otel/collector.yaml');
const tempo = yamlOf('deploy/tempo/tempo.yaml');
const datasources = (yamlOf('deploy/grafana/provisioning/datasources/ratchet.yaml')['datasources'] ?? []) as Tree[];
const dashboard = JSON.parse(read('deploy/grafana/dashboards/tasks.json')) as Tree;
const compose = yamlOf('docker-compose.yml');

/** The span attribute the orchestrator's SubmitTask span carries (services/orchestrator/src/handlers/submit-task.ts; deploy/test/traces.spec.ts checks it end to end). */
const TASK_ID_ATTRIBUTE = 'ratchet.task_id';

describe('the OpenTelemetry Collector config', () => {
  const pipelines = at(collector, 'service.pipelines') as Record<string, { receivers?: string[]; processors?: string[]; exporters?: string[] }>;

  it('has only the sections the Collector knows', () => {
    expect(Object.keys(collector).every((key) => ['receivers', 'processors', 'exporters', 'extensions', 'connectors', 'service'].includes(key))).toBe(true);
    expect(Object.keys(pipelines)).toEqual(['traces']);
  });

  it('runs pipelines made only of defined receivers, processors and exporters, each one used', () => {
    for (const kind of ['receivers', 'processors', 'exporters'] as const) {
      const defined = Object.keys((collector[kind] ?? {}) as Tree);
      const used = Object.values(pipelines).flatMap((pipeline) => pipeline[kind] ?? []);
      expect(used.length).toBeGreaterThan(0);
      for (const id of used) expect(defined).toContain(id);
      for (const id of defined) expect(used).toContain(id);
    }
    const extensions = (at(collector, 'service.extensions') ?? []) as string[];
    expect(extensions).toContain('health_check');
    for (const id of extensions) expect(Object.keys(collector['extensions'] as Tree)).toContain(id);
  });

  it('limits memory before anything else, batches, and sends to Tempo', () => {
    const traces = pipelines['traces']!;
    expect(traces.processors?.map(typeOf)).toEqual(['memory_limiter', 'batch']);
    expect(at(collector, 'processors.memory_limiter.check_interval')).toBeDefined();
    expect(traces.receivers?.map(typeOf)).toEqual(['otlp']);
    expect(traces.exporters?.map(typeOf)).toEqual(['otlp']);
  });

  it('listens where the services send, and sends where Tempo listens', () => {
    // The services' OTLP/HTTP endpoint (docker-compose.yml) is the Collector's HTTP receiver, under the Collector's service name.
    const serviceEndpoint = at(compose, 'x-ratchet-env.OTEL_EXPORTER_OTLP_ENDPOINT');
    expect(Object.keys(compose['services'] as Tree)).toContain(hostOf(serviceEndpoint));
    expect(portOf(serviceEndpoint)).toBe(portOf(at(collector, 'receivers.otlp.protocols.http.endpoint')));
    expect(portOf(at(collector, 'receivers.otlp.protocols.grpc.endpoint'))).toBe(4317);
    // Bound beyond localhost: the senders are other containers.
    expect(hostOf(at(collector, 'receivers.otlp.protocols.http.endpoint'))).toBe('0.0.0.0');

    const exporter = Object.entries(collector['exporters'] as Record<string, Tree>).find(([id]) => typeOf(id) === 'otlp')![1];
    expect(hostOf(exporter['endpoint'])).toBe('tempo');
    expect(Object.keys(compose['services'] as Tree)).toContain('tempo');
    expect(portOf(exporter['endpoint'])).toBe(portOf(at(tempo, 'distributor.receivers.otlp.protocols.grpc.endpoint')));
    // Plaintext inside the compose or cluster network.
    expect(at(exporter, 'tls.insecure')).toBe(true);
    expect(hostOf(at(collector, 'extensions.health_check.endpoint'))).toBe('0.0.0.0');
  });
});

describe('the Tempo config', () => {
  it('has only blocks that Tempo 2.6 and 3.x both accept', () => {
    const known = ['target', 'stream_over_http_enabled', 'http_api_prefix', 'server', 'internal_server', 'distributor', 'querier', 'query_frontend', 'metrics_generator', 'storage', 'overrides', 'memberlist', 'usage_report', 'cache'];
    expect(Object.keys(tempo).filter((key) => !known.includes(key))).toEqual([]);
    // Tempo 3.0 refuses these (its monolithic mode replaced them); 2.x runs them with defaults when absent.
    for (const removed of ['ingester', 'compactor', 'ingester_client', 'metrics_generator_client']) expect(tempo).not.toHaveProperty(removed);
  });

  it('takes OTLP on all interfaces, keeps traces on its volume for a bounded time, and reports nowhere', () => {
    expect(hostOf(at(tempo, 'distributor.receivers.otlp.protocols.grpc.endpoint'))).toBe('0.0.0.0');
    expect(at(tempo, 'storage.trace.backend')).toBe('local');
    for (const keyPath of ['storage.trace.wal.path', 'storage.trace.local.path', 'metrics_generator.storage.path']) expect(String(at(tempo, keyPath))).toMatch(/^\/var\/tempo\//);
    expect(String(at(tempo, 'overrides.defaults.compaction.block_retention'))).toMatch(/^\d+h$/);
    expect(at(tempo, 'usage_report.reporting_enabled')).toBe(false);
  });

  it('writes its span metrics to the Prometheus that Grafana reads', () => {
    const prometheus = datasources.find((source) => source['uid'] === 'prometheus')!;
    const [remoteWrite] = at(tempo, 'metrics_generator.storage.remote_write') as { url: string }[];
    expect(new URL(remoteWrite!.url).host).toBe(new URL(String(prometheus['url'])).host);
    expect(new URL(remoteWrite!.url).pathname).toBe('/api/v1/write');
    expect(at(tempo, 'overrides.defaults.metrics_generator.processors')).toEqual(expect.arrayContaining(['service-graphs', 'span-metrics']));
  });
});

describe('the Grafana datasources and the tasks dashboard', () => {
  const uids = datasources.map((source) => source['uid']);

  it('defines Prometheus and Tempo at the addresses they serve on', () => {
    expect(datasources.map((source) => [source['type'], source['uid']])).toEqual([
      ['prometheus', 'prometheus'],
      ['tempo', 'tempo'],
    ]);
    const tempoSource = datasources.find((source) => source['uid'] === 'tempo')!;
    expect(hostOf(tempoSource['url'])).toBe('tempo');
    expect(portOf(tempoSource['url'])).toBe(at(tempo, 'server.http_listen_port'));
    expect(Object.keys(compose['services'] as Tree)).toEqual(expect.arrayContaining(['prometheus', 'grafana']));
  });

  it('links between datasources only by uids that exist', () => {
    const tempoSource = datasources.find((source) => source['uid'] === 'tempo')!;
    for (const keyPath of ['jsonData.tracesToMetrics.datasourceUid', 'jsonData.serviceMap.datasourceUid']) expect(uids).toContain(at(tempoSource, keyPath));
    const prometheus = datasources.find((source) => source['uid'] === 'prometheus')!;
    for (const destination of at(prometheus, 'jsonData.exemplarTraceIdDestinations') as Tree[]) expect(uids).toContain(destination['datasourceUid']);
  });

  it('lists tasks by the attribute the orchestrator sets, each linked to its trace', () => {
    const panels = dashboard['panels'] as Tree[];
    const variables = (at(dashboard, 'templating.list') as Tree[]).map((variable) => variable['name']);
    for (const panel of panels) {
      expect(uids).toContain(at(panel, 'datasource.uid'));
      for (const target of panel['targets'] as Tree[]) {
        expect(uids).toContain(at(target, 'datasource.uid'));
        // Every variable a query uses is defined.
        for (const [, name] of String(target['query']).matchAll(/\$\{?(\w+)/g)) expect(variables).toContain(name);
      }
    }
    const [tasks] = panels;
    const query = String(at(tasks, 'targets.0.query'));
    expect(query).toContain(`span.${TASK_ID_ATTRIBUTE}`);
    expect(query).toContain('resource.service.name = "orchestrator"');
    expect(query).toContain('kind = server');
    // The task id column links to this dashboard with that task's trace.
    const overrides = at(tasks, 'fieldConfig.overrides') as { matcher: { id: string; options: string }; properties: { id: string; value: unknown }[] }[];
    const taskColumn = overrides.find((override) => new RegExp(override.matcher.options).test(TASK_ID_ATTRIBUTE))!;
    const [link] = taskColumn.properties.find((property) => property.id === 'links')!.value as { url: string }[];
    expect(link!.url).toMatch(new RegExp(`^/d/${String(dashboard['uid'])}/`));
    expect(link!.url).toContain('var-trace_id=${__data.fields.traceIdHidden}');
    // And the trace panel shows the trace of the variable the link sets.
    const tracePanel = panels.find((panel) => panel['type'] === 'traces')!;
    expect(at(tracePanel, 'targets.0.query')).toBe('${trace_id}');
  });
});
