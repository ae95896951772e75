import { TaskEvent, TaskView } from '@ratchet/contracts';
import { openPglite } from '@ratchet/db';
import { AppError, ErrorCode } from '@ratchet/errors';
import type { RoleModels } from '@ratchet/llm';
import { DEFAULT_TEAM } from '@ratchet/agent';
import { createRedactor, loadRedactionRules } from '@ratchet/redaction';
import { createEmbedder, createMemoryService, learningOptionsOf, type MemoryService } from '@ratchet/memory';
import { loadProfiles, toIterationProto, toTaskProto, TaskStore } from '@ratchet/orchestrator';
import { lessonApiOf, type TaskApi } from './task-api';
import { configDirectory, dataDirectory, loadCliConfig } from './cli-config';
import { startEmbedded } from './embedded';

// Embedded mode's TaskApi, in a module of its own so that `./api` (which a
// command talking to a server loads) does not bring every service with it.

const embeddedOnlyInItsProcess = (what: string) =>
  new AppError(
    ErrorCode.FAILED_PRECONDITION,
    `${what} needs a Ratchet server: an embedded task lives in the \`ratchet run\` that started it (Ctrl-C there cancels it). Use --server host:port (or RATCHET_SERVER) for tasks on a server.`,
  );

/**
 * Embedded mode: with `drive`, every service in this process (for `run`);
 * without, only the stored history (for `history`, `show`, `watch`), which
 * needs neither Docker nor a model.
 */
export async function openEmbedded(options: { dataDir?: string; drive: boolean; models?: RoleModels; approveAskedCommands?: boolean }): Promise<TaskApi> {
  const configDir = configDirectory();
  const loaded = loadCliConfig(configDir);
  const config = options.approveAskedCommands === true ? { ...loaded, orchestrator: { ...loaded.orchestrator, approveAskedCommands: true } } : loaded;
  const dataDir = options.dataDir ?? dataDirectory(config);
  if (options.drive) {
    const ratchet = await startEmbedded({ config, configDir, dataDir, ...(options.models === undefined ? {} : { models: options.models }) });
    return {
      where: `embedded (${dataDir})`,
      modelNames: [...new Set(Object.values(ratchet.models).map((model) => model.modelName))],
      submitTask: async (request) => {
        const { task } = await ratchet.client.submitTask(request);
        if (task === undefined) throw new AppError(ErrorCode.INTERNAL, 'the orchestrator accepted the task but returned none');
        return task;
      },
      async *watchTask(taskId, signal) {
        const reader = await ratchet.transport.readEvents(taskId);
        const stop = () => void reader.stop();
        signal.addEventListener('abort', stop, { once: true });
        // A runner that fails on an unexpected error leaves the task unfinished and sends no TaskCompleted: stop reading and say so rather than wait forever.
        let runnerFailure: AppError | undefined;
        ratchet.orchestrator.whenDone(taskId).catch((error: unknown) => {
          runnerFailure = AppError.from(error);
          stop();
        });
        try {
          for await (const stored of reader) {
            const event = TaskEvent.decode(stored.data);
            yield event;
            if (event.payload?.$case === 'taskCompleted') return;
          }
          if (runnerFailure !== undefined) throw runnerFailure;
        } finally {
          signal.removeEventListener('abort', stop);
          await reader.stop();
        }
      },
      getTask: (taskId, view) => ratchet.client.getTask({ taskId, view }),
      listTasks: (request) => ratchet.client.listTasks(request),
      cancelTask: async (taskId, reason) => {
        const { task } = await ratchet.client.cancelTask({ taskId, reason }, { timeoutMs: 120_000 });
        if (task === undefined) throw new AppError(ErrorCode.INTERNAL, 'the orchestrator cancelled the task but returned none');
        return task;
      },
      resumeTask: async (request) => {
        const { task } = await ratchet.client.resumeTask(request);
        if (task === undefined) throw new AppError(ErrorCode.INTERNAL, 'the orchestrator resumed the task but returned none');
        return task;
      },
      // Gates the run decides itself (a package install asked in the terminal); the approver is the local user.
      approve: (request) => ratchet.client.approve(request),
      // Questions the run asks at the terminal (or answers with the stated assumptions); the answerer is the local user.
      answer: async (request) => {
        const { task } = await ratchet.client.answer(request);
        if (task === undefined) throw new AppError(ErrorCode.INTERNAL, 'the orchestrator took the answers but returned no task');
        return task;
      },
      listProfiles: async () => (await ratchet.client.listProfiles({})).profiles,
      lessons: lessonApiOf(ratchet.client),
      close: () => ratchet.close(),
    };
  }
  const db = await openPglite({ dataDir, vector: true });
  let store: TaskStore;
  let memory: MemoryService;
  try {
    store = await TaskStore.open(db);
    // Lessons are read and managed here directly: no task runs, so no other service is needed.
    const redactor = createRedactor(loadRedactionRules(configDir));
    memory = await createMemoryService({ db, embedder: createEmbedder(config.embedder), ...learningOptionsOf(config.learning), redact: (text) => redactor.redact(text).text, reindexOnStart: false });
  } catch (error) {
    await db.close();
    throw error;
  }
  return {
    where: `embedded (${dataDir})`,
    submitTask: () => Promise.reject(new AppError(ErrorCode.INTERNAL, 'this embedded view only reads history')),
    async *watchTask(taskId) {
      // Nothing else can be driving it (the data directory is this process's), so the stored events are all there is.
      const task = await store.tasks.get(taskId);
      yield* await store.events.list(task.id);
    },
    async getTask(taskId, view) {
      const task = await store.tasks.get(taskId);
      const full = view !== TaskView.TASK_VIEW_BASIC;
      return { task: toTaskProto(task, full), iterations: full ? (await store.iterations.list(task.id)).map(toIterationProto) : [], approvals: full ? await store.approvals.list(task.id) : [] };
    },
    async listTasks(request) {
      const page = await store.tasks.list({ team: DEFAULT_TEAM, statuses: request.statuses, pageSize: request.pageSize || 50, offset: 0 });
      return { tasks: page.tasks.map((task) => toTaskProto(task, false)), nextPageToken: '' };
    },
    cancelTask: () => Promise.reject(embeddedOnlyInItsProcess('cancel')),
    resumeTask: () => Promise.reject(new AppError(ErrorCode.INTERNAL, 'this embedded view only reads history')),
    approve: () => Promise.reject(embeddedOnlyInItsProcess('approve')),
    answer: () => Promise.reject(embeddedOnlyInItsProcess('answer')),
    listProfiles: async () => loadProfiles(configDir),
    lessons: {
      list: (request) => memory.implementation.listLessons(request),
      get: (lessonId) => memory.implementation.getLesson({ lessonId }),
      forget: (lessonId) => memory.implementation.forgetLesson({ lessonId }),
      import: (request) => memory.implementation.importLessons(request),
      reindex: (batchSize) => memory.implementation.reindexLessons({ batchSize }),
    },
    close: async () => {
      await memory.close();
      await db.close();
    },
  };
}
