import { isTerminal, isWaiting, statusName } from '@ratchet/agent';
import { TaskStatus } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import { InputKind } from './inputs';

const S = TaskStatus;
type Row = Readonly<Partial<Record<InputKind, readonly TaskStatus[]>>>;

/**
 * The loop of ARCHITECTURE.md as data: for each status, the inputs it
 * accepts and the statuses each may lead to (`decide` chooses among them by
 * the input's content and the policy). Every status change of a task is a
 * row here; anything else is refused.
 */
const table: Readonly<Partial<Record<TaskStatus, Row>>> = {
  [S.TASK_STATUS_QUEUED]: { [InputKind.START]: [S.TASK_STATUS_REPROMPTING, S.TASK_STATUS_RETRIEVING] },
  [S.TASK_STATUS_REPROMPTING]: { [InputKind.REPROMPTED]: [S.TASK_STATUS_RETRIEVING], [InputKind.QUESTION_ASKED]: [S.TASK_STATUS_AWAITING_ANSWER] },
  // Answers to some of the open questions keep the task waiting for the rest.
  [S.TASK_STATUS_AWAITING_ANSWER]: { [InputKind.ANSWERED]: [S.TASK_STATUS_REPROMPTING, S.TASK_STATUS_AWAITING_ANSWER] },
  [S.TASK_STATUS_RETRIEVING]: { [InputKind.LESSONS_RETRIEVED]: [S.TASK_STATUS_PLANNING] },
  // A package the plan needs may wait for a person (DEPENDENCY_INSTALL), and one the policy denies ends the task.
  // The project's tests on the workspace as sent run first, once, and the task stays in planning.
  // A plan that declares packages is stored first, then they are judged (JUDGE_PACKAGES).
  [S.TASK_STATUS_PLANNING]: {
    [InputKind.BASELINE_RAN]: [S.TASK_STATUS_PLANNING],
    [InputKind.PLANNED]: [S.TASK_STATUS_PLANNING, S.TASK_STATUS_CODING],
    [InputKind.PACKAGES_JUDGED]: [S.TASK_STATUS_CODING, S.TASK_STATUS_AWAITING_APPROVAL, S.TASK_STATUS_FAILED],
  },
  // An invalid reply is a failed attempt, like a failing test: the reflector looks at it.
  [S.TASK_STATUS_CODING]: { [InputKind.TOOL_STEP]: [S.TASK_STATUS_CODING], [InputKind.COMMAND_ASKED]: [S.TASK_STATUS_AWAITING_APPROVAL], [InputKind.CODED]: [S.TASK_STATUS_SAFETY_CHECK], [InputKind.REPLY_INVALID]: [S.TASK_STATUS_REFLECTING] },
  [S.TASK_STATUS_SAFETY_CHECK]: {
    [InputKind.SAFETY_PASSED]: [S.TASK_STATUS_REVIEWING, S.TASK_STATUS_AUDITING, S.TASK_STATUS_TESTING],
    [InputKind.SAFETY_BLOCKED]: [S.TASK_STATUS_REFLECTING],
    // A package a person refused earlier in the task is not asked about again: the attempt is blocked.
    [InputKind.SAFETY_ASKED]: [S.TASK_STATUS_AWAITING_APPROVAL, S.TASK_STATUS_REFLECTING],
  },
  [S.TASK_STATUS_REVIEWING]: { [InputKind.REVIEWED]: [S.TASK_STATUS_AUDITING, S.TASK_STATUS_TESTING, S.TASK_STATUS_REFLECTING] },
  // A review reply that cannot be used is recorded and the change goes on; an audit's fails the attempt (it never lets unaudited code through).
  [S.TASK_STATUS_AUDITING]: { [InputKind.AUDITED]: [S.TASK_STATUS_TESTING, S.TASK_STATUS_REFLECTING], [InputKind.REPLY_INVALID]: [S.TASK_STATUS_REFLECTING] },
  [S.TASK_STATUS_TESTING]: {
    // Generated tests are stored before they run, so a restart does not ask the tester's model again.
    [InputKind.TESTS_WRITTEN]: [S.TASK_STATUS_TESTING, S.TASK_STATUS_REFLECTING],
    // The stored tests fail the code check just before they run: dropped, the reflector looks, the tester writes them again.
    [InputKind.TESTS_REJECTED]: [S.TASK_STATUS_REFLECTING],
    [InputKind.REPLY_INVALID]: [S.TASK_STATUS_REFLECTING],
    [InputKind.TESTS_PASSED]: [S.TASK_STATUS_LEARNING, S.TASK_STATUS_AWAITING_APPROVAL],
    [InputKind.TESTS_FAILED]: [S.TASK_STATUS_REFLECTING],
    // Bandit's scan runs in the test job, before the tests; what it blocks goes to the reflector like the safety check's.
    [InputKind.SAFETY_BLOCKED]: [S.TASK_STATUS_REFLECTING],
  },
  // After a reflection: rewrite a disputed generated test (same iteration), code again, re-plan, or stop (no progress, out of iterations).
  [S.TASK_STATUS_REFLECTING]: { [InputKind.REFLECTED]: [S.TASK_STATUS_TESTING, S.TASK_STATUS_CODING, S.TASK_STATUS_PLANNING, S.TASK_STATUS_FAILED] },
  [S.TASK_STATUS_LEARNING]: { [InputKind.LEARNED]: [S.TASK_STATUS_SUCCEEDED] },
  // A SAFETY_OVERRIDE gate approved sends the change on to the phases after the safety check; refused, to the reflector.
  [S.TASK_STATUS_AWAITING_APPROVAL]: {
    [InputKind.APPROVED]: [S.TASK_STATUS_LEARNING, S.TASK_STATUS_CODING, S.TASK_STATUS_REVIEWING, S.TASK_STATUS_AUDITING, S.TASK_STATUS_TESTING],
    [InputKind.REJECTED]: [S.TASK_STATUS_PLANNING, S.TASK_STATUS_CODING, S.TASK_STATUS_REFLECTING],
  },
  [S.TASK_STATUS_FAILED]: { [InputKind.RESUMED]: [S.TASK_STATUS_PLANNING] },
};

