import type { Language } from '@ratchet/contracts';
import type { Queryable } from '@ratchet/db';
import { standingOf } from '../domain/standing';
import type { MemoryDeps } from './deps';

/**
 * Records where a task stands (iterations so far, succeeded or not, the
 * lessons it applied) and re-judges those lessons against comparable tasks:
 * one that helped is promoted and ranks higher, one that did not is demoted
 * and, once its weight is low enough, no longer offered.
 */
export async function recordOutcome(
  deps: MemoryDeps,
  tx: Queryable,
  outcome: { taskId: string; scope: string; language: Language; iterations: number; succeeded: boolean; applied: readonly string[] },
): Promise<void> {
  await deps.outcomes.recordOutcome(tx, outcome, deps.now());
  const applied = [...new Set(outcome.applied)];
  const measured = await deps.outcomes.outcomes(applied, tx);
  for (const [id, stats] of measured) {
    const standing = standingOf(stats, deps.standing);
    await deps.outcomes.setStanding(tx, id, { ...standing, lastHelpedAt: stats.lastHelpedAt });
  }
}
