import { Subjects } from '../headers';
import { DEAD_LETTER_PAYLOAD_PREFIX, DEAD_LETTER_PAYLOAD_STREAM, DEAD_LETTER_STREAM, EVENTS_STREAM, PAYLOAD_PREFIX, PAYLOAD_STREAM, payloadSubjectsFor, queueStream, WORKERS } from './streams';

/**
 * What one kind of process does on the bus, the source of its NATS
 * permissions: the services it answers, the methods it calls, the work
 * queues it fills or works, and whether it keeps task events. Everything
 * else is denied, so a stolen credential reaches only what its role needs.
 */
export interface BusRole {
  /** Full names of the services it answers (`ratchet.v1.MemoryService`), replicas' own subjects included. */
  readonly serves: readonly string[];
  /** Methods it calls, by full service name. A method is also allowed on a replica's own subject (`<Service>.<instance>.<Method>`). */
  readonly calls: Readonly<Record<string, readonly string[]>>;
  /** Queues it puts jobs on and whose results it awaits (see `createQueueCaller`). */
  readonly enqueues: readonly string[];
  /** Queues it takes jobs from and answers (see `serveFromQueue`). */
  readonly works: readonly string[];
  /** Appends and reads task events. */
  readonly events: boolean;
  /** Sends and receives payloads too large for one message (chunks in the payload stream, for the subjects it sends and receives on). */
  readonly payloads: boolean;
  /**
   * Creates Ratchet's streams and the queues' consumers when it starts (see
   * `NatsTransport.provision`): the only role that may create, update or
   * delete streams and consumers. No other role can create a stream that
   * captures others' subjects or a consumer that pushes into them.
   */
  readonly provisions?: boolean;
  /** Other subjects it listens on (patterns), for channels outside services and queues. */
  readonly listens?: readonly string[];
  /** Other subjects it sends requests to (patterns). */
  readonly sends?: readonly string[];
}

const service = (name: string) => `ratchet.v1.${name}`;
const ORCHESTRATOR = service('OrchestratorService');
const PLANNER = service('PlannerService');
const CODER = service('CoderService');
const TESTER = service('TesterService');
const REFLECTOR = service('ReflectorService');
const SAFETY = service('SafetyService');
const MEMORY = service('MemoryService');
const SANDBOX = service('SandboxRunnerService');
/** Tool steps the coder reports to the orchestrator, of every task and phase. */
const PROGRESS = Subjects.progress('*', '*');
/** The queue sandbox jobs go through (`SANDBOX_JOB_QUEUE` of the tester and safety). */
const SANDBOX_QUEUE = 'sandbox-jobs';

const ALL = ['*'] as const;
const server = (serves: string[], extra: Partial<BusRole> = {}): BusRole => ({ serves, calls: {}, enqueues: [], works: [], events: false, payloads: true, ...extra });

/**
 * Every role of a distributed Ratchet. The orchestrator drives the agents
 * and keeps events; the coder opens sandbox sessions (never one-off jobs);
 * only the tester (test runs) and safety (Bandit scans) enqueue sandbox jobs
 * and only runners take them; `probe` (health checks, monitoring) may ask
 * every service for its health and nothing else.
 */
export const busRoles = {
  orchestrator: server([ORCHESTRATOR], {
    calls: { [PLANNER]: ALL, [CODER]: ALL, [TESTER]: ALL, [REFLECTOR]: ALL, [SAFETY]: ALL, [MEMORY]: ALL },
    events: true,
    provisions: true,
    listens: [PROGRESS],
  }),
  planner: server([PLANNER]),
  coder: server([CODER], {
    calls: {
      [SAFETY]: ['CheckCommand', 'CheckCode'],
      [SANDBOX]: ['OpenSession', 'SessionExec', 'SessionReadFiles', 'SessionWriteFiles', 'SessionListFiles', 'SessionDiff', 'CloseSession'],
    },
    sends: [PROGRESS],
  }),
  tester: server([TESTER], { enqueues: [SANDBOX_QUEUE] }),
  reflector: server([REFLECTOR]),
  safety: server([SAFETY], { enqueues: [SANDBOX_QUEUE] }),
  memory: server([MEMORY]),
  'sandbox-runner': server([SANDBOX], { works: [SANDBOX_QUEUE] }),
  probe: { serves: [], calls: Object.fromEntries([ORCHESTRATOR, PLANNER, CODER, TESTER, REFLECTOR, SAFETY, MEMORY, SANDBOX].map((name) => [name, ['Health']])), enqueues: [], works: [], events: false, payloads: false },
} as const satisfies Record<string, BusRole>;

