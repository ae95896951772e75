import type { Embedder } from '../domain/hashing-embedder';
import type { VectorStore } from '../domain/vector-store';
import type { LessonStore } from '../adapters/lesson-store';

/** What the memory handlers share. */
export interface MemoryDeps {
  readonly store: LessonStore;
  readonly vectors: VectorStore;
  readonly embedder: Embedder;
  readonly now: () => Date;
}

/** The text a lesson is found by: what it says and the error it is about. */
export function lessonText(title: string, body: string, signature: string): string {
  return [title, body, signature].filter((part) => part !== '').join('\n');
}
