import type { Duration } from '@ratchet/contracts';

/** A protobuf Duration of `ms` milliseconds (fractions kept as nanoseconds). */
export function durationFromMs(ms: number): Duration {
  const seconds = Math.floor(ms / 1000);
  return { seconds, nanos: Math.round((ms - seconds * 1000) * 1e6) };
}

/** Whole milliseconds of a protobuf Duration; 0 when unset. */
export function msOf(duration: Duration | undefined): number {
  return duration === undefined ? 0 : duration.seconds * 1000 + Math.floor(duration.nanos / 1e6);
}
