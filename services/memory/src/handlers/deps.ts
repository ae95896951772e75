import { LessonStatus, type Lesson } from '@ratchet/contracts';
import type { Database } from '@ratchet/db';
import type { EmbeddingQueue } from '../adapters/embedding-queue';
import type { FailureRepository } from '../adapters/failure-repository';
import type { LessonSearch } from '../adapters/lesson-search';
import type { LessonRepository } from '../adapters/lesson-repository';
import type { OutcomeRepository } from '../adapters/outcome-repository';
import type { SuccessRepository } from '../adapters/success-repository';
import type { Embedder } from '../domain/hashing-embedder';
import { isRetired, weightOf, type StandingPolicy } from '../domain/standing';
import type { VectorStore } from '../domain/vector-store';

/** What the memory handlers share. */
export interface MemoryDeps {
  /** The memory database, for the transactions a record call spans several repositories with. */
  readonly db: Database;
  /** Lessons and their evidence. */
  readonly lessons: LessonRepository;
  /** Which embedder made each lesson's vector, and the lessons still to embed. */
  readonly embeddings: EmbeddingQueue;
  /** Task outcomes and the standing of lessons they measure. */
  readonly outcomes: OutcomeRepository;
  /** Finding lessons by signature and keyword for retrieval. */
  readonly search: LessonSearch;
  /** Failures recorded, resolved, and lessons that did not prevent one. */
  readonly failures: FailureRepository;
  /** Successes recorded, and lessons that helped. */
  readonly successes: SuccessRepository;
  readonly vectors: VectorStore;
  readonly embedder: Embedder;
  readonly now: () => Date;
  readonly standing: StandingPolicy;
  /** Most lessons kept per scope; the least useful beyond it are deleted. */
  readonly maxLessonsPerScope: number;
  /** Removes secrets from text before it is stored. */
  readonly redact: (text: string) => string;
  /** Search the vectors for candidates too; default: when the embedder is not lexical. */
  readonly searchVectors?: boolean;
  /** How much vector similarity counts against keyword relevance; default: by the embedder (`vectorWeightOf`). */
  readonly vectorWeight?: number;
}

/** The text a lesson is found by: what it says and the error it is about. */
export function lessonText(title: string, body: string, signature: string): string {
  return [title, body, signature].filter((part) => part !== '').join('\n');
}

/**
 * Lessons as the loop's calls return them (RetrieveLessons, RecordFailure,
 * RecordSuccess): their weight now (standing and age) and RETIRED when that
 * weight is below the threshold, with the counters stored on each lesson.
 * Their evidence (read without it) and the outcome comparison
 * (`presentLessonsWithOutcomes`) are left out: nothing in the loop reads
 * them, and both grow with a team's history (every task filed under a
 * lesson, every comparable task recorded), which every failed iteration
 * paid for and every task carried in its record.
 */
export function presentLessons(deps: MemoryDeps, lessons: readonly Lesson[]): Lesson[] {
  const now = deps.now();
  return lessons.map((lesson) => {
    const lastActive = new Date(Math.max(lesson.createdAt?.getTime() ?? 0, lesson.stats?.lastHelpedAt?.getTime() ?? 0));
    const weight = weightOf(lesson.status, lesson.weight, lastActive, now, deps.standing);
    const retired = isRetired(weight, deps.standing);
    return {
      ...lesson,
      weight,
      status: retired ? LessonStatus.LESSON_STATUS_RETIRED : lesson.status,
      standing: retired ? [`retired: weight ${weight.toFixed(2)} is below ${deps.standing.retireBelow}, so it is no longer offered`, ...lesson.standing] : lesson.standing,
    };
  });
}

/**
 * Lessons as a person reads them (GetLesson, ListLessons, ForgetLesson):
 * `presentLessons` with their outcome statistics, the tasks that applied
 * each against comparable tasks that did not.
 */
export async function presentLessonsWithOutcomes(deps: MemoryDeps, lessons: readonly Lesson[]): Promise<Lesson[]> {
  const outcomes = await deps.outcomes.outcomes(lessons.map((lesson) => lesson.id));
  return presentLessons(deps, lessons).map((lesson) => {
    const measured = outcomes.get(lesson.id);
    return lesson.stats === undefined || measured === undefined
      ? lesson
      : {
          ...lesson,
          stats: {
            ...lesson.stats,
            timesApplied: measured.applied,
            appliedSucceeded: measured.appliedSucceeded,
            appliedMeanIterations: measured.appliedMeanIterations,
            comparableTasks: measured.comparable,
            comparableSucceeded: measured.comparableSucceeded,
            comparableMeanIterations: measured.comparableMeanIterations,
          },
        };
  });
}
