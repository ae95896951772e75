/** Turns texts into vectors of a fixed dimension. */
export interface Embedder {
  readonly dimension: number;
  /** Names the model and its settings; vectors of different ids are not comparable. */
  readonly id: string;
  /**
   * Its vectors are made of the text's words, so a lesson sharing no word
   * with a query is not near it: retrieval then finds candidates by keywords
   * and scores their vectors, instead of searching every vector.
   */
  readonly lexical: boolean;
  embed(texts: readonly string[]): Promise<Float32Array[]>;
}

/**
 * A local embedder that needs no network and no model: lower-cased word
 * unigrams and bigrams plus character 3-5-grams of each word, hashed (FNV-1a)
 * into `dimension` buckets with a sign bit, weighted 1 + ln(count), then
 * L2-normalised. Similar wording scores high under cosine similarity; it
 * knows nothing of synonyms, which a model embedder behind the same port would.
 */
export class HashingEmbedder implements Embedder {
  readonly id: string;
  readonly lexical = true;

  constructor(readonly dimension = 512) {
    if (!Number.isInteger(dimension) || dimension < 16) throw new RangeError(`dimension must be an integer >= 16, got ${dimension}`);
    this.id = `hashing-v1-${dimension}`;
  }

  embed(texts: readonly string[]): Promise<Float32Array[]> {
    return Promise.resolve(texts.map((text) => this.embedOne(text)));
  }

  private embedOne(text: string): Float32Array {
    const counts = new Map<string, number>();
    const add = (feature: string, weight = 1) => counts.set(feature, (counts.get(feature) ?? 0) + weight);
    const words = text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
    for (let index = 0; index < words.length; index += 1) {
      const word = words[index] as string;
      add(`w:${word}`, 2);
      if (index + 1 < words.length) add(`b:${word} ${words[index + 1]}`, 1.5);
      const padded = `<${word}>`;
      for (let size = 3; size <= 5; size += 1) {
        for (let start = 0; start + size <= padded.length; start += 1) add(`c:${padded.slice(start, start + size)}`, 0.5);
      }
    }
    const vector = new Float32Array(this.dimension);
    for (const [feature, count] of counts) {
      const hash = fnv1a(feature);
      const sign = (hash & 0x80000000) === 0 ? 1 : -1;
      vector[hash % this.dimension] = (vector[hash % this.dimension] ?? 0) + sign * (1 + Math.log(count));
    }
    let norm = 0;
    for (const value of vector) norm += value * value;
    norm = Math.sqrt(norm);
    if (norm > 0) for (let index = 0; index < vector.length; index += 1) vector[index] = (vector[index] as number) / norm;
    return vector;
  }
}

function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let index = 0; index < text.length; index += 1) {
    hash ^= text.charCodeAt(index);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

/** Cosine similarity of two normalised vectors. */
export function cosine(left: Float32Array, right: Float32Array): number {
  let sum = 0;
  for (let index = 0; index < left.length; index += 1) sum += (left[index] as number) * (right[index] as number);
  return sum;
}
