import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { SANDBOX_JOB_QUEUE, SANDBOX_JOB_QUEUE_DEFAULTS } from '@ratchet/agent';
import { busRoles, inboxPrefixOf, NatsTransport, natsPasswordVariable, type BusRoleName } from '@ratchet/bus';
import { startNatsServer, type NatsServerFixture } from '@ratchet/testing';

// Renders every overlay of k8s/ with `kubectl kustomize`, validates each object
// against the Kubernetes (and KEDA) schemas of kubernetes-models, and checks
// what the manifests promise: restricted pods, limits and probes everywhere,
// secrets referenced and never shipped, the runners' isolation, KEDA scaling
// on the real job queue, default-deny networking.

jest.setTimeout(60_000);

const repoRoot = path.resolve(__dirname, '..', '..');
const k8sDir = path.join(repoRoot, 'k8s');
const overlays = ['dev', 'prod'] as const;
type Overlay = (typeof overlays)[number];

/** The processes of the one image, `ratchet:0.1.0 <service>`. */
const services = ['orchestrator', 'planner', 'coder', 'tester', 'reflector', 'safety', 'memory', 'sandbox-runner'] as const;
const modelRoles = ['planner', 'coder', 'tester', 'reflector'];
const autoscaled = ['planner', 'coder', 'tester', 'reflector', 'safety', 'memory'];
const namespaces = { services: 'ratchet', sandbox: 'ratchet-sandbox' } as const;
const namespaceOf = (service: string) => (service === 'sandbox-runner' ? namespaces.sandbox : namespaces.services);

interface Metadata {
  name: string;
  namespace?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}
interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: Metadata;
  [field: string]: unknown;
}
interface SecurityContext {
  runAsNonRoot?: boolean;
  runAsUser?: number;
  privileged?: boolean;
  allowPrivilegeEscalation?: boolean;
  readOnlyRootFilesystem?: boolean;
  procMount?: string;
  capabilities?: { add?: string[]; drop?: string[] };
  seccompProfile?: { type?: string };
  appArmorProfile?: { type?: string };
  seLinuxOptions?: { type?: string; user?: string; role?: string };
  windowsOptions?: { hostProcess?: boolean };
}
interface PodSecurityContext extends SecurityContext {
  sysctls?: { name: string }[];
}
interface Probe {
  httpGet?: { path?: string; port?: number | string };
  exec?: { command?: string[] };
}
interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { secretKeyRef?: { name: string; key: string; optional?: boolean }; configMapKeyRef?: { name: string; key: string } };
}
interface Container {
  name: string;
  image: string;
  command?: string[];
  args?: string[];
  ports?: { name?: string; containerPort: number; hostPort?: number }[];
  env?: EnvVar[];
  envFrom?: { configMapRef?: { name: string }; secretRef?: { name: string } }[];
  securityContext?: SecurityContext;
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  startupProbe?: Probe;
  livenessProbe?: Probe;
  readinessProbe?: Probe;
  volumeMounts?: { name: string; mountPath: string; readOnly?: boolean }[];
}
interface Volume {
  name: string;
  emptyDir?: { medium?: string; sizeLimit?: string };
  secret?: { secretName: string; items?: { key: string }[] };
  configMap?: { name: string };
  [source: string]: unknown;
}
interface PodSpec {
  containers: Container[];
  initContainers?: Container[];
  ephemeralContainers?: Container[];
  volumes?: Volume[];
  securityContext?: PodSecurityContext;
  hostNetwork?: boolean;
  hostPID?: boolean;
  hostIPC?: boolean;
  hostUsers?: boolean;
  runtimeClassName?: string;
  serviceAccountName?: string;
  automountServiceAccountToken?: boolean;
}
interface Workload extends Manifest {
  spec: {
    replicas?: number;
    serviceName?: string;
    selector: { matchLabels: Record<string, string> };
    template: { metadata: Metadata; spec: PodSpec };
    volumeClaimTemplates?: { metadata: { name: string } }[];
  };
}
interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: { key: string; operator: string; values?: string[] }[];
}
interface PolicyPeer {
  ipBlock?: { cidr: string };
  namespaceSelector?: LabelSelector;
  podSelector?: LabelSelector;
}
interface PolicyRule {
  ports?: { protocol?: string; port?: number }[];
  to?: PolicyPeer[];
  from?: PolicyPeer[];
}
interface NetworkPolicy extends Manifest {
  spec: { podSelector: LabelSelector; policyTypes: string[]; ingress?: PolicyRule[]; egress?: PolicyRule[] };
}

/**
 * `kubectl kustomize` of k8s/overlays/<overlay>, as a list of objects.
 *
 * @throws Error saying how to install kubectl when it is missing or its kustomize is older than v5.
 */
function render(overlay: Overlay): Manifest[] {
  const version = spawnSync('kubectl', ['version', '--client', '-o', 'json'], { encoding: 'utf8' });
  if (version.error !== undefined) {
    throw new Error(
      `kubectl is needed to render k8s/ (${version.error.message}): install kubectl 1.27 or later, e.g. \`source tools/setup.sh --for-tests\` or the kubectl package of the Kubernetes apt repository (pkgs.k8s.io); Debian's kubernetes-client 1.20 bundles a kustomize too old for these manifests`,
    );
  }
  const kustomize = (JSON.parse(version.stdout) as { kustomizeVersion?: string }).kustomizeVersion ?? 'none';
  if (!/^v([5-9]|\d{2,})\./.test(kustomize)) {
    throw new Error(`kubectl bundles kustomize ${kustomize}; k8s/ needs kustomize v5 (kubectl 1.27 or later): install a newer kubectl from the Kubernetes apt repository (pkgs.k8s.io)`);
  }
  const rendered = spawnSync('kubectl', ['kustomize', path.join(k8sDir, 'overlays', overlay)], { encoding: 'utf8', maxBuffer: 64 << 20 });
  if (rendered.status !== 0) throw new Error(`kubectl kustomize k8s/overlays/${overlay} failed:\n${rendered.stderr}`);
  return parseAllDocuments(rendered.stdout).map((document) => {
    if (document.errors.length > 0) throw new Error(`k8s/overlays/${overlay} renders invalid YAML: ${document.errors[0]!.message}`);
    return document.toJS() as Manifest;
  });
}

