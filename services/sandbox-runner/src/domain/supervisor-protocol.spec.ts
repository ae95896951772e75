import { describe, expect, it } from '@jest/globals';
import { Language, SandboxDriver, type SandboxJob } from '@ratchet/contracts';
import tar from 'tar-stream';
import { FrameReader, FrameType, jobInput, readOutputs } from './supervisor-protocol';
import { tamperedPaths } from './supervisor-session';
import { stripControlSequences } from './terminal-text';

function archive(entries: (Partial<tar.Header> & { name: string })[]): Promise<Buffer> {
  const pack = tar.pack();
  const chunks: Buffer[] = [];
  pack.on('data', (chunk: unknown) => chunks.push(chunk as Buffer));
  for (const entry of entries) {
    if (entry.type === 'file') pack.entry(entry, `content of ${entry.name}`);
    else pack.entry(entry);
  }
  pack.finalize();
  return new Promise((resolve) => pack.on('end', () => resolve(Buffer.concat(chunks))));
}

const job = (overrides: Partial<SandboxJob> = {}): SandboxJob => ({
  jobId: 'j',
  taskId: 't',
  iteration: 1,
  language: Language.LANGUAGE_PYTHON,
  dataFiles: [],
  setupCommand: '',
  files: [
    { path: 'calc.py', content: 'x = 1\n' },
    { path: 'tests/test_calc.py', content: 'def test(): pass\n' },
  ],
  commands: [{ name: 'run', argv: ['true'], workingDirectory: '', timeout: undefined }],
  env: { GREETING: 'hi' },
  limits: undefined,
  driver: SandboxDriver.SANDBOX_DRIVER_UNSPECIFIED,
  image: '',
  testReportPath: '/tmp/r.xml',
  protectedPaths: ['tests/test_calc.py'],
  dependencies: [],
  enqueuedAt: undefined,
  deadline: undefined,
  ...overrides,
});

describe('readOutputs', () => {
  it('keeps regular files and refuses links, devices, tar-slip and absolute names, duplicates and what is over the caps', async () => {
    const data = await archive([
      { name: 'ok.txt', type: 'file' },
      { name: '../../etc/cron.d/evil', type: 'file' },
      { name: '/etc/passwd', type: 'file' },
      { name: 'a/./b', type: 'file' },
      { name: 'link', type: 'symlink', linkname: '/etc/shadow' },
      { name: 'hard', type: 'link', linkname: 'ok.txt' },
      { name: 'device', type: 'character-device' },
      { name: 'ok.txt', type: 'file' },
    ]);
    const outputs = await readOutputs(data);
    expect([...outputs.files.keys()]).toEqual(['ok.txt']);
    expect(outputs.files.get('ok.txt')?.toString()).toBe('content of ok.txt');
    expect(outputs.rejected).toEqual([
      '../../etc/cron.d/evil: a name that leaves the work directory or is not normalised',
      '/etc/passwd: an absolute or empty name',
      'a/./b: a name that leaves the work directory or is not normalised',
      'link: a symlink; only regular files are read back',
      'hard: a hardlink; only regular files are read back',
      'device: a character-device; only regular files are read back',
      'ok.txt: appears twice',
    ]);
    const capped = await readOutputs(await archive([{ name: 'a', type: 'file' }, { name: 'b', type: 'file' }, { name: 'c', type: 'file' }]), { maxBytes: 20, maxFiles: 2 });
    expect([...capped.files.keys()]).toEqual(['a']);
    expect(capped.rejected).toEqual(['b: over the 20-byte output cap', 'c: more than 2 files']);
  });

  it('says so when the archive is malformed, keeping what came before', async () => {
    const good = await archive([{ name: 'first', type: 'file' }]);
    const broken = Buffer.concat([good.subarray(0, 1024), Buffer.from('garbage'.repeat(100))]);
    const outputs = await readOutputs(broken);
    expect(outputs.files.has('first')).toBe(true);
    expect(outputs.rejected.at(-1)).toMatch(/malformed/);
  });
});

describe('FrameReader', () => {
  it('reassembles frames cut anywhere', () => {
    const frame = (type: number, text: string) => Buffer.concat([Buffer.from([type, 0, 0, 0, Buffer.byteLength(text)]), Buffer.from(text)]);
    const stream = Buffer.concat([frame(FrameType.STDOUT, 'hello'), frame(FrameType.EVENT, '{"ready":true}'), frame(FrameType.DONE, '{}')]);
    const reader = new FrameReader();
    const frames = [];
    for (let offset = 0; offset < stream.length; offset += 3) frames.push(...reader.push(stream.subarray(offset, offset + 3)));
    expect(frames.map((item) => [item.type, item.payload.toString()])).toEqual([
      [FrameType.STDOUT, 'hello'],
      [FrameType.EVENT, '{"ready":true}'],
      [FrameType.DONE, '{}'],
    ]);
  });
});

