import path from 'node:path';
import { databaseConfigSection } from '@ratchet/agent';
import { extendConfigSchema } from '@ratchet/config';
import { MemoryServiceDefinition } from '@ratchet/contracts';
import { openPglite, openPostgresWithRetry, type Database } from '@ratchet/db';
import { AppError, ErrorCode } from '@ratchet/errors';
import { main, packageVersion, type DependencyCheck } from '@ratchet/runtime';
import {
  createEmbedder,
  createMemoryService,
  embedderConfigSection,
  learningConfigSection,
  learningOptionsOf,
  memoryConfigSection,
  PgVectorStore,
  QdrantVectorStore,
  type MemoryService,
  type VectorStore,
} from './index';

const schema = extendConfigSchema({
  database: databaseConfigSection,
  memory: memoryConfigSection,
  embedder: embedderConfigSection,
  learning: learningConfigSection,
});

/** Longest start waits for stores that neither answer nor fail (a connection that hangs) before hosting the service. */
const hostWithinMs = 30_000;

// Lessons and their evidence in Postgres (schema memory); vectors per memory.vectors.
main({
  name: 'memory',
  version: packageVersion(path.join(__dirname, '..')),
  definition: MemoryServiceDefinition,
  schema,
  start: async ({ config, logger, signal, redact }) => {
    const url = config.database.url;
    if (url === undefined) throw new AppError(ErrorCode.CONFIG_INVALID, 'the memory service keeps lessons in Postgres: set RATCHET_DATABASE_URL (or database.url in config/memory.yaml)');
    const embedder = createEmbedder(config.embedder);
    const { vectors, qdrant } = config.memory;
    // The id, not the settings: the settings may carry an API key.
    logger.info({ embedder: embedder.id, vectors, ...(vectors === 'qdrant' ? { collection: qdrant.collection } : {}) }, 'lessons are embedded with this embedder');
    // A local embedded database either opens or is broken: open it now, so a bad data directory stops the process.
    const vectorDb = vectors === 'pglite' ? await openPglite({ dataDir: path.resolve(config.memory.vectorDataDir), vector: true }) : undefined;

    // Until Postgres (and Qdrant) answer, calls get UNAVAILABLE and Health says NOT_SERVING with the reason; the
    // process stays up and keeps trying, so a stack that starts in any order settles without restarts.
    const stopping = new AbortController();
    signal.addEventListener('abort', () => stopping.abort(), { once: true });
    const state: { db?: Database; qdrant?: QdrantVectorStore; memory?: MemoryService; waiting: { postgres: string; qdrant: string }; failed?: { store: 'postgres' | 'qdrant'; error: AppError } } = {
      waiting: { postgres: 'connecting', qdrant: 'waiting for Postgres first' },
    };
    let storeUnreachable: () => void = () => undefined;
    const aStoreIsUnreachable = new Promise<void>((resolve) => (storeUnreachable = resolve));
    const connecting = (async () => {
      // Which store a failure is about, for Health.
      let opening: 'postgres' | 'qdrant' = 'postgres';
      try {
        const db = await openPostgresWithRetry({ connectionString: url, maxConnections: config.database.maxConnections, statementTimeoutMs: config.database.statementTimeoutMs }, stopping.signal, (error, attempt, retryInMs) => {
          state.waiting.postgres = `not reachable yet (attempt ${attempt}): ${error.message}`;
          storeUnreachable();
          logger.warn({ attempt, retryInMs, err: error.message }, 'Postgres not reachable yet');
        });
        state.db = db;
        let vectorStore: VectorStore;
        if (vectors === 'qdrant') {
          opening = 'qdrant';
          state.waiting.qdrant = 'connecting';
          state.qdrant = await QdrantVectorStore.openWithRetry(
            // The schema requires the URL for qdrant; the fallback only narrows the type.
            { url: qdrant.url ?? '', collection: qdrant.collection, timeoutMs: qdrant.timeoutMs, dimension: embedder.dimension, ...(qdrant.apiKey === undefined ? {} : { apiKey: qdrant.apiKey }) },
            stopping.signal,
            (error, attempt, retryInMs) => {
              state.waiting.qdrant = `not reachable yet (attempt ${attempt}): ${error.message}`;
              storeUnreachable();
              logger.warn({ attempt, retryInMs, err: error.message }, 'Qdrant not reachable yet');
            },
          );
          vectorStore = state.qdrant;
          opening = 'postgres';
        } else {
          vectorStore = await PgVectorStore.open(vectorDb ?? db);
        }
        state.memory = await createMemoryService({
          db,
          vectors: vectorStore,
          embedder,
          ...learningOptionsOf(config.learning),
          redact,
          onReindexError: (error) => logger.warn({ err: error instanceof Error ? error.message : String(error) }, 're-embedding lessons stopped; ratchet lessons reindex resumes it'),
          onVectorsMissing: (count) => logger.warn({ lessons: count }, 'lessons had no vector in the vector store; embedding them again'),
        });
        logger.info({}, 'serving lessons');
      } catch (error) {
        const appError = AppError.from(error);
        if (appError.code === ErrorCode.CANCELLED) return;
        state.failed = { store: opening, error: appError };
        logger.error({ code: appError.code, err: appError.message }, 'cannot start the memory service; it stays NOT_SERVING until restarted with the problem fixed');
      }
    })();
    // Usually the stores are up: host the service once they answered (so it is SERVING when it says ready), or as soon
    // as one turns out to be unreachable (so Health can say which, while the retries go on).
    await Promise.race([connecting, aStoreIsUnreachable, new Promise((resolve) => setTimeout(resolve, hostWithinMs).unref())]);

    const ready = (): MemoryService => {
      if (state.memory !== undefined) return state.memory;
      if (state.failed !== undefined) throw new AppError(ErrorCode.UNAVAILABLE, `this memory replica could not start: ${state.failed.error.message}`, { retryable: true });
      throw new AppError(ErrorCode.UNAVAILABLE, `the memory service is starting: waiting for ${state.db === undefined ? 'Postgres' : 'Qdrant'}`, { retryable: true });
    };
    const implementation: MemoryService['implementation'] = {
      retrieveLessons: (request, context) => ready().implementation.retrieveLessons(request, context),
      recordFailure: (request, context) => ready().implementation.recordFailure(request, context),
      recordSuccess: (request, context) => ready().implementation.recordSuccess(request, context),
      getLesson: (request, context) => ready().implementation.getLesson(request, context),
      listLessons: (request, context) => ready().implementation.listLessons(request, context),
      forgetLesson: (request, context) => ready().implementation.forgetLesson(request, context),
      importLessons: (request, context) => ready().implementation.importLessons(request, context),
      reindexLessons: (request, context) => ready().implementation.reindexLessons(request, context),
    };
    /** Not ready: why, for Health. */
    const pending = (store: 'postgres' | 'qdrant') => ({ ok: false, detail: state.failed?.store === store ? `failed: ${state.failed.error.message}` : state.waiting[store] });
    const checks: DependencyCheck[] = [
      {
        name: 'postgres',
        required: true,
        check: async () => {
          if (state.db === undefined || (state.memory === undefined && state.failed?.store === 'postgres')) return pending('postgres');
          await state.db.query('SELECT 1');
          return { ok: true, detail: 'connected' };
        },
      },
      ...(vectors === 'qdrant' ? [{ name: 'qdrant', required: true, check: async () => (state.qdrant === undefined ? pending('qdrant') : state.qdrant.check()) }] : []),
    ];
    return {
      implementation,
      checks,
      close: async () => {
        stopping.abort();
        await connecting;
        await state.memory?.close();
        await vectorDb?.close();
        await state.db?.close();
      },
    };
  },
});