/** Jest runs this file as CommonJS; the model packages are ES modules only, so they are loaded by the runtime's own `import()`. */
const importModule = new Function('specifier', 'return import(specifier)') as (specifier: string) => Promise<Record<string, unknown>>;

interface ModelClass {
  apiVersion: string;
  kind: string;
  new (data: unknown): { validate(): void };
}

/** The kubernetes-models (or @kubernetes-models/keda) module holding `apiVersion`'s classes. */
function modelModule(apiVersion: string): string {
  const [group, version] = apiVersion.includes('/') ? (apiVersion.split('/') as [string, string]) : ['', apiVersion];
  if (group === 'keda.sh') return `@kubernetes-models/keda/keda.sh/${version}`;
  return group === '' ? `kubernetes-models/${version}` : `kubernetes-models/${group}/${version}`;
}

/** The schema class of `object`'s apiVersion and kind, or a message saying there is none. */
async function modelOf(object: Manifest): Promise<ModelClass | string> {
  const module = await importModule(modelModule(object.apiVersion)).catch(() => undefined);
  const model = module?.[object.kind] as ModelClass | undefined;
  if (model === undefined || model.apiVersion !== object.apiVersion || model.kind !== object.kind) return `${object.apiVersion} ${object.kind} ${object.metadata.name}: no schema for this kind`;
  return model;
}

const named = (objects: Manifest[], kind: string, name: string, namespace?: string) =>
  objects.find((object) => object.kind === kind && object.metadata.name === name && (namespace === undefined || object.metadata.namespace === namespace));
const workloads = (objects: Manifest[]) => objects.filter((object): object is Workload => object.kind === 'Deployment' || object.kind === 'StatefulSet');
/** The data of ConfigMap `name` (its generated name, with the hash) in `namespace`. */
const configMapData = (objects: Manifest[], name: string, namespace: string) => {
  const found = named(objects, 'ConfigMap', name, namespace) as (Manifest & { data: Record<string, string> }) | undefined;
  if (found === undefined) throw new Error(`no ConfigMap ${name} in namespace ${namespace}`);
  return found.data;
};
const deployment = (objects: Manifest[], service: string) => {
  const found = named(objects, 'Deployment', service, namespaceOf(service));
  if (found === undefined) throw new Error(`no Deployment ${service} in namespace ${namespaceOf(service)}`);
  return found as Workload;
};
const allContainers = (pod: PodSpec) => [...(pod.initContainers ?? []), ...pod.containers, ...(pod.ephemeralContainers ?? [])];
const namespaceLabels = (objects: Manifest[], namespace: string) => named(objects, 'Namespace', namespace)?.metadata.labels ?? {};

const restrictedVolumeTypes = new Set(['configMap', 'csi', 'downwardAPI', 'emptyDir', 'ephemeral', 'persistentVolumeClaim', 'projected', 'secret']);
const allowedSeLinuxTypes = new Set(['', 'container_t', 'container_init_t', 'container_kvm_t', 'container_engine_t']);

/**
 * What keeps `pod` from passing the "restricted" Pod Security Standard (which
 * includes "baseline"), one message per violation; empty when it passes.
 * Follows the controls of the standard's latest version, field by field.
 */
function restrictedViolations(pod: PodSpec, annotations: Record<string, string> = {}): string[] {
  const violations: string[] = [];
  const podContext = pod.securityContext ?? {};
  if (pod.hostNetwork || pod.hostPID || pod.hostIPC) violations.push('pod: shares a host namespace');
  if ((podContext.sysctls ?? []).length > 0) violations.push('pod: sets sysctls');
  if (podContext.runAsUser === 0) violations.push('pod: runAsUser 0');
  if (podContext.seccompProfile?.type === 'Unconfined') violations.push('pod: seccomp Unconfined');
  if (podContext.appArmorProfile?.type === 'Unconfined') violations.push('pod: AppArmor Unconfined');
  if (podContext.windowsOptions?.hostProcess) violations.push('pod: hostProcess');
  const seLinux = [podContext.seLinuxOptions, ...allContainers(pod).map((container) => container.securityContext?.seLinuxOptions)];
  if (seLinux.some((options) => options !== undefined && (!allowedSeLinuxTypes.has(options.type ?? '') || options.user !== undefined || options.role !== undefined))) violations.push('pod: custom SELinux options');
  for (const [key, value] of Object.entries(annotations)) {
    if (key.startsWith('container.apparmor.security.beta.kubernetes.io/') && value !== 'runtime/default' && !value.startsWith('localhost/')) violations.push(`pod: AppArmor annotation ${value}`);
  }
  for (const volume of pod.volumes ?? []) {
    const types = Object.keys(volume).filter((key) => key !== 'name');
    if (!types.every((type) => restrictedVolumeTypes.has(type))) violations.push(`volume ${volume.name}: type ${types.join(', ')}`);
  }
  for (const container of allContainers(pod)) {
    const context = container.securityContext ?? {};
    const where = `container ${container.name}`;
    if (context.privileged) violations.push(`${where}: privileged`);
    if (context.windowsOptions?.hostProcess) violations.push(`${where}: hostProcess`);
    if (context.allowPrivilegeEscalation !== false) violations.push(`${where}: allowPrivilegeEscalation is not false`);
    if (!(context.capabilities?.drop ?? []).includes('ALL')) violations.push(`${where}: does not drop ALL capabilities`);
    if ((context.capabilities?.add ?? []).some((capability) => capability !== 'NET_BIND_SERVICE')) violations.push(`${where}: adds capabilities`);
    if (context.procMount !== undefined && context.procMount !== 'Default') violations.push(`${where}: /proc mount type ${context.procMount}`);
    if (!(context.runAsNonRoot === true || (podContext.runAsNonRoot === true && context.runAsNonRoot !== false))) violations.push(`${where}: may run as root`);
    if (context.runAsUser === 0) violations.push(`${where}: runAsUser 0`);
    const seccomp = context.seccompProfile?.type ?? podContext.seccompProfile?.type;
    if (seccomp === 'Unconfined') violations.push(`${where}: seccomp Unconfined`);
    else if (seccomp !== 'RuntimeDefault' && seccomp !== 'Localhost') violations.push(`${where}: no seccomp profile`);
    if (context.appArmorProfile?.type === 'Unconfined') violations.push(`${where}: AppArmor Unconfined`);
    if ((container.ports ?? []).some((port) => (port.hostPort ?? 0) !== 0)) violations.push(`${where}: host port`);
  }
  return violations;
}

