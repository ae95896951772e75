// Server-Sent Events read from a fetch() body. EventSource cannot send an
// Authorization header, and the token must not go in the URL (where logs
// and history keep it), so the stream is read with fetch and parsed here.

export interface ServerSentEvent {
  readonly event: string;
  readonly data: string;
  readonly id?: string;
}

/**
 * The complete events at the start of `buffer` and the incomplete rest, to
 * be prefixed to the next chunk. Comments (`: keep-alive`) are skipped; an
 * event without an `event:` field is a `message`.
 */
export function parseServerSentEvents(buffer: string): { events: ServerSentEvent[]; rest: string } {
  const events: ServerSentEvent[] = [];
  const normalized = buffer.replace(/\r\n?/g, '\n');
  const blocks = normalized.split('\n\n');
  const rest = blocks.pop() ?? '';
  for (const block of blocks) {
    let event = 'message';
    let id: string | undefined;
    const data: string[] = [];
    for (const line of block.split('\n')) {
      if (line === '' || line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
      if (field === 'event') event = value;
      else if (field === 'data') data.push(value);
      else if (field === 'id') id = value;
    }
    if (data.length > 0 || event !== 'message') events.push({ event, data: data.join('\n'), ...(id === undefined ? {} : { id }) });
  }
  return { events, rest };
}
