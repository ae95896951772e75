import type { Duration, Lesson, Usage } from './types';

// How the dashboard writes the contract's values for people: pure functions,
// tested in format.spec.ts.

/** `TASK_STATUS_AWAITING_APPROVAL` -> `awaiting approval` (any enum name, its prefix given). */
export function enumLabel(value: string | undefined, prefix: string): string {
  if (value === undefined || value === '') return 'unspecified';
  return value.replace(new RegExp(`^${prefix}_`), '').toLowerCase().replace(/_/g, ' ');
}

export const statusLabel = (status: string | undefined) => enumLabel(status ?? 'TASK_STATUS_QUEUED', 'TASK_STATUS');
export const phaseLabel = (phase: string | undefined) => enumLabel(phase, 'PHASE');

const terminal = new Set(['TASK_STATUS_SUCCEEDED', 'TASK_STATUS_FAILED', 'TASK_STATUS_CANCELLED']);
const waiting = new Set(['TASK_STATUS_AWAITING_APPROVAL', 'TASK_STATUS_AWAITING_ANSWER']);

/** Whether a task has ended (nothing more will happen unless it is resumed). */
export function isTerminalStatus(status: string | undefined): boolean {
  return status !== undefined && terminal.has(status);
}

/** The colour a status is shown in: done well, done badly, waiting for a person, or at work. */
export type StatusTone = 'good' | 'bad' | 'waiting' | 'running' | 'muted';

export function statusTone(status: string | undefined): StatusTone {
  if (status === 'TASK_STATUS_SUCCEEDED') return 'good';
  if (status === 'TASK_STATUS_FAILED') return 'bad';
  if (status === 'TASK_STATUS_CANCELLED') return 'muted';
  if (status !== undefined && waiting.has(status)) return 'waiting';
  return 'running';
}

/** Dollars with enough digits for small model costs: `$0.0042`, `$1.25`. */
export function formatCost(usd: number | undefined): string {
  const value = usd ?? 0;
  return `$${value < 1 ? value.toFixed(4) : value.toFixed(2)}`;
}

/** Prompt plus completion tokens, grouped: `12,345`. */
export function tokensOf(usage: Usage | undefined): number {
  return (usage?.promptTokens ?? 0) + (usage?.completionTokens ?? 0);
}

export function formatTokens(usage: Usage | undefined): string {
  return `${tokensOf(usage).toLocaleString('en-US')} tokens`;
}

/** `12,345 tokens · $0.0042 · 5 model calls`. */
export function formatUsage(usage: Usage | undefined): string {
  const calls = usage?.modelCalls ?? 0;
  return `${formatTokens(usage)} · ${formatCost(usage?.costUsd)}${calls > 0 ? ` · ${calls} model call${calls === 1 ? '' : 's'}` : ''}`;
}

/** Seconds of a duration. */
export function secondsOf(duration: Duration | undefined): number {
  return (duration?.seconds ?? 0) + (duration?.nanos ?? 0) / 1e9;
}

/** `0.4 s`, `12.0 s`, `3 min 05 s`, `2 h 10 min`. */
export function formatDuration(duration: Duration | undefined): string {
  const seconds = secondsOf(duration);
  if (seconds < 60) return `${seconds.toFixed(1)} s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ${String(Math.floor(seconds % 60)).padStart(2, '0')} s`;
  return `${Math.floor(seconds / 3600)} h ${String(Math.floor((seconds % 3600) / 60)).padStart(2, '0')} min`;
}

/** `2025-11-25 09:41` in the browser's time zone; '' for none. */
export function formatTime(iso: string | undefined): string {
  if (iso === undefined || iso === '') return '';
  const time = new Date(iso);
  if (Number.isNaN(time.getTime())) return '';
  const pad = (value: number) => String(value).padStart(2, '0');
  return `${time.getFullYear()}-${pad(time.getMonth() + 1)}-${pad(time.getDate())} ${pad(time.getHours())}:${pad(time.getMinutes())}`;
}

/** The first 8 characters of an id, as the CLI shows them. */
export function shortId(id: string | undefined): string {
  return (id ?? '').slice(0, 8);
}

/** `text` on one line, cut with `…` after `max` characters. */
export function oneLine(text: string | undefined, max = 120): string {
  const flat = (text ?? '').replace(/\s+/g, ' ').trim();
  return flat.length <= max ? flat : `${flat.slice(0, max - 1).trimEnd()}…`;
}

const lessonStanding: Readonly<Record<string, number>> = { LESSON_STATUS_PROMOTED: 0, LESSON_STATUS_CANDIDATE: 1, LESSON_STATUS_DEMOTED: 2, LESSON_STATUS_RETIRED: 3 };

/**
 * Lessons ranked as retrieval weighs them: retired ones last (never
 * offered), then by weight (the multiplier of their relevance, from
 * outcomes and age), then promoted before candidates before demoted, then
 * by the later tasks that applied them and succeeded, then newest first.
 */
export function rankLessons(lessons: readonly Lesson[]): Lesson[] {
  const standing = (lesson: Lesson) => lessonStanding[lesson.status ?? 'LESSON_STATUS_CANDIDATE'] ?? 1;
  const retired = (lesson: Lesson) => (lesson.status === 'LESSON_STATUS_RETIRED' ? 1 : 0);
  return [...lessons].sort(
    (a, b) =>
      retired(a) - retired(b) ||
      (b.weight ?? 0) - (a.weight ?? 0) ||
      standing(a) - standing(b) ||
      (b.stats?.appliedSucceeded ?? 0) - (a.stats?.appliedSucceeded ?? 0) ||
      (b.createdAt ?? '').localeCompare(a.createdAt ?? ''),
  );
}

/** A tool call's arguments reduced to what identifies it: the command, path or pattern. */
export function toolDetail(argumentsJson: string | undefined): string {
  const text = argumentsJson ?? '';
  try {
    const parsed = JSON.parse(text) as Record<string, unknown>;
    const key = ['command', 'path', 'pattern', 'directory', 'summary'].find((name) => typeof parsed[name] === 'string');
    return key === undefined ? '' : String(parsed[key]);
  } catch {
    return oneLine(text, 80);
  }
}
