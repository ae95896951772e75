import { workspacePathProblem } from '@ratchet/agent';
import { citedLessonIds } from '@ratchet/prompting';
import type { Lesson, Plan } from '@ratchet/contracts';
import { z } from 'zod';

const workspacePath = z.string().superRefine((value, context) => {
  const problem = workspacePathProblem(value);
  if (problem !== undefined) context.addIssue({ code: 'custom', message: `path ${JSON.stringify(value)} ${problem}; use a relative path inside the workspace` });
});

/** What the planner model must reply: strict objects with every key required, as OpenAI's strict JSON schema mode demands. */
export const planReplySchema = z.strictObject({
  summary: z.string().min(1),
  steps: z
    .array(z.strictObject({ description: z.string().min(1), paths: z.array(workspacePath) }))
    .min(1)
    .max(30),
  files: z
    .array(z.strictObject({ path: workspacePath, purpose: z.string(), isTest: z.boolean() }))
    .min(1)
    .max(50),
  testStrategy: z.string().min(1),
  // Every third-party package the code or its tests import; an empty list for the standard library only.
  dependencies: z
    .array(z.strictObject({ name: z.string().trim().min(1).max(214), versionSpec: z.string().trim().max(100) }))
    .max(30),
  appliedLessonIds: z.array(z.string()),
});

/**
 * The reply when the planner also judges whether the goal asks to change
 * the acceptance tests: two more required keys, so a model cannot leave the
 * question unanswered.
 */
export const planReplyWithTestEditsSchema = planReplySchema.extend({
  changesTests: z.boolean(),
  changesTestsReason: z.string(),
});

export type PlanReply = z.infer<typeof planReplySchema> & { changesTests?: boolean; changesTestsReason?: string };

/**
 * The proto plan from a validated reply; lesson ids the model cites but was
 * not given are dropped, so a hallucinated id cannot be credited later.
 */
export function toPlan(reply: PlanReply, language: Plan['language'], offered: readonly Lesson[]): Plan {
  return {
    summary: reply.summary,
    steps: reply.steps.map((step, index) => ({ number: index + 1, description: step.description, paths: step.paths })),
    files: reply.files.map((file) => ({ path: file.path, purpose: file.purpose, isTest: file.isTest })),
    testStrategy: reply.testStrategy,
    language,
    dependencies: reply.dependencies.map((dependency) => ({ name: dependency.name, versionSpec: dependency.versionSpec })),
    appliedLessonIds: citedLessonIds(reply.appliedLessonIds, offered),
    changesTests: reply.changesTests ?? false,
    changesTestsReason: reply.changesTests === true ? (reply.changesTestsReason ?? '').trim() : '',
  };
}
