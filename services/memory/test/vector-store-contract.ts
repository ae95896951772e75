import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { VectorStore } from '../src';

const unit = (...values: number[]) => {
  const vector = new Float32Array(values);
  const norm = Math.hypot(...values);
  return vector.map((value) => value / norm);
};

export interface VectorStoreContractOptions {
  /**
   * The store holds vectors of one dimension (a Qdrant collection): the
   * second embedder's vectors then have the first one's length, and a vector
   * of another length is refused. Otherwise (pgvector) they are longer.
   */
  readonly oneDimension?: boolean;
  /** Why the store cannot run here: the whole suite is skipped, and jest lists it as skipped. */
  readonly skip?: string;
}

/** What every VectorStore must do: pgvector always, Qdrant when QDRANT_URL names one. */
export function vectorStoreContract(name: string, open: () => Promise<{ store: VectorStore; close: () => Promise<void> }>, options: VectorStoreContractOptions = {}): void {
  // The second embedder's vectors: never compared with the first one's, whatever their length.
  const other = (...values: number[]) => (options.oneDimension === true ? unit(...values.slice(0, 4)) : unit(...values, 0));
  (options.skip === undefined ? describe : describe.skip)(`VectorStore contract: ${name}${options.skip === undefined ? '' : ` (skipped: ${options.skip})`}`, () => {
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
      expect(await store.search(unit(1, 0, 0, 0), { limit: 0, minScore: -1, embedder: 'e1' })).toEqual([]);
      expect(await store.search(unit(1, 0, 0, 0), { limit: 10, minScore: -1, embedder: 'nobody' })).toEqual([]);
    });

    it('takes the same point twice in one upsert as its last version, and answers repeated ids once', async () => {
      await store.upsert([
        { id: 'f', vector: unit(0, 0, 0, 1), payload: { kind: 'lesson', language: 'go', scope: 'global', embedder: 'e1' } },
        { id: 'f', vector: unit(0, 1, 0, 0), payload: { kind: 'lesson', language: 'rust', scope: 'global', embedder: 'e1' } },
      ]);
      const [hit] = await store.search(unit(0, 1, 0, 0), { limit: 1, minScore: -1, embedder: 'e1' });
      expect(hit).toEqual({ id: 'f', score: expect.closeTo(1, 5), payload: { kind: 'lesson', language: 'rust', scope: 'global', embedder: 'e1' } });
      expect([...(await store.scores(unit(0, 1, 0, 0), ['f', 'f'], 'e1')).keys()]).toEqual(['f']);
      await store.delete(['f', 'f']);
      expect(await store.missing(['f'], 'e1')).toEqual(['f']);
    });

    it('never compares vectors of different embedders, and says which points lack one', async () => {
      await store.upsert([{ id: 'd', vector: other(1, 0, 0, 0), payload: { kind: 'lesson', language: 'python', scope: 'global', embedder: 'e2' } }]);
      expect((await store.search(other(1, 0, 0, 0), { limit: 10, minScore: -1, embedder: 'e2' })).map((hit) => hit.id)).toEqual(['d']);
      expect((await store.search(unit(1, 0, 0, 0), { limit: 10, minScore: -1, embedder: 'e1' })).map((hit) => hit.id)).not.toContain('d');
      expect(await store.missing(['a', 'd', 'zz'], 'e2')).toEqual(['a', 'zz']);
      await store.delete(['d']);
    });

    it('scores the given points exactly, only those of the embedder', async () => {
      await store.upsert([{ id: 'e', vector: other(0, 1, 0, 0), payload: { kind: 'lesson', language: 'python', scope: 'global', embedder: 'e2' } }]);
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
      await store.delete(['never-stored']);
      expect((await store.search(unit(1, 0, 0, 0), { limit: 10, minScore: -1, embedder: 'e1' })).map((hit) => hit.id)).toEqual(['a', 'b']);
      expect(await store.missing(['a', 'c'], 'e1')).toEqual(['c']);
    });

    if (options.oneDimension === true) {
      it('refuses vectors of another dimension than the store holds, saying what to do, and finds nothing for them', async () => {
        await expect(store.upsert([{ id: 'g', vector: unit(1, 0, 0, 0, 0), payload: { kind: 'lesson', language: 'python', scope: 'global', embedder: 'e3' } }])).rejects.toMatchObject({
          code: 'FAILED_PRECONDITION',
          message: expect.stringMatching(/holds vectors of 4 dimensions, but embedder e3 makes 5.*RATCHET_MEMORY_QDRANT_COLLECTION/),
        });
        expect(await store.search(unit(1, 0, 0, 0, 0), { limit: 10, minScore: -1, embedder: 'e3' })).toEqual([]);
        expect(await store.scores(unit(1, 0, 0, 0, 0), ['a'], 'e1')).toEqual(new Map());
      });
    }
  });
}
