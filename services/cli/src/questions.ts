import { createInterface } from 'node:readline/promises';
import { TaskStatus, TaskView, type ClarifyingQuestion, type QuestionAnswer, type Task } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import type { TaskApi } from './api';

/** Prints a line for the person at the terminal. */
export type Say = (line: string) => void;
/** Puts a question to the person at the terminal and returns their line. */
export type Ask = (question: string) => Promise<string>;

/** One line from the terminal, after `question` (written to stderr, so stdout stays the program's output). */
export async function askAtTerminal(question: string): Promise<string> {
  const terminal = createInterface({ input: process.stdin, output: process.stderr });
  try {
    return await terminal.question(question);
  } finally {
    terminal.close();
  }
}

/** The terminal's `ask` when stdin is a terminal, else none. */
export function terminalAsker(given?: Ask): Ask | undefined {
  return given ?? (process.stdin.isTTY ? askAtTerminal : undefined);
}

/** A question as the person sees it: the question, why it matters, the suggested answers, and what happens on Enter. */
export function formatQuestion(question: ClarifyingQuestion): string {
  const lines = [`[${question.questionId}] ${question.question}`];
  if (question.why !== '') lines.push(`  why: ${question.why}`);
  if (question.options.length > 0) lines.push(`  e.g.: ${question.options.join(' | ')}`);
  if (question.assumption !== '') lines.push(`  Enter keeps the assumption: ${question.assumption}`);
  return lines.join('\n');
}

/**
 * Each question put to the person through `ask`, one after another; an
 * empty line takes the question's assumption (an empty answer).
 */
export async function askQuestions(questions: readonly ClarifyingQuestion[], ask: Ask, say: Say): Promise<QuestionAnswer[]> {
  const answers: QuestionAnswer[] = [];
  for (const question of questions) {
    say(formatQuestion(question));
    answers.push({ questionId: question.questionId, answer: (await ask('> ')).trim() });
  }
  return answers;
}

/**
 * What `ratchet run` does when the task asks: at a terminal, asks each
 * question; without one, answers them all with their stated assumptions and
 * says so, so an unattended run never hangs on a question.
 */
export function questionAnswerer(api: TaskApi, ask: Ask | undefined, say: Say): (taskId: string, questions: readonly ClarifyingQuestion[]) => Promise<void> {
  return async (taskId, questions) => {
    if (questions.length === 0) return;
    if (ask === undefined) {
      say(`no terminal to ask at: going on with the stated assumptions (${questions.map((question) => `${question.questionId}: ${question.assumption || 'none stated'}`).join('; ')})`);
      await api.answer({ taskId, answers: questions.map((question) => ({ questionId: question.questionId, answer: '' })) });
      return;
    }
    say('The reprompter has questions before it plans (Enter keeps the stated assumption):');
    await api.answer({ taskId, answers: await askQuestions(questions, ask, say) });
  };
}

/** Options of `ratchet answer`. */
export interface AnswerOptions {
  /** `id=text` pairs, as given to --answer. */
  readonly answer?: readonly string[];
  /** Take every open question's stated assumption. */
  readonly assume?: boolean;
}

/**
 * `ratchet answer TASK_ID`: answers the open questions of a waiting task,
 * from --answer id=text, --assume, or at the terminal.
 *
 * @throws AppError FAILED_PRECONDITION when the task waits for no answers;
 *   INVALID_ARGUMENT for a malformed --answer or none given without a terminal.
 */
export async function answerTask(api: TaskApi, taskId: string, options: AnswerOptions, ask: Ask | undefined, say: Say): Promise<Task> {
  const { task } = await api.getTask(taskId, TaskView.TASK_VIEW_BASIC);
  if (task === undefined) throw new AppError(ErrorCode.NOT_FOUND, `no task ${taskId}`);
  const open = task.questions.filter((question) => question.answeredBy === '');
  if (task.status !== TaskStatus.TASK_STATUS_AWAITING_ANSWER || open.length === 0) throw new AppError(ErrorCode.FAILED_PRECONDITION, `task ${task.id} is not waiting for answers`);
  const given = (options.answer ?? []).map(parseAnswer);
  if (options.assume === true && given.length > 0) throw new AppError(ErrorCode.INVALID_ARGUMENT, 'use either --assume (every stated assumption) or --answer ID=TEXT, not both');
  let answers: QuestionAnswer[];
  if (options.assume === true) answers = open.map((question) => ({ questionId: question.questionId, answer: '' }));
  else if (given.length > 0) answers = given;
  else if (ask !== undefined) answers = await askQuestions(open, ask, say);
  else {
    throw new AppError(
      ErrorCode.INVALID_ARGUMENT,
      `no answers given and no terminal to ask at; answer with --answer ID=TEXT (open: ${open.map((question) => `${question.questionId} "${question.question}"`).join(', ')}) or --assume`,
    );
  }
  return api.answer({ taskId: task.id, answers });
}

/** `q1=text` as an answer; `q1=` takes the assumption. */
function parseAnswer(pair: string): QuestionAnswer {
  const equals = pair.indexOf('=');
  if (equals <= 0) throw new AppError(ErrorCode.INVALID_ARGUMENT, `--answer ${JSON.stringify(pair)}: write ID=TEXT, e.g. --answer q1="store them in JSON"`);
  return { questionId: pair.slice(0, equals).trim(), answer: pair.slice(equals + 1).trim() };
}