/**
 * Inputs every live (non-terminal) status accepts; HANDED_OVER keeps the
 * status (another replica drives on), and so does PAUSED in a status whose
 * phase runs (a person's decision calls no service).
 */
const anyLiveStatus = (status: TaskStatus): Row => ({
  [InputKind.STOPPED]: [S.TASK_STATUS_FAILED],
  ...(isWaiting(status) ? {} : { [InputKind.PAUSED]: [status] }),
  [InputKind.ERRORED]: [S.TASK_STATUS_FAILED],
  [InputKind.CANCELLED]: [S.TASK_STATUS_CANCELLED],
  [InputKind.HANDED_OVER]: [status],
});

/** Every status a task can be in, the unspecified one aside. */
export const allStatuses: readonly TaskStatus[] = Object.values(TaskStatus).filter(
  (value): value is TaskStatus => typeof value === 'number' && value !== TaskStatus.TASK_STATUS_UNSPECIFIED && value !== TaskStatus.UNRECOGNIZED,
);

/** The inputs `status` accepts, with the statuses each may lead to. */
export function transitionsFrom(status: TaskStatus): Row {
  return { ...table[status], ...(isTerminal(status) ? {} : anyLiveStatus(status)) };
}

/**
 * The statuses `input` may lead to from `status`.
 *
 * @throws AppError FAILED_PRECONDITION when the table has no such row, naming what the status accepts.
 */
export function allowedNext(status: TaskStatus, input: InputKind): readonly TaskStatus[] {
  const row = transitionsFrom(status);
  const next = row[input];
  if (next === undefined) {
    const accepted = Object.keys(row);
    throw new AppError(
      ErrorCode.FAILED_PRECONDITION,
      `a ${statusName(status)} task does not take '${input}'${accepted.length === 0 ? '; it has ended' : `; it takes ${accepted.map((kind) => `'${kind}'`).join(', ')}`}`,
    );
  }
  return next;
}

/** Whether some input moves a task from `from` to `to`. */
export function canTransition(from: TaskStatus, to: TaskStatus): boolean {
  return Object.values(transitionsFrom(from)).some((next) => next?.includes(to) === true);
}