/** Every Secret (name, key) a workload reads, through env, envFrom or a volume. */
function secretReferences(workload: Workload): { secret: string; key?: string }[] {
  const pod = workload.spec.template.spec;
  const references: { secret: string; key?: string }[] = [];
  for (const container of allContainers(pod)) {
    for (const variable of container.env ?? []) {
      const ref = variable.valueFrom?.secretKeyRef;
      if (ref !== undefined) references.push({ secret: ref.name, key: ref.key });
    }
    for (const source of container.envFrom ?? []) if (source.secretRef !== undefined) references.push({ secret: source.secretRef.name });
  }
  for (const volume of pod.volumes ?? []) if (volume.secret !== undefined) references.push({ secret: volume.secret.secretName });
  return references;
}

function selects(selector: LabelSelector | undefined, labels: Record<string, string>): boolean {
  if (selector === undefined) return true;
  const matchesLabels = Object.entries(selector.matchLabels ?? {}).every(([key, value]) => labels[key] === value);
  const matchesExpressions = (selector.matchExpressions ?? []).every((expression) => {
    if (expression.operator === 'In') return expression.values!.includes(labels[expression.key] ?? '');
    if (expression.operator === 'NotIn') return !expression.values!.includes(labels[expression.key] ?? '');
    if (expression.operator === 'Exists') return expression.key in labels;
    if (expression.operator === 'DoesNotExist') return !(expression.key in labels);
    throw new Error(`unknown selector operator ${expression.operator}`);
  });
  return matchesLabels && matchesExpressions;
}

function describePeer(peer: PolicyPeer): string {
  if (peer.ipBlock !== undefined) return peer.ipBlock.cidr;
  const namespace = peer.namespaceSelector?.matchLabels?.['kubernetes.io/metadata.name'];
  const pods = Object.entries(peer.podSelector?.matchLabels ?? {}).map(([key, value]) => `${key}=${value}`).join(',');
  return [namespace === undefined ? '' : `namespace ${namespace}`, pods === '' ? '' : `pods ${pods}`].filter((part) => part !== '').join(' ') || 'any pod';
}

/**
 * What the NetworkPolicies let a pod with `labels` in `namespace` send
 * (`egress`) or receive (`ingress`), as "TCP/4222 192.0.2.10/32" lines;
 * a rule without peers reads "anywhere".
 */
function allowedTraffic(policies: NetworkPolicy[], namespace: string, labels: Record<string, string>, direction: 'ingress' | 'egress'): string[] {
  const lines = new Set<string>();
  for (const policy of policies) {
    if (policy.metadata.namespace !== namespace || !selects(policy.spec.podSelector, labels)) continue;
    if (!policy.spec.policyTypes.includes(direction === 'ingress' ? 'Ingress' : 'Egress')) continue;
    for (const rule of policy.spec[direction] ?? []) {
      const peers = (direction === 'ingress' ? rule.from : rule.to) ?? [];
      for (const port of rule.ports ?? [{}]) {
        const portText = `${port.protocol ?? 'TCP'}/${port.port ?? 'any'}`;
        if (peers.length === 0) lines.add(`${portText} anywhere`);
        for (const peer of peers) lines.add(`${portText} ${describePeer(peer)}`);
      }
    }
  }
  return [...lines].sort();
}

