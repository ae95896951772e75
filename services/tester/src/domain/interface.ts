import type { SourceFile } from '@ratchet/contracts';

const pythonDefinition = /^\s*(?:@[\w.]+.*|(?:async\s+)?def\s+\w+.*|class\s+\w+.*)$/;
/** A module-level constant (`EXIT_OK = 0`, `MAX: int = 5`): part of what a test may import. */
const pythonConstant = /^[A-Z][A-Z0-9_]*\s*(?::[^=]+)?=(?!=)/;
/** Longest constant line shown; a longer value is cut. */
const maxConstantChars = 120;
const scriptDefinition = /^\s*(?:export\s|module\.exports\b|exports\.\w+\s*=)/;

/**
 * The public interface of the code under test, without its bodies: Python
 * `def`/`class` lines (signatures that span lines kept whole, decorators
 * included) and module-level UPPER_CASE constants, and for TypeScript and JavaScript the exported declarations up
 * to their body. Tests written from this check the goal, not what the
 * implementation happens to do.
 */
export function interfaceOf(files: readonly SourceFile[]): SourceFile[] {
  return files.map((file) => {
    const lines = /\.py$/.test(file.path) ? pythonSignatures(file.content) : scriptSignatures(file.content);
    return { path: file.path, content: lines.length === 0 ? '(no public definitions found)\n' : `${lines.join('\n')}\n` };
  });
}

function pythonSignatures(content: string): string[] {
  const lines = content.split('\n');
  const kept: string[] = [];
  for (let index = 0; index < lines.length; index += 1) {
    const line = lines[index] ?? '';
    if (pythonConstant.test(line)) {
      kept.push(constantLine(line));
      continue;
    }
    if (!pythonDefinition.test(line) || line.trimStart().startsWith('def _') || line.trimStart().startsWith('async def _')) continue;
    // A signature over several lines ends where its brackets close.
    let signature = line;
    let depth = bracketDepth(line);
    while (depth > 0 && index + 1 < lines.length) {
      index += 1;
      signature += `\n${lines[index] ?? ''}`;
      depth += bracketDepth(lines[index] ?? '');
    }
    kept.push(signature.trimEnd().endsWith(':') || signature.trimStart().startsWith('@') ? signature : `${signature} ...`);
  }
  return kept;
}

/** A constant's line; a value that goes on past the line (open brackets, a triple-quoted string, a backslash) is shown as `...`, a long one cut. */
function constantLine(line: string): string {
  const text = line.trimEnd();
  if (bracketDepth(text) > 0 || text.endsWith('\\') || /=\s*[rbuf]*("""|''')/i.test(text)) return `${text.slice(0, text.indexOf('=') + 1)} ...`;
  return text.length > maxConstantChars ? `${text.slice(0, maxConstantChars)} ...` : text;
}

function scriptSignatures(content: string): string[] {
  return content
    .split('\n')
    .filter((line) => scriptDefinition.test(line))
    .map((line) => {
      const body = line.search(/\s*=>|\{\s*$|\{\s*\/\//);
      return (body > 0 ? line.slice(0, body) : line).trimEnd();
    });
}

function bracketDepth(line: string): number {
  let depth = 0;
  for (const character of line) {
    if (character === '(' || character === '[' || character === '{') depth += 1;
    else if (character === ')' || character === ']' || character === '}') depth -= 1;
  }
  return depth;
}
