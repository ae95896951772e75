import { randomUUID } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import { Language } from '@ratchet/contracts';
import { openPglite, type Database } from '@ratchet/db';
import { createMemoryService, HashingEmbedder, PgVectorStore, pointIdOf, QdrantVectorStore, type VectorStore } from '../src';
import { vectorStoreContract } from './vector-store-contract';

jest.setTimeout(60_000);

vectorStoreContract('pgvector on PGlite', async () => {
  const db = await openPglite({ vector: true });
  return { store: await PgVectorStore.open(db), close: () => db.close() };
});

// A real Qdrant (1.10 or later) runs these, e.g. QDRANT_URL=http://127.0.0.1:6333 (plus QDRANT_API_KEY when it has one).
const qdrantUrl = process.env['QDRANT_URL']?.trim() || undefined;
const qdrantApiKey = process.env['QDRANT_API_KEY']?.trim() || undefined;
const skip = qdrantUrl === undefined ? 'QDRANT_URL not set' : undefined;
if (skip !== undefined) console.warn('QDRANT_URL not set: skipped the Qdrant vector-store contract');

/** A collection of its own per run, deleted afterwards. */
const collectionName = () => `ratchet_test_${randomUUID().replace(/-/g, '')}`;
const openQdrant = (collection: string, dimension?: number) =>
  QdrantVectorStore.open({ url: qdrantUrl as string, collection, ...(dimension === undefined ? {} : { dimension }), ...(qdrantApiKey === undefined ? {} : { apiKey: qdrantApiKey }) });

vectorStoreContract(
  'Qdrant',
  async () => {
    const store = await openQdrant(collectionName(), 4);
    return { store, close: () => store.dropCollection() };
  },
  { oneDimension: true, ...(skip === undefined ? {} : { skip }) },
);

const unit = (...values: number[]) => {
  const norm = Math.hypot(...values);
  return Float32Array.from(values, (value) => value / norm);
};
const payload = { kind: 'lesson', language: 'python', scope: 'global', embedder: 'e1' };

(skip === undefined ? describe : describe.skip)(`QdrantVectorStore on a real Qdrant${skip === undefined ? '' : ` (skipped: ${skip})`}`, () => {
  /** Qdrant's REST API as it is, to see what the store wrote. */
  const rest = async (pathname: string): Promise<{ result: Record<string, unknown> }> => {
    const response = await fetch(`${(qdrantUrl as string).replace(/\/$/, '')}${pathname}`, { headers: qdrantApiKey === undefined ? {} : { 'api-key': qdrantApiKey } });
    return (await response.json()) as { result: Record<string, unknown> };
  };

  it('creates the collection with the dimension and cosine distance, keyword indexes on the filtered fields, and UUID point ids keeping the lesson id', async () => {
    const collection = collectionName();
    const store = await openQdrant(collection, 8);
    try {
      const info = (await rest(`/collections/${collection}`)).result as { config: { params: { vectors: unknown } }; payload_schema: Record<string, { data_type: string }> };
      expect(info.config.params.vectors).toMatchObject({ size: 8, distance: 'Cosine' });
      expect(Object.fromEntries(Object.entries(info.payload_schema).map(([key, index]) => [key, index.data_type]))).toEqual({ embedder: 'keyword', scope: 'keyword', kind: 'keyword', language: 'keyword' });
      await store.upsert([{ id: 'lesson-1', vector: unit(1, 2, 3, 4, 5, 6, 7, 8), payload }]);
      const point = (await rest(`/collections/${collection}/points/${pointIdOf('lesson-1')}`)).result;
      expect(point).toMatchObject({ id: pointIdOf('lesson-1'), payload: { lesson_id: 'lesson-1', ...payload } });
      expect(await store.check()).toEqual({ ok: true, detail: `connected; collection ${collection}, 8 dimensions` });
    } finally {
      await store.dropCollection();
    }
  });

  it('refuses an existing collection of another dimension, saying what to set', async () => {
    const collection = collectionName();
    const store = await openQdrant(collection, 8);
    try {
      await expect(openQdrant(collection, 16)).rejects.toMatchObject({
        code: 'FAILED_PRECONDITION',
        message: expect.stringMatching(/holds vectors of 8 dimensions, but the configured embedder makes 16.*RATCHET_MEMORY_QDRANT_COLLECTION/),
      });
    } finally {
      await store.dropCollection();
    }
  });

  it('creates the collection with the first upsert when the dimension is unknown at open, and again when it was deleted meanwhile', async () => {
    const collection = collectionName();
    const store = await openQdrant(collection);
    try {
      expect(await store.check()).toMatchObject({ ok: true, detail: expect.stringContaining('created with the first lesson') });
      expect(await store.search(unit(1, 0, 0, 0, 0, 0), { limit: 5, minScore: -1, embedder: 'e1' })).toEqual([]);
      expect(await store.missing(['x'], 'e1')).toEqual(['x']);
      await store.delete(['x']);
      await store.upsert([{ id: 'x', vector: unit(1, 0, 0, 0, 0, 0), payload }]);
      const other = await openQdrant(collection, 6);
      expect((await other.search(unit(1, 0, 0, 0, 0, 0), { limit: 5, minScore: 0.5, embedder: 'e1' })).map((hit) => hit.id)).toEqual(['x']);
      await other.dropCollection();
      await store.upsert([{ id: 'y', vector: unit(0, 1, 0, 0, 0, 0), payload }]);
      expect(await store.missing(['x', 'y'], 'e1')).toEqual(['x']);
    } finally {
      await store.dropCollection();
    }
  });

  it('refuses a wrong API key as UNAUTHENTICATED, naming the variable', async () => {
    if (qdrantApiKey === undefined) return void console.warn('QDRANT_API_KEY not set: the API key refusal was not tried');
    await expect(QdrantVectorStore.open({ url: qdrantUrl as string, apiKey: `wrong-${randomUUID()}`, collection: collectionName() })).rejects.toMatchObject({
      code: 'UNAUTHENTICATED',
      isRetryable: false,
      message: expect.stringContaining('RATCHET_MEMORY_QDRANT_API_KEY'),
    });
  });
});

