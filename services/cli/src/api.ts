import { setTimeout as delay } from 'node:timers/promises';
import { OrchestratorServiceDefinition, type Task } from '@ratchet/contracts';
import { AppError, backoffDelay, ErrorCode, sleepUnlessAborted } from '@ratchet/errors';
import { createGrpcClient } from '@ratchet/grpc-api';
import type { RoleModels } from '@ratchet/llm';
import { lessonApiOf, type TaskApi } from './task-api';

export type { LessonApi, TaskApi, WatchInterruption } from './task-api';

/** How to reach a server; from switches first, then RATCHET_SERVER, RATCHET_TOKEN, RATCHET_SERVER_CA_FILE. */
export interface ConnectOptions {
  readonly server?: string;
  readonly token?: string;
  /** PEM file of the CA that signed the server's certificate; turns TLS on. */
  readonly tlsCa?: string;
  /** TLS with the system's CAs. */
  readonly tls?: boolean;
  readonly dataDir?: string;
}

export interface ServerTarget {
  readonly address: string;
  readonly token?: string;
  readonly tls?: { readonly caFile?: string };
}

/** The server the switches or environment name, or undefined for embedded mode. */
export function serverTarget(options: ConnectOptions, env: NodeJS.ProcessEnv = process.env): ServerTarget | undefined {
  const pick = (value: string | undefined, name: string) => (value !== undefined && value.trim() !== '' ? value.trim() : env[name]?.trim() || undefined);
  const address = pick(options.server, 'RATCHET_SERVER');
  const token = pick(options.token, 'RATCHET_TOKEN');
  const caFile = pick(options.tlsCa, 'RATCHET_SERVER_CA_FILE');
  const tls = options.tls === true || caFile !== undefined || ['1', 'true'].includes(env['RATCHET_SERVER_TLS'] ?? '');
  if (address === undefined) {
    if (token !== undefined && options.token !== undefined) throw new AppError(ErrorCode.INVALID_ARGUMENT, '--token needs a server: add --server host:port (or set RATCHET_SERVER)');
    return undefined;
  }
  if (!/^[^\s/]+:\d{1,5}$/.test(address)) throw new AppError(ErrorCode.INVALID_ARGUMENT, `server ${JSON.stringify(address)} is not host:port, e.g. --server localhost:50051`);
  return { address, ...(token === undefined ? {} : { token }), ...(tls ? { tls: caFile === undefined ? {} : { caFile } } : {}) };
}

/** How long `watchTask` keeps reopening a server's stream that keeps failing, and a submit is sent again, ms. */
const WATCH_PATIENCE_MS = 15 * 60_000;

/**
 * `call`, again after a retryable failure (the server or its database gone
 * for a while) with backoff, for up to WATCH_PATIENCE_MS, when `idempotent`.
 */
async function untilAnswered<T>(call: () => Promise<T>, idempotent: boolean): Promise<T> {
  const started = Date.now();
  for (let attempt = 1; ; attempt++) {
    try {
      return await call();
    } catch (error) {
      const appError = AppError.from(error);
      if (!idempotent || !appError.isRetryable || Date.now() - started > WATCH_PATIENCE_MS) throw appError;
      await delay(backoffDelay(attempt, 500, 5_000));
    }
  }
}

/** The orchestrator's gRPC API at `target`. */
export function connectServer(target: ServerTarget): TaskApi {
  const client = createGrpcClient(OrchestratorServiceDefinition, target.address, {
    ...(target.token === undefined ? {} : { token: target.token }),
    ...(target.tls === undefined ? {} : { tls: target.tls }),
    defaultTimeoutMs: 30_000,
  });
  const taskOf = (response: { task?: Task | undefined }, what: string): Task => {
    if (response.task === undefined) throw new AppError(ErrorCode.INTERNAL, `the server answered ${what} without a task`);
    return response.task;
  };
  return {
    where: `server ${target.address}`,
    // Idempotent with the request id the CLI gives every run: sent again while the server is briefly gone.
    submitTask: (request) => untilAnswered(async () => taskOf(await client.submitTask(request), 'SubmitTask'), request.requestId !== ''),
    async *watchTask(taskId, signal, onInterrupted) {
      let fromSequence = 0;
      let failures = 0;
      let brokenSince = 0;
      for (;;) {
        try {
          for await (const { event } of client.watchTask({ taskId, fromSequence, followAfterCompletion: false }, { signal })) {
            if (event === undefined) continue;
            failures = 0;
            fromSequence = event.sequence + 1;
            yield event;
          }
          return;
        } catch (error) {
          const appError = AppError.from(error);
          if (signal.aborted || !appError.isRetryable) throw appError;
          if (failures === 0) brokenSince = Date.now();
          failures += 1;
          if (Date.now() - brokenSince > WATCH_PATIENCE_MS) {
            throw new AppError(appError.code, `${appError.message} (for ${Math.round(WATCH_PATIENCE_MS / 60_000)} minutes); the task goes on: follow it with ratchet watch ${taskId}`, { cause: appError });
          }
          const retryInMs = backoffDelay(failures, 500, 5_000);
          onInterrupted?.({ error: appError, retryInMs, fromSequence });
          await sleepUnlessAborted(retryInMs, signal);
          if (signal.aborted) return;
        }
      }
    },
    getTask: (taskId, view) => client.getTask({ taskId, view }),
    listTasks: (request) => client.listTasks(request),
    cancelTask: async (taskId, reason) => taskOf(await client.cancelTask({ taskId, reason }, { timeoutMs: 120_000 }), 'CancelTask'),
    resumeTask: async (request) => taskOf(await client.resumeTask(request), 'ResumeTask'),
    approve: (request) => client.approve(request),
    answer: async (request) => taskOf(await client.answer(request), 'Answer'),
    listProfiles: async () => (await client.listProfiles({})).profiles,
    lessons: lessonApiOf(client),
    close: () => Promise.resolve(client.close()),
  };
}

/** The server named by the switches or environment, else embedded mode. */
export async function openApi(options: ConnectOptions & { drive: boolean; models?: RoleModels; approveAskedCommands?: boolean }): Promise<TaskApi> {
  const target = serverTarget(options);
  if (target !== undefined) return connectServer(target);
  // Loaded only here: embedded mode brings every service (and PGlite) into
  // the process, which a command talking to a server never needs.
  const { openEmbedded } = require('./embedded-api') as typeof import('./embedded-api');
  return openEmbedded({
    drive: options.drive,
    ...(options.dataDir === undefined ? {} : { dataDir: options.dataDir }),
    ...(options.models === undefined ? {} : { models: options.models }),
    ...(options.approveAskedCommands === undefined ? {} : { approveAskedCommands: options.approveAskedCommands }),
  });
}
