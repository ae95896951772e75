import { DiscardPolicy, RetentionPolicy, StorageType } from '@nats-io/jetstream';
import type { StreamConfig, StreamInfo } from '@nats-io/jetstream';
import { AppError, ErrorCode } from '@ratchet/errors';
import { Subjects } from '../headers';

/** Names of the JetStream streams and consumers the NATS transport keeps; its permissions are granted by them. */
export const EVENTS_STREAM = 'RATCHET_EVENTS';
export const DEAD_LETTER_STREAM = 'RATCHET_DEADLETTER';
/** The durable consumer every worker of a queue shares. */
export const WORKERS = 'workers';

/** The work-queue stream holding `queue`'s jobs. */
export const queueStream = (queue: string) => `RATCHET_QUEUE_${queue}`;

/**
 * Payloads too large for one message: chunks under `<prefix>.<subject the
 * message goes to>.<object id>.<chunk index>`, so a role writes payloads only
 * for the subjects it may send on and reads only those of the subjects it
 * receives (permissions.ts). Objects expire after the payload TTL.
 */
export const PAYLOAD_STREAM = 'RATCHET_PAYLOADS';
export const PAYLOAD_PREFIX = 'ratchet.v1.payloads';
/** Payloads of dead letters, kept as long as the letters themselves (no TTL). */
export const DEAD_LETTER_PAYLOAD_STREAM = 'RATCHET_DEADLETTER_PAYLOADS';
export const DEAD_LETTER_PAYLOAD_PREFIX = 'ratchet.v1.deadletter-payloads';

/** The prefix of the chunk subjects of `stream`. */
export function payloadPrefixOf(stream: string): string {
  return stream === DEAD_LETTER_PAYLOAD_STREAM ? DEAD_LETTER_PAYLOAD_PREFIX : PAYLOAD_PREFIX;
}

/** The chunk subjects of payloads for messages on `pattern` (a subject or a NATS pattern). */
export function payloadSubjectsFor(prefix: string, pattern: string): string {
  return pattern.endsWith('>') ? `${prefix}.${pattern}` : `${prefix}.${pattern}.*.*`;
}

const nanos = (ms: number) => Math.round(ms * 1_000_000);

/** How long task events and payloads are kept, the settings the expected stream configurations depend on. */
export interface StreamLimits {
  readonly eventRetentionMs: number;
  readonly payloadTtlMs: number;
}

/**
 * The configuration of every stream Ratchet keeps, as the orchestrator
 * creates them. No role's NATS user may delete or purge through the API,
 * and the streams refuse it too (but the payload stream, whose rollups need
 * it): only retention (acks, age) and a payload's own reader remove messages.
 */
export function expectedStreams(queues: readonly string[], limits: StreamLimits): StreamConfig[] {
  const base = { storage: StorageType.File, num_replicas: 1, deny_delete: true, deny_purge: true, allow_rollup_hdrs: false, discard: DiscardPolicy.Old };
  return [
    { ...base, name: EVENTS_STREAM, subjects: [Subjects.events('*')], retention: RetentionPolicy.Limits, max_age: nanos(limits.eventRetentionMs) },
    { ...base, name: DEAD_LETTER_STREAM, subjects: [Subjects.deadLetter('*')], retention: RetentionPolicy.Limits },
    ...queues.map((queue) => ({ ...base, name: queueStream(queue), subjects: [Subjects.queue(queue)], retention: RetentionPolicy.Workqueue, duplicate_window: nanos(120_000) })),
    // Rollups let the reader of a payload delete it (by replacing each chunk with an empty one), and need the stream's purge
    // right; no role's NATS permissions include the purge API. Direct gets let a role read by subject.
    { ...base, name: PAYLOAD_STREAM, subjects: [`${PAYLOAD_PREFIX}.>`], retention: RetentionPolicy.Limits, max_age: nanos(limits.payloadTtlMs), allow_direct: true, allow_rollup_hdrs: true, deny_purge: false },
    { ...base, name: DEAD_LETTER_PAYLOAD_STREAM, subjects: [`${DEAD_LETTER_PAYLOAD_PREFIX}.>`], retention: RetentionPolicy.Limits, allow_direct: true },
  ].map((config) => config as StreamConfig);
}

/**
 * What makes `actual` unsafe to use in place of `expected`, or an empty
 * list: other subjects (it would capture other messages), another
 * retention, a mirror, sources, a republish or subject transform (they copy
 * messages elsewhere), or delete/purge/rollup/direct-get rights that differ.
 * Limits such as max_age are the creator's to set and are not compared.
 */
export function streamTampering(actual: StreamInfo['config'], expected: StreamConfig): string[] {
  const problems: string[] = [];
  const subjects = [...(actual.subjects ?? [])].sort();
  const wanted = [...(expected.subjects ?? [])].sort();
  if (JSON.stringify(subjects) !== JSON.stringify(wanted)) problems.push(`subjects ${JSON.stringify(subjects)} instead of ${JSON.stringify(wanted)}`);
  if (actual.retention !== expected.retention) problems.push(`retention ${actual.retention} instead of ${expected.retention}`);
  const extra = actual as StreamInfo['config'] & { republish?: unknown; subject_transform?: unknown };
  if (extra.mirror) problems.push('a mirror');
  if ((extra.sources ?? []).length > 0) problems.push('sources');
  if (extra.republish) problems.push('a republish');
  if (extra.subject_transform) problems.push('a subject transform');
  for (const flag of ['deny_delete', 'deny_purge', 'allow_rollup_hdrs', 'allow_direct'] as const) {
    if (Boolean(actual[flag]) !== Boolean(expected[flag])) problems.push(`${flag} ${Boolean(actual[flag])}`);
  }
  return problems;
}

/** The error for a stream that fails `streamTampering`: it is not used, and the operator is told how to recover. */
export function tamperedStreamError(name: string, problems: readonly string[]): AppError {
  return new AppError(
    ErrorCode.FAILED_PRECONDITION,
    `JetStream stream ${name} is not as Ratchet creates it (${problems.join('; ')}): it may have been tampered with, so it is not used; inspect it (nats stream info ${name}), remove it (nats stream rm ${name}) and restart the orchestrator, which creates it again`,
    { retryable: false },
  );
}
