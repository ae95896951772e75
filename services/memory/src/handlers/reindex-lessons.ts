import type { ReindexLessonsRequest, ReindexLessonsResponse } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import { lessonText, type MemoryDeps } from './deps';

const defaultBatch = 200;
const maxBatch = 1_000;

/**
 * ReindexLessons: embeds up to a batch of lessons whose vector is not from
 * the current embedder and replaces their vectors, so after the embedder
 * changes every lesson becomes findable again; until then retrieval skips
 * them rather than compare vectors of different embedders.
 *
 * @throws AppError INVALID_ARGUMENT for a batch size outside 0..1000; the
 *   embedder's errors (an endpoint that is down is UNAVAILABLE).
 */
export function reindexLessonsHandler(deps: MemoryDeps) {
  return async (request: ReindexLessonsRequest): Promise<ReindexLessonsResponse> => {
    if (request.batchSize < 0 || request.batchSize > maxBatch) throw new AppError(ErrorCode.INVALID_ARGUMENT, `batch_size is ${request.batchSize}; use 1 to ${maxBatch} (0 for ${defaultBatch})`);
    const reindexed = await reindexBatch(deps, request.batchSize === 0 ? defaultBatch : request.batchSize);
    return { embedder: deps.embedder.id, reindexed, remaining: await deps.embeddings.countToEmbed(deps.embedder.id) };
  };
}

/** Embeds one batch of lessons lacking a vector from the current embedder; returns how many. */
export async function reindexBatch(deps: MemoryDeps, size: number): Promise<number> {
  const batch = await deps.embeddings.toEmbed(deps.embedder.id, size);
  if (batch.length === 0) return 0;
  const vectors = await deps.embedder.embed(batch.map((lesson) => lessonText(lesson.title, lesson.body, lesson.errorSignature)));
  await deps.vectors.upsert(
    batch.map((lesson, index) => ({
      id: lesson.id,
      vector: vectors[index] as Float32Array,
      payload: { kind: lesson.kind, language: lesson.language, scope: lesson.scope, embedder: deps.embedder.id },
    })),
  );
  await deps.embeddings.setEmbedder(
    batch.map((lesson) => lesson.id),
    deps.embedder.id,
  );
  return batch.length;
}

/**
 * Finds lessons the metadata counts as embedded by the current embedder
 * whose vector the vector store lacks (vectors moved to another store, such
 * as from pgvector to Qdrant, or a store that lost its data), and marks them
 * as lacking one, so `reindexBatch` embeds them again. Pages through the
 * lessons `pageSize` at a time; stops early when `stopped()` says so.
 *
 * @returns how many lessons were marked.
 */
export async function markMissingVectors(deps: MemoryDeps, pageSize: number, stopped: () => boolean = () => false): Promise<number> {
  let marked = 0;
  let after = '';
  while (!stopped()) {
    const ids = await deps.embeddings.embeddedWith(deps.embedder.id, after, pageSize);
    if (ids.length === 0) break;
    const missing = await deps.vectors.missing(ids, deps.embedder.id);
    // No embedder is named '': reindexBatch takes these up like those of an old embedder.
    await deps.embeddings.setEmbedder(missing, '');
    marked += missing.length;
    after = ids[ids.length - 1] as string;
  }
  return marked;
}
