import type { CallContext } from '@ratchet/bus';
import type {
  ForgetLessonRequest,
  ForgetLessonResponse,
  GetLessonRequest,
  GetLessonResponse,
  ImportLessonsRequest,
  ImportLessonsResponse,
  ReindexLessonsRequest,
  ReindexLessonsResponse,
  ListLessonsRequest,
  ListLessonsResponse,
  RecordFailureRequest,
  RecordFailureResponse,
  RecordSuccessRequest,
  RecordSuccessResponse,
  RetrieveLessonsRequest,
  RetrieveLessonsResponse,
} from '@ratchet/contracts';
import { createRedactor } from '@ratchet/redaction';
import type { Database } from '@ratchet/db';
import { EmbeddingQueue } from './adapters/embedding-queue';
import { FailureRepository } from './adapters/failure-repository';
import { LessonSearch } from './adapters/lesson-search';
import { LessonRepository } from './adapters/lesson-repository';
import { openMemorySchema } from './adapters/memory-schema';
import { OutcomeRepository } from './adapters/outcome-repository';
import { SuccessRepository } from './adapters/success-repository';
import { PgVectorStore } from './adapters/pgvector-store';
import { HashingEmbedder, type Embedder } from './domain/hashing-embedder';
import type { VectorStore } from './domain/vector-store';
import { defaultStandingPolicy, type StandingPolicy } from './domain/standing';
import { forgetLessonHandler, getLessonHandler, listLessonsHandler } from './handlers/get-lesson';
import { importLessonsHandler } from './handlers/import-lessons';
import { markMissingVectors, reindexBatch, reindexLessonsHandler } from './handlers/reindex-lessons';
import { recordFailureHandler } from './handlers/record-failure';
import { recordSuccessHandler } from './handlers/record-success';
import { retrieveLessonsHandler } from './handlers/retrieve-lessons';

export { LessonKind, LessonRepository } from './adapters/lesson-repository';
export { memoryMigrations } from './adapters/migrations';
export { OpenAiEmbedder } from './adapters/openai-embedder';
export type { OpenAiEmbedderConfig } from './adapters/openai-embedder';
export { PgVectorStore } from './adapters/pgvector-store';
export { DEFAULT_QDRANT_COLLECTION, pointIdOf, QdrantVectorStore } from './adapters/qdrant-store';
export type { QdrantVectorStoreOptions } from './adapters/qdrant-store';
export { cosine, HashingEmbedder } from './domain/hashing-embedder';
export type { Embedder } from './domain/hashing-embedder';
export { createEmbedder, embedderConfigSection } from './embedder-config';
export type { EmbedderSettings } from './embedder-config';
export type { VectorHit, VectorPayload, VectorPoint, VectorSearch, VectorStore } from './domain/vector-store';
export { defaultStandingPolicy, isRetired, standingOf, weightOf } from './domain/standing';
export type { LessonOutcomes, Standing, StandingPolicy } from './domain/standing';
export { GLOBAL_SCOPE, scopeOf } from './domain/scope';
export { LESSON_EXPORT_VERSION } from './handlers/import-lessons';
export { learningConfigSection, learningOptionsOf } from './learning-config';
export type { LearningSettings } from './learning-config';
export { memoryConfigSection } from './memory-config';
export type { MemorySettings } from './memory-config';

export interface MemoryServiceOptions {
  /** Lesson metadata lives here (schema `memory`); the caller owns it. */
  readonly db: Database;
  /** Default: HashingEmbedder(512). */
  readonly embedder?: Embedder;
  /** Default: pgvector in the same database (needs PGlite opened with `vector: true`). */
  readonly vectors?: VectorStore;
  readonly now?: () => Date;
  /** How outcomes and age rank lessons; default `defaultStandingPolicy`. */
  readonly standing?: StandingPolicy;
  /** Most lessons kept per scope; default 10,000. */
  readonly maxLessonsPerScope?: number;
  /** Removes secrets from text before it is stored. Default: the built-in redaction rules (config/redaction.yaml adds to them where the caller loads it). */
  readonly redact?: (text: string) => string;
  /**
   * Search the vectors for candidates, not only score those the keywords and
   * signatures found. Default: only when the embedder is not lexical (a
   * model's). A measurement can turn it on for the hashing embedder to see
   * what scoring candidates only loses.
   */
  readonly searchVectors?: boolean;
  /** How much vector similarity counts against keyword relevance, 0..1; default `vectorWeightOf(embedder)`. */
  readonly vectorWeight?: number;
  /**
   * In the background after start, find lessons whose vector the vector
   * store lacks (see `onVectorsMissing`) and re-embed every lesson lacking a
   * vector from the embedder; default true.
   */
  readonly reindexOnStart?: boolean;
  /** Told when background re-embedding fails (it stops; `ReindexLessons` resumes it). */
  readonly onReindexError?: (error: unknown) => void;
  /**
   * Told how many lessons counted as embedded had no vector in the store
   * (vectors moved to another store, or a store that lost its data); they
   * are re-embedded in the background. Not called when there are none.
   */
  readonly onVectorsMissing?: (count: number) => void;
}

