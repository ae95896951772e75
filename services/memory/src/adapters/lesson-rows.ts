import { Language, languageFromJSON, languageToJSON, LessonKind as LessonKindProto, LessonStatus, type Lesson, type LessonEvidence } from '@ratchet/contracts';

// How lessons are stored and read back, shared by the repositories over the `memory` schema.

/** What a lesson is: advice from a failure, or the record of a success. */
export const LessonKind = { LESSON: 'lesson', SUCCESS_PATTERN: 'success-pattern' } as const;
export type LessonKind = (typeof LessonKind)[keyof typeof LessonKind];

/** How a status is stored. */
const statusNames = { [LessonStatus.LESSON_STATUS_CANDIDATE]: 'candidate', [LessonStatus.LESSON_STATUS_PROMOTED]: 'promoted', [LessonStatus.LESSON_STATUS_DEMOTED]: 'demoted' } as Partial<Record<LessonStatus, string>>;
export const statusOfName = (name: string) => (name === 'promoted' ? LessonStatus.LESSON_STATUS_PROMOTED : name === 'demoted' ? LessonStatus.LESSON_STATUS_DEMOTED : LessonStatus.LESSON_STATUS_CANDIDATE);
/** The stored name of a status (retired is not stored: it follows from the weight). */
export const statusName = (status: LessonStatus) => statusNames[status] ?? 'candidate';

export interface LessonRow {
  id: string;
  kind: string;
  scope: string;
  status: string;
  helpfulness: number | string;
  standing: string[];
  origin_task_id: string;
  embedder: string;
  last_helped_at: Date | string | null;
  title: string;
  body: string;
  error_signature: string;
  tags: string[];
  language: string;
  times_retrieved: string | number;
  times_helped: string | number;
  times_not_helped: string | number;
  last_retrieved_at: Date | string | null;
  created_at: Date | string;
  updated_at: Date | string;
  evidence?: { taskId: string; iteration: number; failureSummary: string; fixSummary: string; recordedAt: Date | string }[];
}

export const date = (value: Date | string) => (value instanceof Date ? value : new Date(value));

export const languageKey = (language: Language) => (language === Language.LANGUAGE_UNSPECIFIED ? '' : languageToJSON(language));

/** Evidence of a lesson row as a JSON array, so lessons and their evidence come back in one statement. */
export const evidenceColumn = `coalesce((SELECT json_agg(json_build_object('taskId', e.task_id, 'iteration', e.iteration, 'failureSummary', e.failure_summary, 'fixSummary', e.fix_summary, 'recordedAt', e.recorded_at) ORDER BY e.id)
  FROM memory.evidence e WHERE e.lesson_id = l.id), '[]'::json) AS evidence`;

/**
 * An empty evidence column, for the loop's calls: a lesson's evidence grows
 * with every task filed under it, and the loop reads none of it (see
 * `presentLessons`).
 */
export const noEvidenceColumn = `'[]'::json AS evidence`;

export function inOrder(ids: readonly string[], rows: readonly LessonRow[]): Lesson[] {
  const byId = new Map(rows.map((row) => [row.id, row]));
  return ids.flatMap((id) => {
    const row = byId.get(id);
    if (row === undefined) return [];
    const evidence = (row.evidence ?? []).map((item) => ({ ...item, recordedAt: date(item.recordedAt) }));
    return [toLesson(row, evidence)];
  });
}

function toLesson(row: LessonRow, evidence: LessonEvidence[]): Lesson {
  return {
    id: row.id,
    title: row.title,
    body: row.body,
    errorSignature: row.error_signature,
    tags: row.kind === LessonKind.SUCCESS_PATTERN && !row.tags.includes(LessonKind.SUCCESS_PATTERN) ? [...row.tags, LessonKind.SUCCESS_PATTERN] : row.tags,
    language: languageFromJSON(row.language),
    evidence,
    stats: {
      timesRetrieved: Number(row.times_retrieved),
      timesHelped: Number(row.times_helped),
      timesNotHelped: Number(row.times_not_helped),
      lastRetrievedAt: row.last_retrieved_at === null ? undefined : date(row.last_retrieved_at),
      timesApplied: 0,
      appliedSucceeded: 0,
      appliedMeanIterations: 0,
      comparableTasks: 0,
      comparableSucceeded: 0,
      comparableMeanIterations: 0,
      lastHelpedAt: row.last_helped_at === null ? undefined : date(row.last_helped_at),
    },
    createdAt: date(row.created_at),
    updatedAt: date(row.updated_at),
    kind: row.kind === LessonKind.SUCCESS_PATTERN ? LessonKindProto.LESSON_KIND_SUCCESS_PATTERN : LessonKindProto.LESSON_KIND_FAILURE,
    status: statusOfName(row.status),
    scope: row.scope,
    embedder: row.embedder,
    // Weight and retirement depend on the time of reading; the handlers fill them in.
    weight: Number(row.helpfulness),
    standing: row.standing,
  };
}