export type BusRoleName = keyof typeof busRoles;

/** nats-server permissions: the subjects a user may publish and subscribe to; everything else is denied. */
export interface NatsPermissions {
  readonly publish: { readonly allow: readonly string[] };
  readonly subscribe: { readonly allow: readonly string[] };
}

/** The inbox prefix of a role's connections: its replies arrive under it, and only it may subscribe there. */
export function inboxPrefixOf(role: string): string {
  return `_INBOX_${role}`;
}

/** JetStream API subject to look a stream up: every role checks the streams it uses before using them. */
const streamInfo = (stream: string) => `$JS.API.STREAM.INFO.${stream}`;
/** JetStream API subjects to read a stream through ordered consumers of its own (pull, ephemeral). */
const streamReader = (stream: string) => [
  `$JS.API.CONSUMER.CREATE.${stream}`,
  `$JS.API.CONSUMER.CREATE.${stream}.>`,
  `$JS.API.CONSUMER.INFO.${stream}.*`,
  `$JS.API.CONSUMER.DELETE.${stream}.*`,
  `$JS.API.CONSUMER.MSG.NEXT.${stream}.*`,
  `$JS.ACK.${stream}.>`,
];
/** JetStream API subjects to create and check streams and the queues' consumers (the provisioning role only). */
const provisioner = (stream: string) => [
  `$JS.API.STREAM.CREATE.${stream}`,
  `$JS.API.STREAM.UPDATE.${stream}`,
  streamInfo(stream),
  `$JS.API.CONSUMER.LIST.${stream}`,
  `$JS.API.CONSUMER.DELETE.${stream}.*`,
  `$JS.API.CONSUMER.INFO.${stream}.*`,
];
/** Every queue some role fills or works. */
const allQueues = (): string[] => [...new Set(Object.values(busRoles as Record<string, BusRole>).flatMap((role) => [...role.enqueues, ...role.works]))];

/**
 * The roles that send requests `roleName` answers: the callers of the
 * services it serves, the workers of the queues it fills (they deliver each
 * result as a request), and the senders on the subjects it listens to.
 */
function callersOf(roleName: BusRoleName): BusRoleName[] {
  const role: BusRole = busRoles[roleName];
  return (Object.keys(busRoles) as BusRoleName[]).filter((otherName) => {
    const other: BusRole = busRoles[otherName];
    return (
      Object.keys(other.calls).some((callee) => role.serves.includes(callee)) ||
      other.works.some((queue) => role.enqueues.includes(queue)) ||
      (other.sends ?? []).some((subject) => (role.listens ?? []).includes(subject))
    );
  });
}

/**
 * The subjects `role` may publish and subscribe to, for nats-server's
 * `authorization` block. Its replies arrive under `inboxPrefixOf(role)`,
 * which no other role may read; it may reply only into the inboxes of the
 * roles that call it (explicitly, rather than nats-server's
 * `allow_responses`, whose grants expire after two minutes and are lost
 * when the server restarts, while a coding phase can take longer).
 */