// The handlers need no call context, so in-process callers (the CLI reading lessons) may leave it out.
type Handler<Q, R> = (request: Q, context?: CallContext) => Promise<R>;

export interface MemoryService {
  readonly implementation: {
    retrieveLessons: Handler<RetrieveLessonsRequest, RetrieveLessonsResponse>;
    recordFailure: Handler<RecordFailureRequest, RecordFailureResponse>;
    recordSuccess: Handler<RecordSuccessRequest, RecordSuccessResponse>;
    getLesson: Handler<GetLessonRequest, GetLessonResponse>;
    listLessons: Handler<ListLessonsRequest, ListLessonsResponse>;
    forgetLesson: Handler<ForgetLessonRequest, ForgetLessonResponse>;
    importLessons: Handler<ImportLessonsRequest, ImportLessonsResponse>;
    reindexLessons: Handler<ReindexLessonsRequest, ReindexLessonsResponse>;
  };
  /** Settles when the background re-embedding started with the service has finished or stopped. */
  readonly reindexed: Promise<void>;
  close(): Promise<void>;
}

const builtInRedactor = createRedactor();
const defaultRedact = (text: string) => builtInRedactor.redact(text).text;

/**
 * The memory service's RPCs, ready for `hostService`: lessons with evidence,
 * found by similarity (embedder + vector store) or by error signature.
 * Runs its migrations; does not close `db`.
 */
export async function createMemoryService(options: MemoryServiceOptions): Promise<MemoryService> {
  if (options.vectorWeight !== undefined && !(options.vectorWeight >= 0 && options.vectorWeight <= 1)) throw new RangeError(`vectorWeight is ${options.vectorWeight}; use 0 to 1`);
  await openMemorySchema(options.db);
  const deps = {
    db: options.db,
    lessons: new LessonRepository(options.db),
    embeddings: new EmbeddingQueue(options.db),
    outcomes: new OutcomeRepository(options.db),
    search: new LessonSearch(options.db),
    failures: new FailureRepository(),
    successes: new SuccessRepository(),
    vectors: options.vectors ?? (await PgVectorStore.open(options.db)),
    embedder: options.embedder ?? new HashingEmbedder(),
    now: options.now ?? (() => new Date()),
    standing: options.standing ?? defaultStandingPolicy,
    maxLessonsPerScope: options.maxLessonsPerScope ?? 10_000,
    redact: options.redact ?? defaultRedact,
    ...(options.searchVectors === undefined ? {} : { searchVectors: options.searchVectors }),
    ...(options.vectorWeight === undefined ? {} : { vectorWeight: options.vectorWeight }),
  };
  // After the embedder changed, lessons are re-embedded a batch at a time; retrieval skips them meanwhile.
  let closing = false;
  const reindexed =
    options.reindexOnStart === false
      ? Promise.resolve()
      : (async () => {
          try {
            const missing = await markMissingVectors(deps, 500, () => closing);
            if (missing > 0) options.onVectorsMissing?.(missing);
            while (!closing && (await reindexBatch(deps, 100)) > 0);
          } catch (error) {
            options.onReindexError?.(error);
          }
        })();
  return {
    implementation: {
      retrieveLessons: retrieveLessonsHandler(deps),
      recordFailure: recordFailureHandler(deps),
      recordSuccess: recordSuccessHandler(deps),
      getLesson: getLessonHandler(deps),
      listLessons: listLessonsHandler(deps),
      forgetLesson: forgetLessonHandler(deps),
      importLessons: importLessonsHandler(deps),
      reindexLessons: reindexLessonsHandler(deps),
    },
    reindexed,
    close: async () => {
      closing = true;
      await reindexed;
    },
  };
}
