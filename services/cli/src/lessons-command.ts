import { randomUUID } from 'node:crypto';
import { link, readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Language, Lesson, LessonKind, LessonStatus, type ListLessonsRequest } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import { languageToProto, parseLanguageName } from '@ratchet/agent';
import { LESSON_EXPORT_VERSION } from '@ratchet/memory';
import { openApi, type ConnectOptions, type LessonApi } from './api';
import { consoleOutput, type Output } from './commands';
import { oneLine } from './render';

/** The `ratchet lessons export` file: a format name and version, then the lessons as their proto JSON. */
export const lessonExportFormat = 'ratchet-lessons';

const statusByName: Readonly<Record<string, LessonStatus>> = {
  candidate: LessonStatus.LESSON_STATUS_CANDIDATE,
  promoted: LessonStatus.LESSON_STATUS_PROMOTED,
  demoted: LessonStatus.LESSON_STATUS_DEMOTED,
  retired: LessonStatus.LESSON_STATUS_RETIRED,
};
const statusText = (status: LessonStatus) => Object.entries(statusByName).find(([, value]) => value === status)?.[0] ?? 'candidate';
const kindText = (kind: LessonKind) => (kind === LessonKind.LESSON_KIND_SUCCESS_PATTERN ? 'success' : 'lesson');

export interface LessonListOptions extends ConnectOptions {
  readonly scope?: string;
  readonly status?: string;
  readonly lang?: string;
  readonly limit?: string;
  readonly json?: boolean;
}

async function withLessons<T>(options: ConnectOptions, work: (lessons: LessonApi) => Promise<T>): Promise<T> {
  const api = await openApi({ ...options, drive: false });
  try {
    return await work(api.lessons);
  } finally {
    await api.close();
  }
}

function listRequest(options: LessonListOptions, pageSize: number, pageToken: string): ListLessonsRequest {
  const status = options.status === undefined ? LessonStatus.LESSON_STATUS_UNSPECIFIED : statusByName[options.status.toLowerCase()];
  if (status === undefined) throw new AppError(ErrorCode.INVALID_ARGUMENT, `--status ${options.status}: use candidate, promoted, demoted or retired`);
  return {
    pageSize,
    pageToken,
    language: options.lang === undefined ? Language.LANGUAGE_UNSPECIFIED : languageToProto(parseLanguageName(options.lang)),
    tags: [],
    errorSignature: '',
    scope: options.scope ?? '',
    // The server fills in the caller's team.
    team: '',
    status,
  };
}

/** Every lesson matching the options, paging through the API. */
async function allLessons(lessons: LessonApi, options: LessonListOptions, max = Number.POSITIVE_INFINITY): Promise<Lesson[]> {
  const found: Lesson[] = [];
  let token = '';
  do {
    const page = await lessons.list(listRequest(options, 500, token));
    found.push(...page.lessons);
    token = page.nextPageToken;
  } while (token !== '' && found.length < max);
  return found.slice(0, max);
}

/** `ratchet lessons list`: newest first, one line each with status, weight, uses and scope. */
export async function listLessons(options: LessonListOptions, output: Output = consoleOutput): Promise<void> {
  const limit = options.limit === undefined ? 50 : Number(options.limit);
  if (!Number.isInteger(limit) || limit < 1) throw new AppError(ErrorCode.INVALID_ARGUMENT, `--limit ${options.limit}: use a whole number from 1`);
  await withLessons(options, async (lessons) => {
    const found = await allLessons(lessons, options, limit);
    if (options.json) {
      for (const lesson of found) output.out(JSON.stringify(Lesson.toJSON(lesson)));
      return;
    }
    if (found.length === 0) {
      output.err('no lessons stored yet (they are learnt as tasks fail and get fixed)');
      return;
    }
    for (const lesson of found) {
      const stats = lesson.stats;
      output.out(
        `${lesson.id.slice(0, 8)}  ${statusText(lesson.status).padEnd(9)} w=${lesson.weight.toFixed(2)}  applied ${stats?.timesApplied ?? 0}x, retrieved ${stats?.timesRetrieved ?? 0}x  ${kindText(lesson.kind).padEnd(7)} ${lesson.scope}  ${oneLine(lesson.title, 80)}`,
      );
    }
  });
}

