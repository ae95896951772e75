/**
 * Collects bytes up to a limit and drops the rest while remembering that it
 * did, so a process flooding its output neither blocks (the reader keeps
 * draining) nor fills the runner's memory.
 */
export class CappedBuffer {
  private readonly chunks: Buffer[] = [];
  private size = 0;
  truncated = false;

  constructor(private readonly limit: number) {}

  write(chunk: Buffer): void {
    const room = this.limit - this.size;
    if (room <= 0) {
      if (chunk.length > 0) this.truncated = true;
      return;
    }
    const kept = chunk.length > room ? chunk.subarray(0, room) : chunk;
    if (kept.length < chunk.length) this.truncated = true;
    this.chunks.push(Buffer.from(kept));
    this.size += kept.length;
  }

  /** Bytes kept. */
  get length(): number {
    return this.size;
  }

  toBuffer(): Buffer {
    return Buffer.concat(this.chunks, this.size);
  }
}
