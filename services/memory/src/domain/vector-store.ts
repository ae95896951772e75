/** One vector with what it stands for. */
export interface VectorPoint {
  readonly id: string;
  readonly vector: Float32Array;
  /** Used for filtering; stored with the point. */
  readonly payload: VectorPayload;
}

/** What a point stands for, stored with it and filtered on. */
export interface VectorPayload {
  readonly kind: string;
  readonly language: string;
  /** The lesson's scope: a project key or `global`. */
  readonly scope: string;
  /** The embedder that made the vector; vectors of different embedders are never compared. */
  readonly embedder: string;
}

export interface VectorSearch {
  readonly limit: number;
  /** Results below this cosine similarity are dropped. */
  readonly minScore: number;
  /** Only points of this embedder: vectors of different embedders are not comparable. */
  readonly embedder: string;
  /** Only points whose payload matches every given key; `scopes` matches any of its values. */
  readonly filter?: { readonly kind?: string; readonly language?: string; readonly scopes?: readonly string[] };
}

export interface VectorHit {
  readonly id: string;
  /** Cosine similarity, -1..1 (1 = same direction). */
  readonly score: number;
  readonly payload: VectorPayload;
}

/** Where lesson vectors live: pgvector in embedded mode, Qdrant in distributed mode. */
export interface VectorStore {
  /** Inserts or replaces points by id. */
  upsert(points: readonly VectorPoint[]): Promise<void>;
  /** Nearest points by cosine similarity, best first. */
  search(vector: Float32Array, options: VectorSearch): Promise<VectorHit[]>;
  /** Cosine similarity of `vector` to each of `ids` that has a point made by `embedder` (exact; for scoring candidates found otherwise). */
  scores(vector: Float32Array, ids: readonly string[], embedder: string): Promise<Map<string, number>>;
  delete(ids: readonly string[]): Promise<void>;
  /** Of `ids`, those with no point made by `embedder` (to re-embed). */
  missing(ids: readonly string[], embedder: string): Promise<string[]>;
}