describe('jobInput', () => {
  it('sends the spec as JSON and the files as length-prefixed records, with worker counts and the job env', () => {
    const input = jobInput(job(), { memoryBytes: 1, pids: 2, cpus: 2.5, timeoutMs: 3000, outputLimitBytes: 4, workDirBytes: 5 });
    const specLength = input.readUInt32BE(0);
    const spec = JSON.parse(input.subarray(4, 4 + specLength).toString()) as { env: Record<string, string>; collect: string[][]; collectNames: string[]; rlimits: Record<string, number> };
    expect(spec.env).toMatchObject({ GREETING: 'hi', RATCHET_CPUS: '2', OMP_NUM_THREADS: '2', HOME: '/tmp' });
    // Only what the result needs comes back: the report and the protected file, not the code.
    expect(spec.collect).toEqual([
      ['/tmp/r.xml', '.ratchet-report/junit.xml'],
      ['tests/test_calc.py', 'tests/test_calc.py'],
    ]);
    expect(spec.collectNames).toContain('conftest.py');
    const unprotected = jobInput(job({ protectedPaths: [], testReportPath: '' }), { memoryBytes: 1, pids: 2, cpus: 1, timeoutMs: 3000, outputLimitBytes: 4, workDirBytes: 5 });
    expect(JSON.parse(unprotected.subarray(4, 4 + unprotected.readUInt32BE(0)).toString())).toMatchObject({ collect: [], collectNames: [] });
    expect(spec.rlimits).toMatchObject({ fsize: 5, cpu: 4, core: 0 });
    const files = input.subarray(8 + specLength);
    expect(input.readUInt32BE(4 + specLength)).toBe(files.length);
    const nameLength = files.readUInt32BE(0);
    expect(files.subarray(4, 4 + nameLength).toString()).toBe('calc.py');
  });
});

describe('tamperedPaths', () => {
  const content = (text: string) => Buffer.from(text);
  it('lists changed or missing protected files and test configuration the run made', () => {
    const files = new Map([
      ['tests/test_calc.py', content('def test(): assert True\n')],
      ['conftest.py', content('import pytest\n')],
      ['sub/pytest.ini', content('[pytest]\n')],
      ['calc.py', content('changed code is fine\n')],
    ]);
    expect(tamperedPaths(job(), files, ['tests/conftest.py: a symlink; only regular files are read back'])).toEqual([
      'tests/test_calc.py (changed)',
      'conftest.py (created by the run)',
      'sub/pytest.ini (created by the run)',
      'tests/conftest.py (a symlink; only regular files are read back)',
    ]);
    expect(tamperedPaths(job(), new Map())).toEqual(['tests/test_calc.py (removed or replaced by a non-file)']);
    expect(tamperedPaths(job(), new Map([['tests/test_calc.py', content('def test(): pass\n')]]))).toEqual([]);
    expect(tamperedPaths(job({ protectedPaths: [] }), files)).toEqual([]);
  });
});

describe('stripControlSequences', () => {
  const strip = (text: string) => stripControlSequences(Buffer.from(text, 'latin1')).toString('latin1');
  it('removes CSI, OSC, DCS and two-byte escapes, C0 and C1 controls, and lone carriage returns', () => {
    expect(strip('\x1b[31mred\x1b[0m')).toBe('red');
    expect(strip('a\x1b]0;title\x07b\x1b]52;c;Y2xpcA==\x1b\\c')).toBe('abc');
    expect(strip('a\x1bPq#0;1\x1b\\b')).toBe('ab');
    expect(strip('a\x1b(Bb\x1bcc')).toBe('abc');
    expect(strip('a\x00\x07\x08\x7fb\tc\n')).toBe('ab\tc\n');
    expect(strip('line\r\nover\rwrite')).toBe('line\r\noverwrite');
    expect(strip('a\xc2\x9b31mb\xc2\x9d0;t\xc2\x9cc')).toBe('abc');
  });

  it('keeps invalid UTF-8 and an unterminated OSC does not hide what follows 4 KiB later', () => {
    expect(stripControlSequences(Buffer.from([0xff, 0xfe, 0x41])).equals(Buffer.from([0xff, 0xfe, 0x41]))).toBe(true);
    const long = `\x1b]${'x'.repeat(5000)}`;
    expect(strip(long)).toBe(`${'x'.repeat(5000)}`);
    expect(strip('ok\x1b]unterminated')).toBe('ok');
  });
});