export function natsPermissions(roleName: BusRoleName): NatsPermissions {
  const role: BusRole = busRoles[roleName];
  const publish: string[] = callersOf(roleName).map((caller) => `${inboxPrefixOf(caller)}.>`);
  const subscribe: string[] = [`${inboxPrefixOf(roleName)}.>`];
  for (const served of role.serves) subscribe.push(`${served}.>`);
  for (const [callee, methods] of Object.entries(role.calls)) {
    for (const method of methods) publish.push(`${callee}.${method}`, `${callee}.*.${method}`);
  }
  subscribe.push(...(role.listens ?? []));
  publish.push(...(role.sends ?? []));
  const jetstream = role.enqueues.length > 0 || role.works.length > 0 || role.events || role.payloads || role.provisions === true;
  if (jetstream) publish.push('$JS.API.INFO');
  /** Subjects of messages it sends (payloads go with them) and receives (payloads it reads and then deletes). */
  const sent = publish.filter((subject) => !subject.startsWith('$'));
  const received = [...subscribe];
  for (const queue of role.enqueues) {
    publish.push(Subjects.queue(queue), streamInfo(queueStream(queue)));
    subscribe.push(Subjects.result(queue, '*', '*'));
    sent.push(Subjects.queue(queue));
    received.push(Subjects.result(queue, '*', '*'));
  }
  for (const queue of role.works) {
    publish.push(
      streamInfo(queueStream(queue)),
      `$JS.API.CONSUMER.INFO.${queueStream(queue)}.${WORKERS}`,
      `$JS.API.CONSUMER.MSG.NEXT.${queueStream(queue)}.${WORKERS}`,
      `$JS.ACK.${queueStream(queue)}.${WORKERS}.>`,
      Subjects.result(queue, '*', '*'),
      Subjects.deadLetter(queue),
      streamInfo(DEAD_LETTER_STREAM),
      streamInfo(DEAD_LETTER_PAYLOAD_STREAM),
      payloadSubjectsFor(DEAD_LETTER_PAYLOAD_PREFIX, Subjects.deadLetter(queue)),
    );
    sent.push(Subjects.result(queue, '*', '*'));
    received.push(Subjects.queue(queue));
  }
  if (role.events) publish.push(Subjects.events('*'), streamInfo(EVENTS_STREAM), ...streamReader(EVENTS_STREAM));
  if (role.payloads) {
    publish.push(streamInfo(PAYLOAD_STREAM));
    for (const subject of [...sent, ...received]) publish.push(payloadSubjectsFor(PAYLOAD_PREFIX, subject));
    for (const subject of received) publish.push(`$JS.API.DIRECT.GET.${PAYLOAD_STREAM}.${payloadSubjectsFor(PAYLOAD_PREFIX, subject)}`);
  }
  if (role.provisions === true) {
    for (const stream of [EVENTS_STREAM, DEAD_LETTER_STREAM, PAYLOAD_STREAM, DEAD_LETTER_PAYLOAD_STREAM]) publish.push(...provisioner(stream));
    for (const queue of allQueues()) {
      publish.push(
        ...provisioner(queueStream(queue)),
        `$JS.API.CONSUMER.CREATE.${queueStream(queue)}.${WORKERS}`,
        `$JS.API.CONSUMER.CREATE.${queueStream(queue)}.${WORKERS}.>`,
        `$JS.API.CONSUMER.DURABLE.CREATE.${queueStream(queue)}.${WORKERS}`,
      );
    }
  }
  return { publish: { allow: [...new Set(publish)] }, subscribe: { allow: [...new Set(subscribe)] } };
}

/** The environment variable holding `role`'s password in the shipped nats-server config: `RATCHET_NATS_PASSWORD_SANDBOX_RUNNER`. */
export function natsPasswordVariable(role: string): string {
  return `RATCHET_NATS_PASSWORD_${role.toUpperCase().replace(/[^A-Z0-9]/g, '_')}`;
}

/** A user of the generated authorization: its role and how it proves who it is. */
export interface NatsUser {
  readonly role: BusRoleName;
  readonly user: string;
  /** The password, or a `$VARIABLE` nats-server reads from its environment, or a bcrypt hash (`$2a$...`). */
  readonly password: string;
}

/**
 * nats-server's `authorization` block for `users`, each with its role's
 * permissions; nobody else may connect. `$NAME` passwords are left for
 * nats-server to read from its environment.
 */
export function natsAuthorizationConfig(users: readonly NatsUser[]): string {
  const header = [
    '# nats-server users of a distributed Ratchet, one per role, each allowed only',
    '# the subjects its role serves and calls (deploy/SECURITY.md). Generated from',
    '# libs/bus/src/nats/permissions.ts by tools/nats-config.mjs: do not edit.',
  ];
  const quote = (value: string) => JSON.stringify(value);
  const list = (values: readonly string[]) => `[${values.map(quote).join(', ')}]`;
  const entries = users.map(({ role, user, password }) => {
    const permissions = natsPermissions(role);
    const secret = /^\$[A-Z_][A-Z0-9_]*$/.test(password) ? password : quote(password);
    return [
      `    {`,
      `      # role: ${role}`,
      `      user: ${quote(user)}`,
      `      password: ${secret}`,
      `      permissions: {`,
      `        publish: { allow: ${list(permissions.publish.allow)} }`,
      `        subscribe: { allow: ${list(permissions.subscribe.allow)} }`,
      `      }`,
      `    }`,
    ].join('\n');
  });
  return [...header, 'authorization {', '  users: [', entries.join('\n'), '  ]', '}', ''].join('\n');
}
