import { AppError, ErrorCode } from '@ratchet/errors';
import { CappedBuffer } from './capped-buffer';
import { FrameReader, FrameType, lengthPrefixed, maxCollectBytes } from './supervisor-protocol';

/** What the supervisor answered to one session request. */
export interface SessionAnswer {
  /** The DONE frame's JSON. */
  readonly done: Readonly<Record<string, unknown>>;
  readonly stdout: Buffer;
  readonly stderr: Buffer;
  /** The tar archive a read request's answer carries; empty otherwise. */
  readonly archive: Buffer;
  readonly archiveTruncated: boolean;
}

interface Pending {
  readonly resolve: (answer: SessionAnswer) => void;
  readonly reject: (error: AppError) => void;
  readonly stdout: CappedBuffer;
  readonly stderr: CappedBuffer;
  readonly archive: CappedBuffer;
}

/**
 * The runner's end of a supervisor in session mode (supervisor/supervisor.py,
 * `serve_session`): requests go out one at a time, in order, and each is
 * answered by the frames up to the next DONE. The runner caps again what the
 * supervisor already capped, since the code in the sandbox shares its user.
 */
export class SessionChannel {
  private readonly reader = new FrameReader();
  private readonly queue: Pending[] = [];
  /** Requests wait for the one before them: the supervisor serves one at a time. */
  private tail: Promise<unknown> = Promise.resolve();
  private failure: AppError | undefined;

  /** Resolves when the supervisor wrote the files and is ready for requests. */
  readonly opened: Promise<void>;

  /**
   * @param write hands bytes to the supervisor's stdin.
   * @param outputLimitBytes cap on each of stdout and stderr of one request.
   */
  constructor(
    private readonly write: (data: Buffer) => void,
    private readonly outputLimitBytes: number,
  ) {
    // The first DONE answers the session spec sent when the sandbox was taken.
    this.opened = new Promise<void>((resolve, reject) => {
      this.queue.push(
        this.pending(
          (answer) => (typeof answer.done['error'] === 'string' ? reject(new AppError(ErrorCode.INTERNAL, `the sandbox could not take the session's files: ${answer.done['error']}`)) : resolve()),
          reject,
          0,
        ),
      );
    });
    // A session that never opens is reported by whoever awaits `opened`; this keeps it from being unhandled.
    this.opened.catch(() => undefined);
  }

  /** Bytes from the supervisor's stdout. */
  accept(chunk: Buffer): void {
    for (const frame of this.reader.push(chunk)) {
      const current = this.queue[0];
      if (current === undefined) continue; // nothing asked: a supervisor speaking out of turn is ignored
      if (frame.type === FrameType.STDOUT) current.stdout.write(frame.payload);
      else if (frame.type === FrameType.STDERR) current.stderr.write(frame.payload);
      else if (frame.type === FrameType.TAR) current.archive.write(frame.payload);
      else if (frame.type === FrameType.DONE) {
        this.queue.shift();
        let done: Record<string, unknown>;
        try {
          done = JSON.parse(frame.payload.toString('utf8')) as Record<string, unknown>;
        } catch {
          current.reject(new AppError(ErrorCode.INTERNAL, 'the sandbox supervisor sent a malformed answer'));
          continue;
        }
        current.resolve({ done, stdout: current.stdout.toBuffer(), stderr: current.stderr.toBuffer(), archive: current.archive.toBuffer(), archiveTruncated: current.archive.truncated });
      }
    }
  }

  /**
   * The sandbox is gone: the request in flight and every later one fail with
   * `error` (UNAVAILABLE, retryable, when the caller may start over elsewhere).
   */
  fail(error: AppError): void {
    this.failure ??= error;
    for (const pending of this.queue.splice(0)) pending.reject(this.failure);
  }

  /**
   * Sends one request (and, for writes, its block of files) once the ones
   * before it are answered, and resolves with the answer.
   *
   * @param outputLimitBytes cap on each of this request's stdout and stderr; default the channel's.
   * @throws AppError the channel's failure once the sandbox is gone.
   */
  request(body: Readonly<Record<string, unknown>>, block?: Buffer, outputLimitBytes = this.outputLimitBytes): Promise<SessionAnswer> {
    const turn = this.tail.then(
      () =>
        new Promise<SessionAnswer>((resolve, reject) => {
          if (this.failure !== undefined) return reject(this.failure);
          this.queue.push(this.pending(resolve, reject, outputLimitBytes));
          const json = Buffer.from(JSON.stringify(body));
          this.write(block === undefined ? lengthPrefixed(json) : Buffer.concat([lengthPrefixed(json), lengthPrefixed(block)]));
        }),
    );
    this.tail = turn.catch(() => undefined);
    return turn;
  }

  private pending(resolve: (answer: SessionAnswer) => void, reject: (error: AppError) => void, outputLimitBytes: number): Pending {
    return { resolve, reject, stdout: new CappedBuffer(outputLimitBytes), stderr: new CappedBuffer(outputLimitBytes), archive: new CappedBuffer(maxCollectBytes + 1024 * 1024) };
  }
}