/** A lesson by id or unique prefix (8+ characters), from the listing. */
async function resolveLesson(lessons: LessonApi, idOrPrefix: string): Promise<Lesson> {
  const wanted = idOrPrefix.trim();
  if (wanted.length >= 32) return (await lessons.get(wanted)).lesson ?? Promise.reject(new AppError(ErrorCode.NOT_FOUND, `no lesson ${wanted}`));
  if (wanted.length < 8) throw new AppError(ErrorCode.INVALID_ARGUMENT, `lesson id ${JSON.stringify(wanted)} is too short: give the id or its first 8+ characters from \`ratchet lessons list\``);
  const matches = (await allLessons(lessons, {})).filter((lesson) => lesson.id.startsWith(wanted));
  if (matches.length === 0) throw new AppError(ErrorCode.NOT_FOUND, `no lesson starts with ${wanted}; see \`ratchet lessons list\``);
  if (matches.length > 1) throw new AppError(ErrorCode.INVALID_ARGUMENT, `${matches.length} lessons start with ${wanted}; give more characters`);
  return (await lessons.get((matches[0] as Lesson).id)).lesson as Lesson;
}

/** `ratchet lessons show`: the lesson, why it ranks where it does, its statistics and evidence. */
export async function showLesson(idOrPrefix: string, options: ConnectOptions & { json?: boolean }, output: Output = consoleOutput): Promise<void> {
  await withLessons(options, async (lessons) => {
    const lesson = await resolveLesson(lessons, idOrPrefix);
    if (options.json) {
      output.out(JSON.stringify(Lesson.toJSON(lesson)));
      return;
    }
    const stats = lesson.stats;
    output.out(`lesson ${lesson.id} (${kindText(lesson.kind)}, scope ${lesson.scope}, embedder ${lesson.embedder || 'none yet'})`);
    output.out(`title: ${lesson.title}`);
    output.out(`status: ${statusText(lesson.status)}, weight ${lesson.weight.toFixed(2)} (multiplies its relevance when ranked)`);
    for (const reason of lesson.standing) output.out(`  - ${reason}`);
    if (stats !== undefined) {
      output.out(`retrieved ${stats.timesRetrieved}x, applied by ${stats.timesApplied} later task(s) (${stats.appliedSucceeded} succeeded), failed again after it ${stats.timesNotHelped}x`);
    }
    if (lesson.errorSignature !== '') output.out(`error signature: ${lesson.errorSignature}`);
    output.out('');
    output.out(lesson.body);
    if (lesson.evidence.length > 0) output.out('');
    for (const item of lesson.evidence) {
      output.out(`evidence: task ${item.taskId} iteration ${item.iteration}${item.failureSummary ? `: failed: ${oneLine(item.failureSummary)}` : ''}${item.fixSummary ? `; fixed: ${oneLine(item.fixSummary)}` : ''}`);
    }
  });
}

/** `ratchet lessons forget`: deletes a lesson. */
export async function forgetLesson(idOrPrefix: string, options: ConnectOptions, output: Output = consoleOutput): Promise<void> {
  await withLessons(options, async (lessons) => {
    const lesson = await resolveLesson(lessons, idOrPrefix);
    await lessons.forget(lesson.id);
    output.err(`forgot lesson ${lesson.id}: ${oneLine(lesson.title)}`);
  });
}

