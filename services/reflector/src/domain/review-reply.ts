import { z } from 'zod';
import { reviewCategorySchema, severitySchema } from './findings';

/** Findings one review or audit reply may hold. */
export const maxFindingsPerReply = 50;

/** What every finding of a reply says: where, how bad, what is wrong and what to change. */
const findingFields = {
  severity: severitySchema,
  // A path as the change names it; '' for the change as a whole. Checked against the change by the handler.
  path: z.string().trim().max(500),
  // The line in the new file, 0 when not tied to one; clamped to the file by the handler.
  line: z.number().int(),
  message: z.string().trim().min(1).max(2_000),
  suggestion: z.string().trim().max(2_000),
};

/** What the reviewer model must reply. */
export const reviewReplySchema = z.strictObject({
  summary: z.string().trim().min(1).max(4_000),
  findings: z
    .array(z.strictObject({ ...findingFields, category: reviewCategorySchema, blocking: z.boolean() }))
    .max(maxFindingsPerReply),
});

export type ReviewReply = z.infer<typeof reviewReplySchema>;

/** An audit finding: the OWASP category and the CWE id besides the common fields. */
const auditFindingSchema = z.strictObject({
  ...findingFields,
  // The OWASP Top 10 category, e.g. "A03:2021-Injection"; filled from the CWE when empty.
  category: z.string().trim().max(100),
  // "CWE-89"; '' when none fits. Normalised by the handler.
  cwe: z.string().trim().max(100),
});

/** The auditor's judgement of one scanner finding, by its number in the prompt. */
const verdictSchema = z.strictObject({
  number: z.number().int().min(1),
  real: z.boolean(),
  reason: z.string().trim().min(1).max(1_000),
});

export type AuditReply = {
  readonly summary: string;
  readonly findings: z.infer<typeof auditFindingSchema>[];
  readonly scannerVerdicts: z.infer<typeof verdictSchema>[];
};

/**
 * What the auditor model must reply for `scannerFindings` scanner findings:
 * its own findings, and a verdict on each scanner finding, numbered 1 to
 * `scannerFindings`, each exactly once.
 */
export function auditReplySchema(scannerFindings: number): z.ZodType<AuditReply> {
  return z
    .strictObject({
      summary: z.string().trim().min(1).max(4_000),
      findings: z.array(auditFindingSchema).max(maxFindingsPerReply),
      scannerVerdicts: z.array(verdictSchema).max(scannerFindings, { message: `there are ${scannerFindings} scanner findings: give one verdict for each, numbered 1 to ${scannerFindings}` }),
    })
    .superRefine((reply, context) => {
      const judged = new Set<number>();
      reply.scannerVerdicts.forEach((verdict, index) => {
        if (verdict.number > scannerFindings) context.addIssue({ code: 'custom', path: ['scannerVerdicts', index, 'number'], message: `there is no scanner finding ${verdict.number}; they are numbered 1 to ${scannerFindings}` });
        else if (judged.has(verdict.number)) context.addIssue({ code: 'custom', path: ['scannerVerdicts', index, 'number'], message: `scanner finding ${verdict.number} is judged twice; judge each once` });
        judged.add(verdict.number);
      });
      const missing = Array.from({ length: scannerFindings }, (_, index) => index + 1).filter((number) => !judged.has(number));
      if (missing.length > 0) context.addIssue({ code: 'custom', path: ['scannerVerdicts'], message: `no verdict on scanner finding(s) ${missing.join(', ')}: say for each whether it is a real issue` });
    });
}