describe.each(overlays)('k8s/overlays/%s', (overlay) => {
  let objects: Manifest[];
  let readme: string;

  beforeAll(async () => {
    objects = render(overlay);
    readme = await readFile(path.join(k8sDir, 'README.md'), 'utf8');
  });

  it('validates every object against the schema of its apiVersion and kind (kubernetes-models, @kubernetes-models/keda)', async () => {
    const problems: string[] = [];
    for (const object of objects) {
      const model = await modelOf(object);
      if (typeof model === 'string') {
        problems.push(model);
        continue;
      }
      try {
        new model(object).validate();
      } catch (error) {
        problems.push(`${object.kind} ${object.metadata.namespace ?? ''}/${object.metadata.name}: ${(error as Error).message}`);
      }
    }
    expect(problems).toEqual([]);
    expect(objects.length).toBeGreaterThan(20);
  });

  it('puts every namespaced object in ratchet or ratchet-sandbox, explicitly', () => {
    const clusterScoped = new Set(['Namespace', 'RuntimeClass']);
    const misplaced = objects
      .filter((object) => !clusterScoped.has(object.kind) && object.metadata.namespace !== namespaces.services && object.metadata.namespace !== namespaces.sandbox)
      .map((object) => `${object.kind} ${object.metadata.name} in ${object.metadata.namespace ?? '(none)'}`);
    expect(misplaced).toEqual([]);
    expect(namespaceLabels(objects, namespaces.services)['pod-security.kubernetes.io/enforce']).toBe('restricted');
  });

  it('ships no Secret: every credential is a reference the README documents (name and key)', () => {
    expect(objects.filter((object) => object.kind === 'Secret').map((object) => object.metadata.name)).toEqual([]);
    const undocumented: string[] = [];
    for (const workload of workloads(objects)) {
      for (const { secret, key } of secretReferences(workload)) {
        if (!readme.includes(`\`${secret}\``)) undocumented.push(`${workload.metadata.name}: Secret ${secret}`);
        if (key !== undefined && !readme.includes(`\`${key}\``)) undocumented.push(`${workload.metadata.name}: key ${key} of Secret ${secret}`);
      }
    }
    expect(undocumented).toEqual([]);
  });

  it('gives the runners only their own credentials: their namespace holds no model, database or Qdrant secret', () => {
    const runnerSecrets = workloads(objects)
      .filter((workload) => workload.metadata.namespace === namespaces.sandbox)
      .flatMap((workload) => secretReferences(workload).map(({ secret, key }) => (key === undefined ? secret : `${secret}/${key}`)));
    expect([...new Set(runnerSecrets)].sort()).toEqual(['ratchet-metrics/token', 'ratchet-nats-ca', 'ratchet-nats-passwords/sandbox-runner']);
  });

  it('admits every pod where it runs: the namespace enforces "restricted" and the pod passes it', () => {
    const refused: string[] = [];
    for (const workload of workloads(objects)) {
      const namespace = workload.metadata.namespace!;
      if (namespaceLabels(objects, namespace)['pod-security.kubernetes.io/enforce'] !== 'restricted') continue;
      for (const violation of restrictedViolations(workload.spec.template.spec, workload.spec.template.metadata.annotations)) refused.push(`${namespace}/${workload.metadata.name}: ${violation}`);
    }
    expect(refused).toEqual([]);
  });

  it('gives every container requests and limits of CPU and memory, and every long-running one liveness and readiness probes', () => {
    const missing: string[] = [];
    for (const workload of workloads(objects)) {
      const pod = workload.spec.template.spec;
      for (const container of allContainers(pod)) {
        for (const bound of ['requests', 'limits'] as const) {
          for (const resource of ['cpu', 'memory']) if (container.resources?.[bound]?.[resource] === undefined) missing.push(`${workload.metadata.name}/${container.name}: ${bound}.${resource}`);
        }
      }
      for (const container of pod.containers) {
        if (container.livenessProbe === undefined) missing.push(`${workload.metadata.name}/${container.name}: livenessProbe`);
        if (container.readinessProbe === undefined) missing.push(`${workload.metadata.name}/${container.name}: readinessProbe`);
      }
    }
    expect(missing).toEqual([]);
  });

  it.each(services)('runs %s from the one image, hardened, with its ops port probed and scraped', (service) => {
    const workload = deployment(objects, service);
    const labels = { 'app.kubernetes.io/name': service, 'app.kubernetes.io/part-of': 'ratchet' };
    expect(workload.metadata.labels).toMatchObject({ ...labels, 'app.kubernetes.io/component': expect.any(String) });
    expect(workload.spec.selector.matchLabels).toEqual(labels);
    const template = workload.spec.template;
    expect(template.metadata.labels).toMatchObject({ ...labels, 'app.kubernetes.io/component': expect.any(String) });
    expect(template.metadata.annotations).toMatchObject({ 'prometheus.io/scrape': 'true', 'prometheus.io/port': '9464', 'prometheus.io/path': '/metrics' });

    const pod = template.spec;
    expect(pod.serviceAccountName).toBe(service);
    expect(pod.automountServiceAccountToken).toBe(false);
    expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 10001, seccompProfile: { type: 'RuntimeDefault' } });
    expect(named(objects, 'ServiceAccount', service, namespaceOf(service))).toMatchObject({ automountServiceAccountToken: false });

    const container = pod.containers.find((candidate) => candidate.name === service)!;
    expect(container).toMatchObject({ image: 'ratchet:0.1.0', args: [service] });
    expect(container.ports).toContainEqual({ name: 'ops', containerPort: 9464 });
    expect(container.securityContext).toMatchObject({ runAsUser: 10001, allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } });
    expect(container.livenessProbe?.httpGet).toEqual({ path: '/livez', port: 'ops' });
    expect(container.readinessProbe?.httpGet).toEqual({ path: '/readyz', port: 'ops' });
    const tmp = container.volumeMounts?.find((mount) => mount.mountPath === '/tmp');
    expect(pod.volumes?.find((volume) => volume.name === tmp?.name)?.emptyDir).toBeDefined();

    // Its settings: the shared ConfigMap (in its own namespace), its own NATS user and password, the metrics token.
    const configMaps = (container.envFrom ?? []).map((source) => named(objects, 'ConfigMap', source.configMapRef?.name ?? '', namespaceOf(service)));
    expect(configMaps).toHaveLength(1);
    expect(configMaps[0]).toMatchObject({
      data: { RATCHET_TELEMETRY_METRICS_PORT: '9464', RATCHET_TELEMETRY_METRICS_HOST: '0.0.0.0', OTEL_EXPORTER_OTLP_ENDPOINT: expect.stringMatching(/^http:\/\/.+:4318$/), RATCHET_BUS_NATS_TLS_CA_FILE: expect.any(String) },
    });
    const env = Object.fromEntries((container.env ?? []).map((variable) => [variable.name, variable]));
    expect(env['RATCHET_BUS_NATS_USER']?.value).toBe(service);
    expect(env['RATCHET_BUS_NATS_PASSWORD']?.valueFrom?.secretKeyRef).toEqual({ name: 'ratchet-nats-passwords', key: service });
    expect(env['RATCHET_TELEMETRY_METRICS_TOKEN']?.valueFrom?.secretKeyRef).toEqual({ name: 'ratchet-metrics', key: 'token' });
    expect(env['RATCHET_MODEL_API_KEY'] !== undefined).toBe(modelRoles.includes(service));
    expect(env['RATCHET_DATABASE_URL'] !== undefined).toBe(service === 'orchestrator' || service === 'memory');

    const budget = objects.find((object) => object.kind === 'PodDisruptionBudget' && object.metadata.namespace === namespaceOf(service) && object.metadata.name === service);
    expect(budget).toMatchObject({ spec: { maxUnavailable: 1, selector: { matchLabels: labels } } });
  });

  it('runs the dashboard from the one image, hardened, without NATS, as a TLS client of the orchestrator, behind its own Service', () => {
    const workload = deployment(objects, 'web');
    const labels = { 'app.kubernetes.io/name': 'web', 'app.kubernetes.io/part-of': 'ratchet' };
    expect(workload.spec.selector.matchLabels).toEqual(labels);
    expect(workload.spec.template.metadata.annotations).toMatchObject({ 'prometheus.io/scrape': 'true', 'prometheus.io/port': '9464' });
    const pod = workload.spec.template.spec;
    expect(pod).toMatchObject({ serviceAccountName: 'web', automountServiceAccountToken: false });
    const container = pod.containers[0]!;
    expect(container).toMatchObject({ image: 'ratchet:0.1.0', args: ['web'] });
    expect(container.ports).toEqual(expect.arrayContaining([{ name: 'http', containerPort: 8080 }, { name: 'ops', containerPort: 9464 }]));
    expect(container.securityContext).toMatchObject({ runAsUser: 10001, allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } });
    expect(container.readinessProbe?.httpGet).toEqual({ path: '/readyz', port: 'ops' });
    const env = Object.fromEntries((container.env ?? []).map((variable) => [variable.name, variable]));
    expect(env['RATCHET_WEB_ORCHESTRATOR_ADDRESS']?.value).toBe('orchestrator.ratchet.svc:50051');
    expect(env['RATCHET_WEB_ADDRESS']?.value).toBe('0.0.0.0:8080');
    const caFile = env['RATCHET_WEB_ORCHESTRATOR_CA_FILE']?.value ?? '';
    const caMount = (container.volumeMounts ?? []).find((mount) => caFile.startsWith(`${mount.mountPath}/`));
    expect(pod.volumes?.find((volume) => volume.name === caMount?.name)?.secret?.secretName).toBe('ratchet-grpc-ca');
    // It holds no credential of its own beyond the metrics token: the people's tokens come with their requests.
    expect(secretReferences(workload).map(({ secret }) => secret).sort()).toEqual(['ratchet-grpc-ca', 'ratchet-metrics']);
    expect(named(objects, 'Service', 'web', namespaces.services)).toMatchObject({ spec: { selector: { 'app.kubernetes.io/name': 'web' }, ports: [{ port: 8080, targetPort: 'http' }] } });
    expect(objects.find((object) => object.kind === 'PodDisruptionBudget' && object.metadata.name === 'web')).toMatchObject({ spec: { maxUnavailable: 1, selector: { matchLabels: labels } } });
  });

  it('exposes gRPC 50051 through the orchestrator Service only, over TLS with a users file', () => {
    const exposing = objects
      .filter((object) => object.kind === 'Service' && ((object.spec as { ports: { port: number }[] }).ports ?? []).some((port) => port.port === 50051))
      .map((object) => `${object.metadata.namespace}/${object.metadata.name}`);
    expect(exposing).toEqual([`${namespaces.services}/orchestrator`]);
    expect(named(objects, 'Service', 'orchestrator', namespaces.services)).toMatchObject({
      spec: { selector: { 'app.kubernetes.io/name': 'orchestrator' }, ports: [{ port: 50051, targetPort: 'grpc' }] },
    });
    const container = deployment(objects, 'orchestrator').spec.template.spec.containers[0]!;
    const env = Object.fromEntries((container.env ?? []).map((variable) => [variable.name, variable.value]));
    expect(env).toMatchObject({ RATCHET_GRPC_ADDRESS: '0.0.0.0:50051', RATCHET_GRPC_USERS_FILE: expect.any(String), RATCHET_GRPC_CERT_FILE: expect.any(String), RATCHET_GRPC_KEY_FILE: expect.any(String) });
    const mounted = (file: string) => (container.volumeMounts ?? []).some((mount) => file.startsWith(`${mount.mountPath}/`));
    expect([env['RATCHET_GRPC_USERS_FILE'], env['RATCHET_GRPC_CERT_FILE'], env['RATCHET_GRPC_KEY_FILE']].every((file) => mounted(file!))).toBe(true);
  });

  it('runs the sandbox runner on the root filesystem its init container copies from the sandbox image, with the bwrap driver', () => {
    const pod = deployment(objects, 'sandbox-runner').spec.template.spec;
    const [init] = pod.initContainers ?? [];
    expect(init).toMatchObject({ name: 'sandbox-rootfs', image: 'ratchet-sandbox:3' });
    const runner = pod.containers[0]!;
    const config = configMapData(objects, runner.envFrom?.[0]?.configMapRef?.name ?? '', namespaces.sandbox);
    expect(config['RATCHET_SANDBOX_DRIVER']).toBe('bwrap');
    // The root filesystem lies in the volume the init container fills and the runner mounts read-only.
    const rootfs = config['RATCHET_SANDBOX_ROOTFS']!;
    const runnerMount = runner.volumeMounts?.find((mount) => rootfs.startsWith(`${mount.mountPath}/`));
    expect(runnerMount).toMatchObject({ name: 'sandbox-rootfs', readOnly: true });
    expect(pod.volumes?.find((volume) => volume.name === 'sandbox-rootfs')?.emptyDir).toBeDefined();
    expect(init!.volumeMounts).toContainEqual({ name: 'sandbox-rootfs', mountPath: runnerMount!.mountPath });
    expect(init!.command?.join(' ')).toContain(`test -x ${rootfs}/usr/bin/python3`);
  });
});

