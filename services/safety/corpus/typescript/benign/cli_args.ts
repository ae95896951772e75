// Parses --key=value command-line arguments.
export function parseArgs(argv: readonly string[] = process.argv.slice(2)): Record<string, string | boolean> {
  const options: Record<string, string | boolean> = {};
  for (const arg of argv) {
    const match = /^--([^=]+)(?:=(.*))?$/.exec(arg);
    if (match?.[1] !== undefined) options[match[1]] = match[2] ?? true;
  }
  return options;
}
