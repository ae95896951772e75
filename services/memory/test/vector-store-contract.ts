import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { VectorStore } from '../src';

const unit = (...values: number[]) => {
  const vector = new Float32Array(values);
  const norm = Math.hypot(...values);
  return vector.map((value) => value / norm);
};

/**
 * What every VectorStore must do, for pgvector now and Qdrant later (run it
 * against a QdrantVectorStore when QDRANT_URL is set).
 */
export function vectorStoreContract(name: string, open: () => Promise<{ store: VectorStore; close: () => Promise<void> }>): void {
  describe(`VectorStore contract: ${name}`, () => {
    let store: VectorStore;
    let close: () => Promise<void>;
    beforeAll(async () => {
      ({ store, close } = await open());
      await store.upsert([
        { id: 'a', vector: unit(1, 0, 0, 0), payload: { kind: 'lesson', language: 'python', scope: 'global', embedder: 'e1' } },
        { id: 'b', vector: unit(0.9, 0.1, 0, 0), payload: { kind: 'lesson', language: 'typescript', scope: 'project-a', embedder: 'e1' } },
        { id: 'c', vector: unit(0, 0, 1, 0), payload: { kind: 'success-pattern', language: 'python', scope: 'global', embedder: 'e1' } },
      ]);
    });
    afterAll(async () => {
      await close();
    });

    it('returns the nearest points by cosine similarity, best first', async () => {
      const hits = await store.search(unit(1, 0, 0, 0), { limit: 3, minScore: -1, embedder: 'e1' });
      expect(hits.map((hit) => hit.id)).toEqual(['a', 'b', 'c']);
      expect(hits[0]!.score).toBeCloseTo(1, 5);
      expect(hits[2]!.score).toBeCloseTo(0, 5);
      expect(hits[1]!.payload).toEqual({ kind: 'lesson', language: 'typescript', scope: 'project-a', embedder: 'e1' });
    });

    it('honours limit, minimum score and payload filters', async () => {
      expect((await store.search(unit(1, 0, 0, 0), { limit: 1, minScore: 0, embedder: 'e1' })).map((hit) => hit.id)).toEqual(['a']);
      expect((await store.search(unit(1, 0, 0, 0), { limit: 10, minScore: 0.5, embedder: 'e1' })).map((hit) => hit.id)).toEqual(['a', 'b']);
      expect((await store.search(unit(1, 0, 0, 0), { limit: 10, minScore: -1, embedder: 'e1', filter: { language: 'python' } })).map((hit) => hit.id)).toEqual(['a', 'c']);
      expect((await store.search(unit(1, 0, 0, 0), { limit: 10, minScore: -1, embedder: 'e1', filter: { kind: 'success-pattern' } })).map((hit) => hit.id)).toEqual(['c']);
      expect((await store.search(unit(1, 0, 0, 0), { limit: 10, minScore: -1, embedder: 'e1', filter: { scopes: ['global'] } })).map((hit) => hit.id)).toEqual(['a', 'c']);
      expect((await store.search(unit(1, 0, 0, 0), { limit: 10, minScore: -1, embedder: 'e1', filter: { scopes: ['project-a', 'global'] } })).map((hit) => hit.id)).toEqual(['a', 'b', 'c']);
      expect(await store.search(unit(1, 0, 0, 0), { limit: 10, minScore: -1, embedder: 'e1', filter: { scopes: [] } })).toEqual([]);
    });

    it('never compares vectors of different embedders, and says which points lack one', async () => {
      await store.upsert([{ id: 'd', vector: unit(1, 0, 0, 0, 0), payload: { kind: 'lesson', language: 'python', scope: 'global', embedder: 'e2' } }]);
      expect((await store.search(unit(1, 0, 0, 0, 0), { limit: 10, minScore: -1, embedder: 'e2' })).map((hit) => hit.id)).toEqual(['d']);
      expect((await store.search(unit(1, 0, 0, 0), { limit: 10, minScore: -1, embedder: 'e1' })).map((hit) => hit.id)).not.toContain('d');
      expect(await store.missing(['a', 'd', 'zz'], 'e2')).toEqual(['a', 'zz']);
      await store.delete(['d']);
    });

    it('scores the given points exactly, only those of the embedder', async () => {
      await store.upsert([{ id: 'e', vector: unit(0, 1, 0, 0, 0), payload: { kind: 'lesson', language: 'python', scope: 'global', embedder: 'e2' } }]);
      const scores = await store.scores(unit(1, 1, 0, 0), ['a', 'b', 'e', 'zz'], 'e1');
      expect([...scores.keys()].sort()).toEqual(['a', 'b']);
      expect(scores.get('a')).toBeCloseTo(Math.SQRT1_2, 5);
      expect(scores.get('b')).toBeCloseTo((0.9 + 0.1) / Math.hypot(0.9, 0.1) / Math.SQRT2, 5);
      expect(await store.scores(unit(1, 0, 0, 0), [], 'e1')).toEqual(new Map());
      await store.delete(['e']);
    });

    it('replaces a point on upsert and forgets deleted ones', async () => {
      await store.upsert([{ id: 'c', vector: unit(1, 0, 0, 0), payload: { kind: 'success-pattern', language: 'python', scope: 'global', embedder: 'e1' } }]);
      expect((await store.search(unit(1, 0, 0, 0), { limit: 10, minScore: 0.999, embedder: 'e1' })).map((hit) => hit.id).sort()).toEqual(['a', 'c']);
      await store.delete(['c']);
      await store.delete([]);
      expect((await store.search(unit(1, 0, 0, 0), { limit: 10, minScore: -1, embedder: 'e1' })).map((hit) => hit.id)).toEqual(['a', 'b']);
    });
  });
}
