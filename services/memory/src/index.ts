import type { CallContext } from '@ratchet/bus';
import type {
  GetLessonRequest,
  GetLessonResponse,
  ListLessonsRequest,
  ListLessonsResponse,
  RecordFailureRequest,
  RecordFailureResponse,
  RecordSuccessRequest,
  RecordSuccessResponse,
  RetrieveLessonsRequest,
  RetrieveLessonsResponse,
} from '@ratchet/contracts';
import type { Database } from '@ratchet/db';
import { LessonStore } from './adapters/lesson-store';
import { PgVectorStore } from './adapters/pgvector-store';
import { HashingEmbedder, type Embedder } from './domain/hashing-embedder';
import type { VectorStore } from './domain/vector-store';
import { getLessonHandler, listLessonsHandler } from './handlers/get-lesson';
import { recordFailureHandler } from './handlers/record-failure';
import { recordSuccessHandler } from './handlers/record-success';
import { retrieveLessonsHandler } from './handlers/retrieve-lessons';

export { LessonKind, LessonStore } from './adapters/lesson-store';
export { memoryMigrations } from './adapters/migrations';
export { OpenAiEmbedder } from './adapters/openai-embedder';
export type { OpenAiEmbedderConfig } from './adapters/openai-embedder';
export { PgVectorStore } from './adapters/pgvector-store';
export { cosine, HashingEmbedder } from './domain/hashing-embedder';
export type { Embedder } from './domain/hashing-embedder';
export { createEmbedder, embedderConfigSection } from './embedder-config';
export type { EmbedderSettings } from './embedder-config';
export type { VectorHit, VectorPoint, VectorSearch, VectorStore } from './domain/vector-store';

export interface MemoryServiceOptions {
  /** Lesson metadata lives here (schema `memory`); the caller owns it. */
  readonly db: Database;
  /** Default: HashingEmbedder(512). */
  readonly embedder?: Embedder;
  /** Default: pgvector in the same database (needs PGlite opened with `vector: true`). */
  readonly vectors?: VectorStore;
  readonly now?: () => Date;
}

type Handler<Q, R> = (request: Q, context: CallContext) => Promise<R>;

export interface MemoryService {
  readonly implementation: {
    retrieveLessons: Handler<RetrieveLessonsRequest, RetrieveLessonsResponse>;
    recordFailure: Handler<RecordFailureRequest, RecordFailureResponse>;
    recordSuccess: Handler<RecordSuccessRequest, RecordSuccessResponse>;
    getLesson: Handler<GetLessonRequest, GetLessonResponse>;
    listLessons: Handler<ListLessonsRequest, ListLessonsResponse>;
  };
  close(): Promise<void>;
}

/**
 * The memory service's RPCs, ready for `hostService`: lessons with evidence,
 * found by similarity (embedder + vector store) or by error signature.
 * Runs its migrations; does not close `db`.
 */
export async function createMemoryService(options: MemoryServiceOptions): Promise<MemoryService> {
  const store = await LessonStore.open(options.db);
  const deps = {
    store,
    vectors: options.vectors ?? (await PgVectorStore.open(options.db)),
    embedder: options.embedder ?? new HashingEmbedder(),
    now: options.now ?? (() => new Date()),
  };
  return {
    implementation: {
      retrieveLessons: retrieveLessonsHandler(deps),
      recordFailure: recordFailureHandler(deps),
      recordSuccess: recordSuccessHandler(deps),
      getLesson: getLessonHandler(deps),
      listLessons: listLessonsHandler(deps),
    },
    close: () => Promise.resolve(),
  };
}
