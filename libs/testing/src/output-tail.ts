/** Keeps the last lines a child process wrote, for error messages. */
export class OutputTail {
  readonly #lines: string[] = [];
  readonly #partial = new Map<string, string>();

  constructor(private readonly maxLines = 200) {}

  /** Appends a chunk from one stream; `stream` keeps stdout and stderr lines apart. */
  append(stream: string, chunk: Buffer | string): void {
    const text = (this.#partial.get(stream) ?? '') + chunk.toString();
    const lines = text.split('\n');
    this.#partial.set(stream, lines.pop() ?? '');
    for (const line of lines) this.#push(line);
  }

  /** Marks a point in the output, e.g. a restart, so readers can tell runs apart. */
  note(line: string): void {
    this.#push(`--- ${line} ---`);
  }

  /** The kept lines, oldest first, including any unterminated last line. */
  text(): string {
    const pending = [...this.#partial.values()].filter((line) => line.length > 0);
    return [...this.#lines, ...pending].join('\n');
  }

  #push(line: string): void {
    this.#lines.push(line.replace(/\r$/, ''));
    if (this.#lines.length > this.maxLines) this.#lines.splice(0, this.#lines.length - this.maxLines);
  }
}
