import { Writable } from 'node:stream';
import { describe, expect, it } from '@jest/globals';
import { createLogger } from '../src';

describe('createLogger', () => {
  it('passes every line through `redact`, whatever field the secret is in', async () => {
    const lines: string[] = [];
    const destination = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(chunk.toString('utf8'));
        done();
      },
    });
    const logger = createLogger({ service: 'test', destination: destination as never, redact: (line) => line.replaceAll('hunter2-secret', '[REDACTED:configured-secret]') });
    logger.warn({ err: 'login failed with hunter2-secret', nested: { value: 'hunter2-secret' } }, 'request with hunter2-secret refused');
    await new Promise((resolve) => setImmediate(resolve));
    expect(lines).toHaveLength(1);
    const record = JSON.parse(lines[0]!) as Record<string, unknown>;
    expect(record).toMatchObject({ err: 'login failed with [REDACTED:configured-secret]', nested: { value: '[REDACTED:configured-secret]' }, msg: 'request with [REDACTED:configured-secret] refused' });
    expect(lines[0]).not.toContain('hunter2');
  });
});