/**
 * Lessons recorded with vectors in one store, then the service started with
 * vectors in another that lacks them (as after switching memory.vectors).
 */
async function switchStores(db: Database, target: VectorStore): Promise<{ ids: string[]; missing: number[] }> {
  const first = await createMemoryService({ db });
  const ids: string[] = [];
  for (const [index, title] of ['Close files in a finally block', 'Quote shell arguments', 'Pin dependency versions'].entries()) {
    const recorded = await first.implementation.recordFailure({
      taskId: `switch-${index}`,
      iteration: 1,
      goal: `task ${index}`,
      language: Language.LANGUAGE_PYTHON,
      error: { code: 'TESTS_FAILED', message: `failure ${index}`, retryable: false, signature: '', detail: '' },
      failureSummary: 'it failed',
      candidateLesson: { title, body: `${title}: it matters.`, errorSignature: `SwitchError: ${index}`, tags: [], language: Language.LANGUAGE_PYTHON },
      retrievedLessonIds: [],
      scope: '',
      appliedLessonIds: [],
    idempotencyKey: '',
    });
    ids.push(recorded.lesson?.id as string);
  }
  await first.close();
  const missing: number[] = [];
  const second = await createMemoryService({ db, vectors: target, onVectorsMissing: (count) => missing.push(count) });
  await second.reindexed;
  await second.close();
  return { ids, missing };
}

describe('switching vector stores', () => {
  it('embeds again, on start, the lessons whose vectors the new store lacks (pgvector to another pgvector)', async () => {
    const db = await openPglite({ vector: true });
    const elsewhere = await openPglite({ vector: true });
    try {
      const target = await PgVectorStore.open(elsewhere);
      const { ids, missing } = await switchStores(db, target);
      expect(missing).toEqual([3]);
      expect(await target.missing(ids, new HashingEmbedder().id)).toEqual([]);
      // Nothing is missing any more: a restart finds nothing to do.
      const again: number[] = [];
      const third = await createMemoryService({ db, vectors: target, onVectorsMissing: (count) => again.push(count) });
      await third.reindexed;
      await third.close();
      expect(again).toEqual([]);
    } finally {
      await db.close();
      await elsewhere.close();
    }
  });

  (skip === undefined ? it : it.skip)(`embeds again, on start, the lessons whose vectors Qdrant lacks (pgvector to Qdrant)${skip === undefined ? '' : ` (skipped: ${skip})`}`, async () => {
    const db = await openPglite({ vector: true });
    const target = await openQdrant(collectionName(), new HashingEmbedder().dimension);
    try {
      const { ids, missing } = await switchStores(db, target);
      expect(missing).toEqual([3]);
      expect(await target.missing(ids, new HashingEmbedder().id)).toEqual([]);
    } finally {
      await target.dropCollection();
      await db.close();
    }
  });
});