/** Writes `file` whole or not at all (temp file, then rename); refuses to replace one without `force`. */
async function writeFileAtomically(file: string, content: string, force: boolean): Promise<void> {
  const temporary = path.join(path.dirname(path.resolve(file)), `.${path.basename(file)}.${randomUUID()}.tmp`);
  try {
    await writeFile(temporary, content, { flag: 'wx', mode: 0o600 });
    if (!force) {
      // A hard link fails on an existing target, so an existing file is never replaced by accident.
      await link(temporary, file).catch((error: NodeJS.ErrnoException) => {
        if (error.code === 'EEXIST') throw new AppError(ErrorCode.ALREADY_EXISTS, `${file} exists; add --force to replace it`);
        throw error;
      });
      return;
    }
    await rename(temporary, file);
  } finally {
    await rm(temporary, { force: true });
  }
}

/** `ratchet lessons export FILE`: every lesson (or a scope's) as JSON another installation can import. */
export async function exportLessons(file: string, options: ConnectOptions & { scope?: string; force?: boolean }, output: Output = consoleOutput): Promise<void> {
  await withLessons(options, async (lessons) => {
    const found = await allLessons(lessons, { ...(options.scope === undefined ? {} : { scope: options.scope }) });
    const body = JSON.stringify({ format: lessonExportFormat, version: LESSON_EXPORT_VERSION, exportedAt: new Date().toISOString(), lessons: found.map((lesson) => Lesson.toJSON(lesson)) }, null, 2);
    await writeFileAtomically(file, `${body}\n`, options.force ?? false);
    output.err(`exported ${found.length} lesson(s) to ${file}`);
  });
}

/**
 * `ratchet lessons import FILE`: stores the lessons of an export, skipping
 * ids already stored, in batches.
 *
 * @throws AppError INVALID_ARGUMENT naming the file and what is wrong with
 *   it; FAILED_PRECONDITION for an export of another format version.
 */
export async function importLessons(file: string, options: ConnectOptions & { scope?: string }, output: Output = consoleOutput): Promise<void> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(await readFile(file, 'utf8'));
  } catch (error) {
    throw new AppError(ErrorCode.INVALID_ARGUMENT, `${file} is not a lessons export: ${(error as Error).message}`, { cause: error });
  }
  const record = parsed as { format?: unknown; version?: unknown; lessons?: unknown };
  if (record === null || typeof record !== 'object' || record.format !== lessonExportFormat) throw new AppError(ErrorCode.INVALID_ARGUMENT, `${file} is not a lessons export (no "format": "${lessonExportFormat}"); make one with \`ratchet lessons export\``);
  if (record.version !== LESSON_EXPORT_VERSION) {
    throw new AppError(ErrorCode.FAILED_PRECONDITION, `${file} is export format version ${JSON.stringify(record.version)}; this Ratchet reads version ${LESSON_EXPORT_VERSION}: export it again with a matching version`);
  }
  if (!Array.isArray(record.lessons)) throw new AppError(ErrorCode.INVALID_ARGUMENT, `${file}: "lessons" is not a list`);
  const all = record.lessons.map((item: unknown) => Lesson.fromJSON(item));
  await withLessons(options, async (lessons) => {
    let imported = 0;
    let skipped = 0;
    for (let start = 0; start < all.length; start += 200) {
      const batch = await lessons.import({ formatVersion: LESSON_EXPORT_VERSION, lessons: all.slice(start, start + 200), scope: options.scope ?? '' });
      imported += batch.imported;
      skipped += batch.skipped;
    }
    output.err(`imported ${imported} lesson(s) from ${file}${skipped > 0 ? `; ${skipped} already stored, skipped` : ''}`);
  });
}

/** `ratchet lessons reindex`: embeds every lesson with the configured embedder, reporting progress. */
export async function reindexLessons(options: ConnectOptions, output: Output = consoleOutput): Promise<void> {
  await withLessons(options, async (lessons) => {
    let total = 0;
    for (;;) {
      const progress = await lessons.reindex(0);
      total += progress.reindexed;
      if (progress.remaining === 0 || progress.reindexed === 0) {
        output.err(`${total} lesson(s) embedded with ${progress.embedder}; ${progress.remaining} left`);
        return;
      }
      output.err(`embedded ${total} so far with ${progress.embedder}, ${progress.remaining} left`);
    }
  });
}
