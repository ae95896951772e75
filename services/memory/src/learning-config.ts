import { configSection } from '@ratchet/config';
import { z } from 'zod';
import { defaultStandingPolicy, type StandingPolicy } from './domain/standing';

/**
 * The `learning` config section (env `RATCHET_LEARNING_*`), read by the
 * memory service and by embedded mode: how outcomes and age rank lessons,
 * and how many each project keeps.
 */
export const learningConfigSection = configSection({
  /** Uses by later tasks before a lesson can be judged unhelpful. */
  minUsesToJudge: z.number().int().min(1).max(100).default(defaultStandingPolicy.minUsesToJudge),
  /** Helpfulness (0..1, 0.5 = no effect) below which a judged lesson is demoted. */
  demoteBelow: z.number().min(0).max(1).default(defaultStandingPolicy.demoteBelow),
  /** Weight (standing and age) below which a lesson is no longer offered. */
  retireBelow: z.number().min(0).max(1).default(defaultStandingPolicy.retireBelow),
  /** Days after which an unused lesson's weight halves. */
  halfLifeDays: z.number().positive().max(36_500).default(defaultStandingPolicy.halfLifeDays),
  /** Most lessons kept per project (and in the global scope); the least useful beyond it are deleted. */
  maxLessonsPerScope: z.number().int().min(1).max(10_000_000).default(10_000),
});

export type LearningSettings = Readonly<z.infer<typeof learningConfigSection>>;

/** The standing policy and retention limit of a `learning` section, as createMemoryService takes them. */
export function learningOptionsOf(settings: LearningSettings): { standing: StandingPolicy; maxLessonsPerScope: number } {
  const { maxLessonsPerScope, ...standing } = settings;
  return { standing: Object.freeze({ ...standing }), maxLessonsPerScope };
}
