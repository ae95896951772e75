import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import path from 'node:path';
import { InProcessTransport } from '@ratchet/bus';
import { AppError, ErrorCode } from '@ratchet/errors';
import { runGoal } from '../src/commands';
import { RecordedOutput, scripted, temporaryDirectory } from './helpers';

// Embedded `ratchet run` whose task runner stops on an unexpected error: the
// run must end with that error, not wait forever for a TaskCompleted that
// never comes. The runner fails before any model call or sandbox run.
jest.setTimeout(120_000);

describe('ratchet run (embedded) when the task runner fails', () => {
  let dir: string;
  let remove: () => Promise<void>;
  beforeAll(async () => {
    ({ dir, remove } = await temporaryDirectory());
    process.env['RATCHET_CONFIG_DIR'] = path.resolve(__dirname, '../../../config');
  });
  afterAll(async () => {
    jest.restoreAllMocks();
    await remove();
  });

  it('ends with the runner\'s error instead of hanging', async () => {
    const { models } = scripted([]);
    const append = InProcessTransport.prototype.appendEvent;
    let appended = 0;
    // The task's first two events (submitted, started) go out; then publishing breaks, so the runner's
    // every write, the one recording the failure included, throws after it is stored, and the runner gives up.
    jest.spyOn(InProcessTransport.prototype, 'appendEvent').mockImplementation(function (this: InProcessTransport, ...args: Parameters<InProcessTransport['appendEvent']>) {
      appended += 1;
      return appended > 2 ? Promise.reject(new AppError(ErrorCode.INTERNAL, 'the event stream broke')) : append.apply(this, args);
    });
    const output = new RecordedOutput();
    let timer: NodeJS.Timeout | undefined;
    const hung = new Promise<'hung'>((resolve) => {
      timer = setTimeout(() => resolve('hung'), 60_000);
    });
    try {
      const outcome = await Promise.race([runGoal('add two numbers', { lang: 'python', out: path.join(dir, 'out'), dataDir: path.join(dir, 'data'), models }, output).then(() => 'returned', (error: unknown) => error), hung]);
      expect(outcome).toBeInstanceOf(AppError);
      expect(outcome).toMatchObject({ code: ErrorCode.INTERNAL, message: expect.stringMatching(/^task \S+ stopped unfinished: its runner failed: the event stream broke/) });
    } finally {
      clearTimeout(timer);
    }
  });
});