describe('k8s/overlays/dev', () => {
  let objects: Manifest[];
  beforeAll(() => {
    objects = render('dev');
  });

  it('runs one replica of every service', () => {
    expect(Object.fromEntries(services.map((service) => [service, deployment(objects, service).spec.replicas]))).toEqual(Object.fromEntries(services.map((service) => [service, 1])));
  });

  it.each([
    ['nats', 'nats:2.10-alpine', 4222],
    ['postgres', 'pgvector/pgvector:pg16', 5432],
    ['qdrant', 'qdrant/qdrant:v1.12.4-unprivileged', 6333],
  ])('runs %s in the cluster: a StatefulSet with a volume claim template and a Service', (name, image, port) => {
    const set = named(objects, 'StatefulSet', name, namespaces.services) as Workload | undefined;
    expect(set?.spec.template.spec.containers[0]?.image).toBe(image);
    expect(set?.spec.volumeClaimTemplates?.map((claim) => claim.metadata.name)).toEqual(['data']);
    expect(set?.spec.serviceName).toBe(name);
    expect(named(objects, 'Service', name, namespaces.services)).toMatchObject({ spec: { ports: [{ port }] } });
  });

  it("configures nats-server with JetStream, TLS and deploy/nats/authorization.conf's users, passwords from the Secret", async () => {
    const set = named(objects, 'StatefulSet', 'nats', namespaces.services) as Workload;
    const pod = set.spec.template.spec;
    const configVolume = pod.volumes!.find((volume) => volume.configMap !== undefined)!;
    const config = configMapData(objects, configVolume.configMap!.name, namespaces.services);
    expect(config['authorization.conf']).toBe(await readFile(path.join(repoRoot, 'deploy', 'nats', 'authorization.conf'), 'utf8'));
    expect(config['nats.conf']).toMatch(/jetstream \{/);
    expect(config['nats.conf']).toMatch(/tls \{/);
    expect(config['nats.conf']).toMatch(/^include \.\/authorization\.conf$/m);
    const env = Object.fromEntries((pod.containers[0]!.env ?? []).map((variable) => [variable.name, variable.valueFrom?.secretKeyRef]));
    for (const role of Object.keys(busRoles)) expect(env[natsPasswordVariable(role)]).toEqual({ name: 'ratchet-nats-passwords', key: role });
  });

  it('relaxes for bubblewrap under runc exactly what it needs, in the runner namespace only', () => {
    const pod = deployment(objects, 'sandbox-runner').spec.template.spec;
    expect(pod.runtimeClassName).toBeUndefined();
    expect(pod.hostUsers).toBe(false);
    expect(restrictedViolations(pod).sort()).toEqual(['container sandbox-runner: /proc mount type Unmasked', 'container sandbox-runner: AppArmor Unconfined', 'container sandbox-runner: seccomp Unconfined']);
    expect(namespaceLabels(objects, namespaces.sandbox)).toMatchObject({ 'pod-security.kubernetes.io/enforce': 'privileged', 'pod-security.kubernetes.io/warn': 'restricted', 'pod-security.kubernetes.io/audit': 'restricted' });
    const elsewhere = workloads(objects).filter((workload) => workload.metadata.namespace !== namespaces.sandbox && restrictedViolations(workload.spec.template.spec).length > 0);
    expect(elsewhere.map((workload) => workload.metadata.name)).toEqual([]);
  });
});

describe('k8s/overlays/prod', () => {
  let objects: Manifest[];
  let policies: NetworkPolicy[];
  beforeAll(() => {
    objects = render('prod');
    policies = objects.filter((object): object is NetworkPolicy => object.kind === 'NetworkPolicy');
  });

  it('runs no NATS, Postgres or Qdrant of its own', () => {
    expect(objects.filter((object) => object.kind === 'StatefulSet' || object.kind === 'PersistentVolumeClaim')).toEqual([]);
    expect(objects.filter((object) => object.kind === 'Service').map((object) => object.metadata.name).sort()).toEqual(['orchestrator', 'web']);
  });

  it("has the dashboard answer to its ingress's name, as well as loopback (port-forward), and no other", () => {
    const container = deployment(objects, 'web').spec.template.spec.containers[0]!;
    const config = configMapData(objects, container.envFrom?.[0]?.configMapRef?.name ?? '', namespaces.services);
    const names = (config['RATCHET_WEB_ALLOWED_HOSTS'] ?? '').split(',').map((name) => name.trim()).filter((name) => name !== '');
    expect(names).toEqual(['ratchet.example.com']);
    // A bare host name (web.allowedHosts takes no scheme or path).
    for (const name of names) expect(name).toMatch(/^[a-z0-9]([a-z0-9.-]*[a-z0-9])?(:\d{1,5})?$/);
    // Nothing overrides it in the container itself.
    expect((container.env ?? []).map((variable) => variable.name)).not.toContain('RATCHET_WEB_ALLOWED_HOSTS');
  });

  it('runs two orchestrators, and leaves the others replica counts to their autoscalers', () => {
    expect(deployment(objects, 'orchestrator').spec.replicas).toBe(2);
    for (const service of [...autoscaled, 'sandbox-runner']) expect([service, deployment(objects, service).spec.replicas]).toEqual([service, undefined]);
  });

  it.each(autoscaled)('scales %s with an autoscaling/v2 HorizontalPodAutoscaler on CPU', (service) => {
    const autoscaler = named(objects, 'HorizontalPodAutoscaler', service, namespaces.services);
    expect(autoscaler).toMatchObject({
      apiVersion: 'autoscaling/v2',
      spec: {
        scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: service },
        minReplicas: expect.any(Number),
        maxReplicas: expect.any(Number),
        metrics: [{ type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: expect.any(Number) } } }],
      },
    });
  });

  it('runs the runners under gVisor with the restricted profile intact', () => {
    expect(named(objects, 'RuntimeClass', 'gvisor')).toMatchObject({ apiVersion: 'node.k8s.io/v1', handler: 'runsc' });
    const pod = deployment(objects, 'sandbox-runner').spec.template.spec;
    expect(pod.runtimeClassName).toBe('gvisor');
    expect(pod.hostUsers).toBeUndefined();
    expect(restrictedViolations(pod)).toEqual([]);
    expect(namespaceLabels(objects, namespaces.sandbox)['pod-security.kubernetes.io/enforce']).toBe('restricted');
  });

  it('scales the runners with KEDA on the lag of the sandbox job queue, never to zero', () => {
    const scaled = named(objects, 'ScaledObject', 'sandbox-runner', namespaces.sandbox) as Manifest & {
      spec: { scaleTargetRef: { name: string }; minReplicaCount: number; triggers: { type: string; metadata: Record<string, string> }[] };
    };
    expect(scaled.spec.scaleTargetRef.name).toBe('sandbox-runner');
    expect(scaled.spec.minReplicaCount).toBeGreaterThanOrEqual(1);
    expect(scaled.spec.triggers).toHaveLength(1);
    const [trigger] = scaled.spec.triggers;
    // The names are checked against what the runners really create on a real nats-server below.
    expect(trigger).toMatchObject({ type: 'nats-jetstream', metadata: { account: '$G', stream: `RATCHET_QUEUE_${SANDBOX_JOB_QUEUE}`, consumer: 'workers', natsServerMonitoringEndpoint: expect.any(String) } });
    const runnerConfig = configMapData(objects, deployment(objects, 'sandbox-runner').spec.template.spec.containers[0]!.envFrom![0]!.configMapRef!.name, namespaces.sandbox);
    // lagThreshold is jobs waiting per runner: what one runner takes at once.
    expect(trigger!.metadata['lagThreshold']).toBe(runnerConfig['RATCHET_RUNNER_CONCURRENCY']);
  });

  it('denies all traffic by default in both namespaces', () => {
    for (const namespace of Object.values(namespaces)) {
      const denyAll = policies.filter(
        (policy) => policy.metadata.namespace === namespace && Object.keys(policy.spec.podSelector).length === 0 && policy.spec.policyTypes.includes('Ingress') && policy.spec.policyTypes.includes('Egress') && policy.spec.ingress === undefined && policy.spec.egress === undefined,
      );
      expect([namespace, denyAll.length]).toEqual([namespace, 1]);
    }
  });

  it('lets each service send only what it needs: DNS and NATS for all, Postgres, Qdrant, the model and the Collector for their users, the package registries for runners', () => {
    const dns = ['TCP/53 namespace kube-system pods k8s-app=kube-dns', 'UDP/53 namespace kube-system pods k8s-app=kube-dns'];
    const nats = 'TCP/4222 192.0.2.10/32';
    const collector = ['TCP/4317 namespace monitoring', 'TCP/4318 namespace monitoring'];
    const expected: Record<string, string[]> = {
      orchestrator: [...dns, nats, 'TCP/5432 192.0.2.20/32', ...collector],
      memory: [...dns, nats, 'TCP/5432 192.0.2.20/32', 'TCP/6333 192.0.2.30/32', ...collector],
      planner: [...dns, nats, 'TCP/443 198.51.100.0/24', ...collector],
      coder: [...dns, nats, 'TCP/443 198.51.100.0/24', ...collector],
      tester: [...dns, nats, 'TCP/443 198.51.100.0/24', ...collector],
      reflector: [...dns, nats, 'TCP/443 198.51.100.0/24', ...collector],
      safety: [...dns, nats, ...collector],
      'sandbox-runner': [...dns, nats, 'TCP/443 203.0.113.0/24'],
    };
    for (const service of services) {
      const labels = deployment(objects, service).spec.template.metadata.labels!;
      expect([service, allowedTraffic(policies, namespaceOf(service), labels, 'egress')]).toEqual([service, [...expected[service]!].sort()]);
    }
    // The dashboard: the orchestrator's gRPC port, no NATS.
    const web = deployment(objects, 'web').spec.template.metadata.labels!;
    expect(allowedTraffic(policies, namespaces.services, web, 'egress')).toEqual([...dns, 'TCP/50051 pods app.kubernetes.io/name=orchestrator', ...collector].sort());
  });

  it("lets in only clients on the orchestrator's gRPC port and the dashboard's HTTP port, and Prometheus from the monitoring namespace on the ops ports", () => {
    for (const service of [...services, 'web']) {
      const labels = deployment(objects, service).spec.template.metadata.labels!;
      const expected = ['TCP/9464 namespace monitoring', ...(service === 'orchestrator' ? ['TCP/50051 anywhere'] : service === 'web' ? ['TCP/8080 anywhere'] : [])].sort();
      expect([service, allowedTraffic(policies, namespaceOf(service), labels, 'ingress')]).toEqual([service, expected]);
    }
  });
});

