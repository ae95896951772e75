import { z } from 'zod';

/** What the reflector model must reply. */
export const reflectionReplySchema = z.strictObject({
  rootCause: z.string().min(1),
  hypothesis: z.string().min(1),
  fixDirection: z.string().min(1),
  confidence: z.number().min(0).max(1),
  replanRecommended: z.boolean(),
  lesson: z.strictObject({
    title: z.string().min(1).max(200),
    body: z.string().min(1).max(2_000),
    tags: z.array(z.string().min(1).max(40)).max(10),
  }),
  relevantLessonIds: z.array(z.string()),
  /** Generated tests that contradict the goal, with the evidence; required in the JSON Schema (strict mode), empty by default. */
  disputedTests: z.array(z.strictObject({ path: z.string().min(1), testName: z.string(), reason: z.string().min(1) })).max(20).default([]),
});

export type ReflectionReply = z.infer<typeof reflectionReplySchema>;
