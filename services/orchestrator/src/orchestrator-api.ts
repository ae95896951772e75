import type {
  AnswerRequest,
  AnswerResponse,
  ApproveRequest,
  ApproveResponse,
  CancelTaskRequest,
  CancelTaskResponse,
  GetTaskRequest,
  GetTaskResponse,
  ListProfilesRequest,
  ListProfilesResponse,
  ListTasksRequest,
  ListTasksResponse,
  ResumeTaskRequest,
  ResumeTaskResponse,
  SubmitTaskRequest,
  SubmitTaskResponse,
  TaskEvent,
  WatchTaskRequest,
  WatchTaskResponse,
} from '@ratchet/contracts';
import type { TaskRecord } from './domain/records';
import type { LessonHandlers } from './handlers/lessons';
import type { ClientCallContext as CallContext } from './handlers/principal';

// The orchestrator's API as its callers (the gRPC server, embedded mode,
// the access-control wrapper) see it; a module of its own, so the handlers
// can name it without importing the service that assembles them.

export interface OrchestratorService {
  readonly implementation: LessonHandlers & {
    submitTask(request: SubmitTaskRequest, context: CallContext): Promise<SubmitTaskResponse>;
    getTask(request: GetTaskRequest, context: CallContext): Promise<GetTaskResponse>;
    listTasks(request: ListTasksRequest, context: CallContext): Promise<ListTasksResponse>;
    cancelTask(request: CancelTaskRequest, context: CallContext): Promise<CancelTaskResponse>;
    resumeTask(request: ResumeTaskRequest, context: CallContext): Promise<ResumeTaskResponse>;
    approve(request: ApproveRequest, context: CallContext): Promise<ApproveResponse>;
    answer(request: AnswerRequest, context: CallContext): Promise<AnswerResponse>;
    listProfiles(request: ListProfilesRequest, context: CallContext): Promise<ListProfilesResponse>;
  };
  /**
   * WatchTask: the task's stored events from `from_sequence`, then new ones
   * as they are stored, ending after TaskCompleted (unless
   * `follow_after_completion`) or when `context.signal` aborts.
   *
   * @throws AppError INVALID_ARGUMENT without task_id; NOT_FOUND for an unknown task.
   */
  watchTask(request: WatchTaskRequest, context: Pick<CallContext, 'signal' | 'principal'>): AsyncIterable<WatchTaskResponse>;
  /** Resolves when the task reaches a terminal status (immediately if it has). */
  whenDone(taskId: string): Promise<TaskRecord>;
  /** Stored events of a task from `fromSequence` (1 = all). */
  events(taskId: string, fromSequence?: number): Promise<TaskEvent[]>;
  /** Cancels (embedded) or hands over (replica among others) running tasks and waits for them. */
  close(): Promise<void>;
}
