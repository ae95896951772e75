import type {
  AnswerRequest,
  AnswerResponse,
  ApproveRequest,
  ApproveResponse,
  CancelTaskRequest,
  CancelTaskResponse,
  GetLessonRequest,
  GetLessonResponse,
  GetTaskRequest,
  GetTaskResponse,
  ListLessonsRequest,
  ListLessonsResponse,
  ListProfilesRequest,
  ListProfilesResponse,
  ListTasksRequest,
  ListTasksResponse,
  SubmitTaskRequest,
  SubmitTaskResponse,
  WatchTaskRequest,
  WatchTaskResponse,
} from '@ratchet/contracts';

/** How the gateway makes one call for one browser request. */
export interface OrchestratorCallOptions {
  /** The browser's bearer token, passed on as is (gRPC metadata); undefined when it sent none. */
  readonly token?: string;
  /** Aborts when the browser goes away or the gateway shuts down. */
  readonly signal?: AbortSignal;
  /** Deadline of the call, ms; the client's default when unset. */
  readonly timeoutMs?: number;
}

/**
 * The orchestrator's client API as the dashboard uses it: the RPCs of
 * OrchestratorService it needs, each made on behalf of one caller. The
 * gRPC client of `@ratchet/grpc-api` has this shape (distributed mode, and
 * `ratchet ui --server`); so has embedded mode's in-process bus client,
 * with the orchestrator's own WatchTask for the stream.
 */
export interface OrchestratorApi {
  submitTask(request: SubmitTaskRequest, options?: OrchestratorCallOptions): Promise<SubmitTaskResponse>;
  getTask(request: GetTaskRequest, options?: OrchestratorCallOptions): Promise<GetTaskResponse>;
  listTasks(request: ListTasksRequest, options?: OrchestratorCallOptions): Promise<ListTasksResponse>;
  cancelTask(request: CancelTaskRequest, options?: OrchestratorCallOptions): Promise<CancelTaskResponse>;
  approve(request: ApproveRequest, options?: OrchestratorCallOptions): Promise<ApproveResponse>;
  answer(request: AnswerRequest, options?: OrchestratorCallOptions): Promise<AnswerResponse>;
  listProfiles(request: ListProfilesRequest, options?: OrchestratorCallOptions): Promise<ListProfilesResponse>;
  listLessons(request: ListLessonsRequest, options?: OrchestratorCallOptions): Promise<ListLessonsResponse>;
  getLesson(request: GetLessonRequest, options?: OrchestratorCallOptions): Promise<GetLessonResponse>;
  /** The task's events from `fromSequence`, then live ones, ending after TaskCompleted; stops when `options.signal` aborts. */
  watchTask(request: WatchTaskRequest, options?: OrchestratorCallOptions): AsyncIterable<WatchTaskResponse>;
}
