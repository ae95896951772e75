/** One vector with what it stands for. */
export interface VectorPoint {
  readonly id: string;
  readonly vector: Float32Array;
  /** Used for filtering; stored with the point. */
  readonly payload: { readonly kind: string; readonly language: string };
}

export interface VectorSearch {
  readonly limit: number;
  /** Results below this cosine similarity are dropped. */
  readonly minScore: number;
  /** Only points whose payload matches every given key. */
  readonly filter?: { readonly kind?: string; readonly language?: string };
}

export interface VectorHit {
  readonly id: string;
  /** Cosine similarity, -1..1 (1 = same direction). */
  readonly score: number;
  readonly payload: { readonly kind: string; readonly language: string };
}

/** Where lesson vectors live: pgvector in embedded mode, Qdrant in distributed mode. */
export interface VectorStore {
  /** Inserts or replaces points by id. */
  upsert(points: readonly VectorPoint[]): Promise<void>;
  /** Nearest points by cosine similarity, best first. */
  search(vector: Float32Array, options: VectorSearch): Promise<VectorHit[]>;
  delete(ids: readonly string[]): Promise<void>;
}
