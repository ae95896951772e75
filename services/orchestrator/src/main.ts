import { hostname } from 'node:os';
import path from 'node:path';
import { databaseConfigSection, runnerConfigSection, SANDBOX_JOB_QUEUE, sandboxConfigSection } from '@ratchet/agent';
import { NatsTransport } from '@ratchet/bus';
import { configSection, extendConfigSchema } from '@ratchet/config';
import { OrchestratorServiceDefinition, TaskEvent } from '@ratchet/contracts';
import { openPostgresWithRetry, type Database } from '@ratchet/db';
import { AppError, ErrorCode } from '@ratchet/errors';
import { DEFAULT_GRPC_MAX_MESSAGE_BYTES, GrpcServer } from '@ratchet/grpc-api';
import { main, packageVersion } from '@ratchet/runtime';
import { z } from 'zod';
import { accessOf } from './adapters/grpc-access';
import { reportTaskMetrics } from './adapters/metrics';
import { loadProfiles } from './adapters/profiles';
import { agentClients } from './agent-clients';
import { loopSettingsOf, orchestratorConfigSection } from './config';
import { createOrchestratorService, type OrchestratorService } from './orchestrator-service';

const schema = extendConfigSchema({
  database: databaseConfigSection,
  orchestrator: orchestratorConfigSection,
  sandbox: sandboxConfigSection,
  runner: runnerConfigSection,
  grpc: configSection({
    /**
     * Where clients (the CLI) connect. Default: every interface (port 50051)
     * when clients are authenticated, else loopback only.
     */
    address: z.string().min(1).optional(),
    /** A users file (YAML, see config/users.example.yaml): principals, their teams and roles, token hashes, certificate names. */
    usersFile: z.string().min(1).optional(),
    /** Accepted bearer tokens, comma-separated, for a single-team setup: each acts for the team "default" with every role. Not with usersFile. */
    tokens: z.string().default(''),
    /** Listen beyond loopback with nobody authenticated (a network where every client is trusted). */
    allowUnauthenticated: z.boolean().default(false),
    /** PEM files for TLS; without certFile the server speaks plaintext. With clientCaFile, clients need a certificate it signed (mTLS). */
    certFile: z.string().min(1).optional(),
    keyFile: z.string().min(1).optional(),
    clientCaFile: z.string().min(1).optional(),
    /** Serve gRPC reflection from the .proto files under this directory (e.g. protos), for grpcurl. */
    reflectionProtoRoot: z.string().min(1).optional(),
    /** Largest gRPC message either way, bytes: a 50 MiB workspace (SubmitTask's limit) and its result fit in the default 64 MiB. */
    maxMessageBytes: z.number().int().min(1024 * 1024).default(DEFAULT_GRPC_MAX_MESSAGE_BYTES),
  }),
});