describe("the dev overlay's nats-server config on a real nats-server, read as KEDA reads it", () => {
  const roles = Object.keys(busRoles) as BusRoleName[];
  // nats-server reads a variable's value as a config value: start with a letter so it stays a string.
  const passwords = Object.fromEntries(roles.map((role) => [role, `p${randomBytes(16).toString('hex')}`])) as Record<BusRoleName, string>;
  let scratch: string;
  let server: NatsServerFixture | undefined;
  const open: NatsTransport[] = [];

  /** A CA and a server certificate for this host (nats.js checks 127.0.0.1 as localhost), as the README's openssl commands make them for nats.ratchet.svc. */
  const makeCertificates = async (directory: string) => {
    const openssl = (args: string[]) => {
      const run = spawnSync('openssl', args, { cwd: directory, encoding: 'utf8' });
      if (run.error !== undefined || run.status !== 0) throw new Error(`openssl ${args[0]} failed (apt-get install openssl): ${run.error?.message ?? run.stderr}`);
    };
    const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
    openssl(['req', '-x509', ...ec, '-keyout', 'ca.key', '-out', 'ca.crt', '-subj', '/CN=ratchet-test-ca', '-days', '1']);
    openssl(['req', ...ec, '-keyout', 'tls.key', '-out', 'tls.csr', '-subj', '/CN=nats']);
    await writeFile(path.join(directory, 'san.cnf'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n');
    openssl(['x509', '-req', '-in', 'tls.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'tls.crt', '-days', '1', '-extfile', 'san.cnf']);
  };

  beforeAll(async () => {
    scratch = await mkdtemp(path.join(os.tmpdir(), 'ratchet-k8s-'));
    await makeCertificates(scratch);
    const objects = render('dev');
    const natsConfig = objects.find((object) => object.kind === 'ConfigMap' && object.metadata.name.startsWith('nats-config'));
    const configMap = { data: configMapData(objects, natsConfig?.metadata.name ?? 'nats-config', namespaces.services) };
    // The pod's mounts are directories of scratch here: the TLS Secret (/etc/nats/tls) and the
    // volume (/data). The fixture writes the config to a directory of its own, so the include is
    // resolved in place, and JetStream is the config's own (the fixture's -js would clash with it).
    const config = configMap.data['nats.conf']!
      .replaceAll('/etc/nats/tls/', `${scratch}/`)
      .replace('store_dir: /data', `store_dir: "${path.join(scratch, 'data')}"`)
      .replace('include ./authorization.conf', configMap.data['authorization.conf']!);
    expect(config).not.toMatch(/\/etc\/nats|\/data\n|include/);
    server = await startNatsServer({ config, jetstream: false, env: Object.fromEntries(roles.map((role) => [natsPasswordVariable(role), passwords[role]])) });
  });

  afterAll(async () => {
    await Promise.all(open.map((transport) => transport.close()));
    await server?.stop();
    if (scratch !== undefined) await rm(scratch, { recursive: true, force: true });
  });

  const as = async (role: BusRoleName) => {
    const transport = await NatsTransport.connect({
      url: server!.url,
      name: `k8s-${role}`,
      credentials: { user: role, password: passwords[role] },
      inboxPrefix: inboxPrefixOf(role),
      tls: { caFile: path.join(scratch, 'ca.crt') },
    });
    open.push(transport);
    return transport;
  };

  it('finds, under the ScaledObject\'s account, stream and consumer, the jobs the tester queued and no runner took', async () => {
    const scaled = named(render('prod'), 'ScaledObject', 'sandbox-runner', namespaces.sandbox) as Manifest & { spec: { triggers: { metadata: Record<string, string> }[] } };
    const { account, stream, consumer } = scaled.spec.triggers[0]!.metadata as { account: string; stream: string; consumer: string };

    // The orchestrator creates the streams and the queue's consumer as it does at start; the runner checks them
    // as it does at start; all over TLS, each as its own user.
    const [orchestrator, runner, tester] = await Promise.all([as('orchestrator'), as('sandbox-runner'), as('tester')]);
    await orchestrator.provision({ [SANDBOX_JOB_QUEUE]: SANDBOX_JOB_QUEUE_DEFAULTS });
    await runner.ensureWorkQueue(SANDBOX_JOB_QUEUE, SANDBOX_JOB_QUEUE_DEFAULTS);
    for (const id of ['job-1', 'job-2', 'job-3']) await tester.enqueue(SANDBOX_JOB_QUEUE, Buffer.from(id), { id });

    // KEDA's nats-jetstream scaler reads the monitoring endpoint's /jsz for the account, with consumers.
    const response = await fetch(`http://127.0.0.1:${server!.monitorPort}/jsz?acc=${encodeURIComponent(account)}&consumers=true&config=true`);
    expect(response.status).toBe(200);
    const jsz = (await response.json()) as { account_details?: { name: string; stream_detail?: { name: string; consumer_detail?: { name: string; num_pending: number }[] }[] }[] };
    const accountDetail = jsz.account_details?.find((detail) => detail.name === account);
    const streamDetail = accountDetail?.stream_detail?.find((detail) => detail.name === stream);
    const consumerDetail = streamDetail?.consumer_detail?.find((detail) => detail.name === consumer);
    expect(consumerDetail?.num_pending).toBe(3);
  });
});
