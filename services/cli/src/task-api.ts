import type {
  AnswerRequest,
  ApproveRequest,
  ApproveResponse,
  ForgetLessonResponse,
  GetLessonResponse,
  GetTaskResponse,
  ImportLessonsRequest,
  ImportLessonsResponse,
  ListLessonsRequest,
  ListLessonsResponse,
  ListTasksRequest,
  ListTasksResponse,
  ProjectProfile,
  ReindexLessonsResponse,
  ResumeTaskRequest,
  SubmitTaskRequest,
  Task,
  TaskEvent,
  TaskView,
} from '@ratchet/contracts';
import type { AppError } from '@ratchet/errors';

// What every command talks to, whether Ratchet runs embedded or on a
// server: in a module of its own, so both implementations (./api for a
// server, ./embedded-api) name it without importing each other.

/**
 * What the commands need from Ratchet, whether it runs in this process
 * (embedded) or behind an orchestrator's gRPC API (`--server`).
 */
export interface TaskApi {
  /** `server host:port`, or `embedded (DATA_DIR)`: for messages. */
  readonly where: string;
  /** Set when the CLI drives the models itself (embedded): their names. */
  readonly modelNames?: readonly string[];
  submitTask(request: SubmitTaskRequest): Promise<Task>;
  /**
   * Every event of the task from the start, then live ones, ending after
   * TaskCompleted. A server's stream that breaks with a retryable error (the
   * server's database or the server itself gone for a while) is opened
   * again after the last event seen, each time told to `onInterrupted`.
   */
  watchTask(taskId: string, signal: AbortSignal, onInterrupted?: (interruption: WatchInterruption) => void): AsyncIterable<TaskEvent>;
  getTask(taskId: string, view: TaskView): Promise<GetTaskResponse>;
  listTasks(request: ListTasksRequest): Promise<ListTasksResponse>;
  cancelTask(taskId: string, reason: string): Promise<Task>;
  resumeTask(request: ResumeTaskRequest): Promise<Task>;
  approve(request: ApproveRequest): Promise<ApproveResponse>;
  /** Answers a task's open clarifying questions; the task after them. */
  answer(request: AnswerRequest): Promise<Task>;
  /** The project profiles tasks may name. */
  listProfiles(): Promise<ProjectProfile[]>;
  readonly lessons: LessonApi;
  close(): Promise<void>;
}

/** Stored lessons, through the orchestrator's API (or embedded memory). */
export interface LessonApi {
  list(request: ListLessonsRequest): Promise<ListLessonsResponse>;
  get(lessonId: string): Promise<GetLessonResponse>;
  forget(lessonId: string): Promise<ForgetLessonResponse>;
  import(request: ImportLessonsRequest): Promise<ImportLessonsResponse>;
  reindex(batchSize: number): Promise<ReindexLessonsResponse>;
}

/** A LessonApi over any client with the lesson RPCs (the orchestrator's, over gRPC or the bus; or memory's handlers). */
export function lessonApiOf(client: {
  listLessons(request: ListLessonsRequest, options?: never): Promise<ListLessonsResponse>;
  getLesson(request: { lessonId: string }, options?: never): Promise<GetLessonResponse>;
  forgetLesson(request: { lessonId: string }, options?: never): Promise<ForgetLessonResponse>;
  importLessons(request: ImportLessonsRequest, options?: never): Promise<ImportLessonsResponse>;
  reindexLessons(request: { batchSize: number }, options?: never): Promise<ReindexLessonsResponse>;
}): LessonApi {
  return {
    list: (request) => client.listLessons(request),
    get: (lessonId) => client.getLesson({ lessonId }),
    forget: (lessonId) => client.forgetLesson({ lessonId }),
    import: (request) => client.importLessons(request),
    reindex: (batchSize) => client.reindexLessons({ batchSize }),
  };
}

/** A server's event stream that broke and is about to be opened again. */
export interface WatchInterruption {
  readonly error: AppError;
  readonly retryInMs: number;
  /** The first event the next stream starts at. */
  readonly fromSequence: number;
}