// The orchestrator process: tasks in Postgres, the loop's services over NATS, clients over gRPC.
main({
  name: 'orchestrator',
  version: packageVersion(path.join(__dirname, '..')),
  definition: OrchestratorServiceDefinition,
  schema,
  start: async ({ config, transport, logger, redact }) => {
    // The orchestrator alone creates the bus's streams and the queues' consumers (deploy/SECURITY.md): others wait for them.
    if (transport instanceof NatsTransport) {
      const removed = await transport.provision({ [SANDBOX_JOB_QUEUE]: { ackWaitMs: config.runner.ackWaitMs, maxDeliver: config.runner.maxDeliver } });
      for (const consumer of removed) logger.warn({ consumer }, 'removed a JetStream push consumer Ratchet never creates: someone with JetStream rights made it');
    }
    const url = config.database.url;
    if (url === undefined) throw new AppError(ErrorCode.CONFIG_INVALID, 'the orchestrator keeps tasks in Postgres: set RATCHET_DATABASE_URL (or database.url in config/orchestrator.yaml)');
    const { grpc } = config;
    if ((grpc.certFile === undefined) !== (grpc.keyFile === undefined)) throw new AppError(ErrorCode.CONFIG_INVALID, 'TLS needs both grpc.certFile and grpc.keyFile (RATCHET_GRPC_CERT_FILE, RATCHET_GRPC_KEY_FILE)');
    // Checked before anything listens: a bad loop setting is a config error at start.
    const settings = loopSettingsOf(config.orchestrator, config.sandbox.timeoutSeconds, { commandGates: true });
    const profiles = loadProfiles();
    const access = accessOf(grpc);
    if (!access.authenticated) logger.warn({ address: access.address }, access.loopback ? 'gRPC clients are not authenticated, so the server listens on loopback only: set grpc.usersFile (RATCHET_GRPC_USERS_FILE) or RATCHET_GRPC_TOKENS to serve a network' : 'gRPC clients are not authenticated (grpc.allowUnauthenticated): every client can act on every task');
    const server = new GrpcServer({
      ...(access.authenticate === undefined ? {} : { authenticate: access.authenticate }),
      ...(grpc.certFile === undefined || grpc.keyFile === undefined ? {} : { tls: { certFile: grpc.certFile, keyFile: grpc.keyFile, ...(grpc.clientCaFile === undefined ? {} : { clientCaFile: grpc.clientCaFile }) } }),
      ...(grpc.reflectionProtoRoot === undefined ? {} : { reflection: { protoRoot: grpc.reflectionProtoRoot, files: ['ratchet/v1/orchestrator.proto'] } }),
      maxMessageBytes: grpc.maxMessageBytes,
      logger,
    });

    // Until Postgres answers, calls get UNAVAILABLE and health says NOT_SERVING; the process stays up.
    const state: { orchestrator?: OrchestratorService; db?: Database; stopped: boolean } = { stopped: false };
    const ready = () => {
      if (state.orchestrator === undefined) throw new AppError(ErrorCode.UNAVAILABLE, 'the orchestrator is starting: waiting for Postgres', { retryable: true });
      return state.orchestrator;
    };
    const implementation: OrchestratorService['implementation'] = {
      submitTask: (request, context) => ready().implementation.submitTask(request, context),
      getTask: (request, context) => ready().implementation.getTask(request, context),
      listTasks: (request, context) => ready().implementation.listTasks(request, context),
      cancelTask: (request, context) => ready().implementation.cancelTask(request, context),
      resumeTask: (request, context) => ready().implementation.resumeTask(request, context),
      approve: (request, context) => ready().implementation.approve(request, context),
      answer: (request, context) => ready().implementation.answer(request, context),
      listProfiles: (request, context) => ready().implementation.listProfiles(request, context),
      listLessons: (request, context) => ready().implementation.listLessons(request, context),
      getLesson: (request, context) => ready().implementation.getLesson(request, context),
      forgetLesson: (request, context) => ready().implementation.forgetLesson(request, context),
      importLessons: (request, context) => ready().implementation.importLessons(request, context),
      reindexLessons: (request, context) => ready().implementation.reindexLessons(request, context),
    };
    server.addService(OrchestratorServiceDefinition, { ...implementation, watchTask: (request, context) => ready().watchTask(request, context) });
    const port = await server.listen(access.address);
    logger.info({ address: access.address, port, tls: grpc.certFile !== undefined, authenticated: access.authenticated }, 'gRPC listening');

    const stopping = new AbortController();
    let published: Promise<void> = Promise.resolve();
    const connecting = (async () => {
      const db = await openPostgresWithRetry({ connectionString: url, maxConnections: config.database.maxConnections, statementTimeoutMs: config.database.statementTimeoutMs }, stopping.signal, (error, attempt, retryInMs) =>
        logger.warn({ attempt, retryInMs, err: error.message }, 'Postgres not reachable yet'),
      );
      state.db = db;
      reportTaskMetrics(db);
      state.orchestrator = await createOrchestratorService({
        db,
        redact,
        profiles,
        clients: agentClients(transport, config.orchestrator.modelCallTimeoutMs),
        // Events are stored with each transition; the bus only tells watchers sooner, so the
        // driver does not wait for it. Publications go out in order, one batch after another;
        // while NATS is down they fail and watchers fall back to reading the store.
        publish: (events) => {
          published = published.then(async () => {
            try {
              await Promise.all(events.map((event) => transport.appendEvent(event.taskId, TaskEvent.encode(event).finish())));
            } catch (error) {
              logger.warn({ taskId: events[0]?.taskId, err: AppError.from(error).message }, 'could not publish task events; watchers will read them from the store');
            }
          });
          return Promise.resolve();
        },
        live: (taskId) => transport.readEvents(taskId),
        settings,
        maxConcurrentTasks: config.orchestrator.maxConcurrentTasks,
        owner: config.orchestrator.instanceId ?? `${hostname()}:${process.pid}`,
        leaseMs: config.orchestrator.leaseMs,
        claimIntervalMs: config.orchestrator.claimIntervalMs,
        logger,
      });
      server.setServing(true);
      logger.info({ owner: config.orchestrator.instanceId ?? `${hostname()}:${process.pid}` }, 'driving tasks');
    })().catch((error: unknown) => {
      const appError = AppError.from(error);
      if (appError.code !== ErrorCode.CANCELLED) logger.error({ code: appError.code, err: appError.message }, 'cannot start the orchestrator');
    });
    // Usually Postgres is up: report ready only once it answered, or once it has been tried for a while.
    await Promise.race([connecting, new Promise((resolve) => setTimeout(resolve, 3_000).unref())]);

    return {
      // Clients reach tasks through gRPC only, where they are authenticated; over NATS this serves Health alone.
      checks: [
        {
          name: 'postgres',
          required: true,
          check: async () => {
            if (state.db === undefined) return { ok: false, detail: 'connecting' };
            await state.db.query('SELECT 1');
            return { ok: true, detail: 'connected' };
          },
        },
      ],
      close: async (graceMs) => {
        stopping.abort();
        await server.close(Math.min(graceMs, 5_000));
        await connecting;
        // Running tasks are handed over to another replica (or to this one after a restart), not cancelled.
        await state.orchestrator?.close();
        await published;
        await state.db?.close();
      },
    };
  },
});
