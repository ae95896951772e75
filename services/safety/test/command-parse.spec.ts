import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { loadParsers, parseCommandLine, ParseProblemKind, type Parsers, type SimpleCommand } from '../src';

let parsers: Parsers;
beforeAll(async () => {
  parsers = await loadParsers();
});
afterAll(() => parsers.close());

function commands(commandLine: string): readonly SimpleCommand[] {
  const parsed = parseCommandLine(parsers, commandLine, { maxNestingDepth: 3 });
  if (!parsed.ok) throw new Error(parsed.problem.message);
  return parsed.commands;
}

/** Each command as its word values, `?` for a dynamic word. */
function values(commandLine: string): string[][] {
  return commands(commandLine).map((command) => command.words.map((word) => word.value ?? '?'));
}

describe('parseCommandLine', () => {
  it('finds every simple command of pipelines, lists, subshells, substitutions and function bodies', () => {
    expect(values('a | b && (c; d) || { e; } ; f=$(g) h `i` <(j)')).toEqual([['a'], ['b'], ['c'], ['d'], ['e'], ['g'], ['i'], ['j'], ['h', '?', '?']]);
    expect(values('if t; then u; else v; fi; for x in 1 2; do w "$x"; done; f() { y; }')).toEqual([['t'], ['u'], ['v'], ['w', '?'], ['y']]);
  });

  it('resolves quoting, escapes and concatenation; expansions make a word dynamic', () => {
    const [command] = commands(`echo 'a b' "c \\"d\\" \\$e" f\\ g $'h\\tі' "x"'y'z "$HOME/p" \${PWD}/q "$V/r" a{1,2}`);
    expect(command?.words.map((word) => word.value)).toEqual(['echo', 'a b', 'c "d" $e', 'f g', 'h\tі', 'xyz', '~/p', './q', undefined, 'a{1,2}']);
    expect(command?.words[8]).toEqual({ text: '"$V/r"', value: undefined, prefix: '' });
    expect(commands('rm -rf "/etc/$X"')[0]?.words[2]).toEqual({ text: '"/etc/$X"', value: undefined, prefix: '/etc/' });
  });

  it('keeps the text of a double-quoted string that tree-sitter folds into the quotes', () => {
    expect(commands('echo "  $x  y "')[0]?.words[1]).toEqual({ text: '"  $x  y "', value: undefined, prefix: '  ' });
    expect(values('echo "a  b " "" "$"')).toEqual([['echo', 'a  b ', '', '$']]);
  });

  it('collects redirections, of the command and of the statement around it', () => {
    const [command] = commands('cat <<EOF > out.txt 2>&1\nbody\nEOF');
    expect(command?.redirects.map((redirect) => [redirect.operator, redirect.target.value])).toEqual([
      ['>', 'out.txt'],
      ['>&', '1'],
    ]);
    const [bare] = commands('> /etc/motd');
    expect(bare).toMatchObject({ words: [], redirects: [{ operator: '>', target: { value: '/etc/motd' } }] });
  });

  it('tells each pipeline stage what reads its output', () => {
    expect(commands('curl x | tee f | sudo sh').map((command) => command.pipedInto)).toEqual([['tee', 'sudo', 'sh'], ['sudo', 'sh'], [], []]);
  });

  it('follows cd into the commands after it, but not out of a child shell', () => {
    expect(commands('cd src && a; (cd /; b); c | cd /x; d; cd $X; e; cd; f').map((command) => [command.words[0]?.value, command.directory])).toEqual([
      ['cd', ''],
      ['a', 'src'],
      ['cd', 'src'],
      ['b', '/'],
      ['c', 'src'],
      ['cd', 'src'],
      ['d', 'src'],
      ['cd', 'src'],
      ['e', undefined],
      ['cd', undefined],
      ['f', '~'],
    ]);
  });

  it('unwraps what wrappers run, and records the way there', () => {
    const found = commands('sudo -u root env A=1 timeout -s KILL 5 nice -n 3 xargs -0 rm -f');
    expect(found.map((command) => [command.words.map((word) => word.value ?? '?').join(' '), command.via.join(' > ')])).toEqual([
      ['sudo -u root env A=1 timeout -s KILL 5 nice -n 3 xargs -0 rm -f', ''],
      ['env A=1 timeout -s KILL 5 nice -n 3 xargs -0 rm -f', 'sudo'],
      ['timeout -s KILL 5 nice -n 3 xargs -0 rm -f', 'sudo > env'],
      ['nice -n 3 xargs -0 rm -f', 'sudo > env > timeout'],
      ['xargs -0 rm -f', 'sudo > env > timeout > nice'],
      ['rm -f ?', 'sudo > env > timeout > nice > xargs'],
    ]);
    expect(values('command -v git; python3 -m pip install x; find . -exec rm {} \\; -execdir touch {} +')).toEqual([
      ['command', '-v', 'git'],
      ['python3', '-m', 'pip', 'install', 'x'],
      ['pip', 'install', 'x'],
      ['find', '.', '-exec', 'rm', '{}', ';', '-execdir', 'touch', '{}', '+'],
      ['rm', './{}'],
      ['touch', './{}'],
    ]);
  });

  it('parses shell strings and points their commands at the command holding them', () => {
    const found = commands('ls\nbash -ec "cd /; eval \'git push\'"');
    expect(found.map((command) => [command.words[0]?.value, command.line, command.column, command.via.join(' > '), command.directory])).toEqual([
      ['ls', 1, 1, '', ''],
      ['bash', 2, 1, '', ''],
      ['cd', 2, 1, 'bash -c', ''],
      ['eval', 2, 1, 'bash -c', '/'],
      ['git', 2, 1, 'bash -c > eval', '/'],
    ]);
    expect(found[4]?.text).toBe(`bash -ec "cd /; eval 'git push'"`);
  });

  it('marks calls of a function that calls itself', () => {
    expect(commands('f() { echo; }; f; g() { g | g & }; g').map((command) => [command.words[0]?.value, command.recursiveFunction])).toEqual([
      ['echo', false],
      ['f', false],
      ['g', true],
      ['g', true],
      ['g', true],
    ]);
  });

  it('knows where standard input comes from: a pipe, a here-doc, a here-string or a file', () => {
    expect(commands('cat a | sh; python3 < in.txt; bash <<< "ls"').map((command) => [command.words[0]?.value, command.stdin?.kind])).toEqual([
      ['cat', undefined],
      ['sh', 'pipe'],
      ['python3', 'file'],
      ['bash', 'herestring'],
      ['ls', undefined],
    ]);
    // A here-doc with a quoted delimiter is literal; one with $(...) is made at run time.
    const [quoted] = commands("python3 - <<'EOF'\nprint($x)\nEOF");
    expect(quoted?.stdin).toEqual({ kind: 'heredoc', body: expect.objectContaining({ value: 'print($x)\n' }) });
    const generated = commands('cat <<EOF\n$(date) \\$HOME\nEOF').find((command) => command.words[0]?.value === 'cat');
    expect(generated?.stdin).toEqual({ kind: 'heredoc', body: expect.objectContaining({ value: undefined, generated: true }) });
    expect(commands('cat <<EOF\ncost: \\$5\nEOF')[0]?.stdin).toEqual({ kind: 'heredoc', body: expect.objectContaining({ value: 'cost: $5\n' }) });
    // A compound statement passes its redirection on.
    expect(commands('{ sh; } < run.sh').map((command) => command.stdin?.kind)).toEqual(['file']);
  });

  it('walks the script a shell reads from a here-doc or here-string', () => {
    expect(commands("bash <<'EOF'\ngit push\nEOF").map((command) => [command.words[0]?.value, command.via.join(' > ')])).toEqual([
      ['bash', ''],
      ['git', 'bash <<'],
    ]);
    expect(values('sh <<< "$SCRIPT"')).toEqual([['sh'], ['?']]);
  });

  it('marks words a command makes at run time, and not words that only hold variables', () => {
    const command = commands('x "$(date)" <(ls) `id` "$HOME/a" $X').find((found) => found.words[0]?.value === 'x');
    expect(command?.words.slice(1).map((word) => word.generated === true)).toEqual([true, true, true, false, false]);
    expect(commands('ls | xargs sh')[2]?.words[1]).toMatchObject({ value: undefined, generated: true });
  });

  it('records the assignments a command runs with, and checks the values of variables that hold commands', () => {
    const found = commands("A=1 GIT_PAGER='git push' git log; env B=2 ls; export EDITOR=vim X=1");
    expect(found.map((command) => [command.words.map((word) => word.value ?? '?').join(' '), command.assignments.map((word) => word.value).join(' ')])).toEqual([
      ['git log', 'A=1 GIT_PAGER=git push'],
      ['git push', ''],
      ['env B=2 ls', ''],
      ['ls', 'B=2'],
      ['export EDITOR=vim X=1', ''],
      ['vim', ''],
    ]);
  });

  it('reports syntax errors and too deep nesting instead of throwing', () => {
    expect(parseCommandLine(parsers, 'ls )', { maxNestingDepth: 3 })).toEqual({ ok: false, problem: expect.objectContaining({ kind: ParseProblemKind.SYNTAX, line: 1, column: 4 }) });
    expect(parseCommandLine(parsers, `sh -c "sh -c 'ls'"`, { maxNestingDepth: 1 })).toEqual({ ok: false, problem: expect.objectContaining({ kind: ParseProblemKind.TOO_COMPLEX }) });
    expect(parseCommandLine(parsers, `sh -c "sh -c 'ls'"`, { maxNestingDepth: 2 }).ok).toBe(true);
  });
});
