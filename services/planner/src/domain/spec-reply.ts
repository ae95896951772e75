import { z } from 'zod';

/** Questions the reprompter may ask in one reply, whatever a request allows: a person answers them, and more than a handful is a form, not a clarification. */
export const maxQuestionsPerReply = 5;

const text = (max: number) => z.string().trim().min(1).max(max);
const items = (max: number) => z.array(text(1_000)).max(max);

/** A clarifying question as the model writes it; its id, answer and times are the caller's. */
export const questionReplySchema = z.strictObject({
  question: text(500),
  why: text(1_000),
  options: z.array(text(200)).max(6),
  assumption: text(500),
});

/** A spec as the model writes it, in the shape of the TaskSpec message. */
export const specSchema = z.strictObject({
  summary: text(2_000),
  behaviour: text(8_000),
  inputs: z.string().trim().max(4_000),
  outputs: z.string().trim().max(4_000),
  interface: items(40).min(1),
  edgeCases: items(40),
  acceptanceCriteria: items(40).min(1),
  assumptions: items(40),
});

export type QuestionReply = z.infer<typeof questionReplySchema>;
export type SpecReply = z.infer<typeof specSchema>;

/** What the reprompter replied: questions to ask first, or the spec. */
export type RepromptReply = { readonly questions: QuestionReply[]; readonly spec: SpecReply | null };

export interface SpecReplyOptions {
  /** Questions the model may still ask; 0 (or less) demands a spec. Capped at `maxQuestionsPerReply`. */
  readonly maxQuestions: number;
  /** Questions asked before, so the reply cannot ask them again. */
  readonly asked?: readonly string[];
}

/** Case and spacing do not make a question new. */
function normalized(question: string): string {
  return question.trim().toLowerCase().replace(/\s+/g, ' ').replace(/[?.!\s]+$/, '');
}

/**
 * The reply schema for one reprompt: `{ questions, spec }`, both keys
 * required (OpenAI's strict mode). With questions allowed, exactly one is
 * used: questions (at most `maxQuestions`, none asked before) with `spec`
 * null, or a spec with `questions` empty. With no questions allowed,
 * `questions` must be empty and `spec` an object.
 */
export function specReplySchema(options: SpecReplyOptions): z.ZodType<RepromptReply> {
  const allowed = Math.max(0, Math.min(maxQuestionsPerReply, Math.floor(options.maxQuestions)));
  if (allowed === 0) {
    return z.strictObject({
      questions: z.array(questionReplySchema).max(0, { message: 'no more questions may be asked: write the spec, with every open choice listed in assumptions, and questions empty' }),
      spec: specSchema,
    });
  }
  const asked = new Map((options.asked ?? []).map((question) => [normalized(question), question]));
  return z
    .strictObject({
      questions: z.array(questionReplySchema).max(allowed, { message: `ask at most ${allowed} question(s); decide the rest yourself and list them as assumptions` }),
      spec: specSchema.nullable(),
    })
    .superRefine((reply, context) => {
      if (reply.questions.length > 0 && reply.spec !== null) {
        context.addIssue({ code: 'custom', path: ['spec'], message: 'reply with either questions (and spec null) or a spec (and questions empty), not both' });
      }
      if (reply.questions.length === 0 && reply.spec === null) {
        context.addIssue({ code: 'custom', path: ['spec'], message: `neither questions nor a spec: write the spec, or ask up to ${allowed} question(s)` });
      }
      const seen = new Set<string>();
      reply.questions.forEach((question, index) => {
        const key = normalized(question.question);
        const before = asked.get(key);
        if (before !== undefined) context.addIssue({ code: 'custom', path: ['questions', index, 'question'], message: `${JSON.stringify(before)} was asked before; use its answer` });
        else if (seen.has(key)) context.addIssue({ code: 'custom', path: ['questions', index, 'question'], message: 'the same question twice; ask it once' });
        seen.add(key);
      });
    });
}

/** A question asked before, as the reprompt request carries it. */
export interface AskedQuestion {
  readonly questionId: string;
  readonly question: string;
  readonly assumption: string;
  readonly answer: string;
}

/**
 * Ids for `count` new questions: `q<n>` numbered on from the questions
 * asked before (after the highest `q<n>` among them, or their count,
 * whichever is larger), never reusing an id.
 */
export function nextQuestionIds(asked: readonly Pick<AskedQuestion, 'questionId'>[], count: number): string[] {
  const taken = new Set(asked.map((question) => question.questionId));
  const highest = Math.max(asked.length, ...asked.map((question) => Number(/^q(\d+)$/.exec(question.questionId)?.[1] ?? 0)));
  const ids: string[] = [];
  for (let number = highest + 1; ids.length < count; number += 1) {
    const id = `q${number}`;
    if (!taken.has(id)) ids.push(id);
  }
  return ids;
}

/**
 * The spec in the shape of the TaskSpec message. The assumption of every
 * question answered with "use your assumption" (an empty answer) is listed
 * among the spec's assumptions, added when the model left it out, so no
 * choice made on the user's behalf goes unstated. One the model copied
 * into a longer line ("q2: ...", "... (no answer)") counts as listed, so
 * it is not stated twice.
 */
export function toSpec(reply: SpecReply, asked: readonly AskedQuestion[]): SpecReply {
  const assumptions = [...reply.assumptions];
  const listed = assumptions.map((assumption) => normalized(assumption));
  for (const question of asked) {
    const assumption = question.assumption.trim();
    const wanted = normalized(assumption);
    if (question.answer.trim() !== '' || assumption === '' || listed.some((line) => line.includes(wanted))) continue;
    assumptions.push(assumption);
    listed.push(wanted);
  }
  return { ...reply, interface: [...reply.interface], edgeCases: [...reply.edgeCases], acceptanceCriteria: [...reply.acceptanceCriteria], assumptions };
}
