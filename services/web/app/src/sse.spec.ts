import { describe, expect, it } from '@jest/globals';
import { parseServerSentEvents } from './sse';

describe('parseServerSentEvents', () => {
  it('reads complete events, skips comments and keeps the incomplete rest', () => {
    const { events, rest } = parseServerSentEvents('id: 1\nevent: task-event\ndata: {"sequence":1}\n\n: keep-alive\n\nevent: end\ndata: {}\n\nid: 2\nevent: task-ev');
    expect(events).toEqual([
      { event: 'task-event', data: '{"sequence":1}', id: '1' },
      { event: 'end', data: '{}' },
    ]);
    expect(rest).toBe('id: 2\nevent: task-ev');
    expect(parseServerSentEvents(`${rest}ent\ndata: {"sequence":2}\r\n\r\n`).events).toEqual([{ event: 'task-event', data: '{"sequence":2}', id: '2' }]);
  });

  it('joins multi-line data and defaults the event name to message', () => {
    expect(parseServerSentEvents('data: a\ndata: b\n\n').events).toEqual([{ event: 'message', data: 'a\nb' }]);
  });
});
