import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { SandboxDriver, TestCaseStatus, type SandboxJob, type SandboxJobResult } from '@ratchet/contracts';
import { parse } from 'yaml';
import { booksApi } from '@ratchet/testing';
import { DockerDriver } from '../src';
import { sandboxJob } from './jobs';

// The shipped project profiles (config/profiles) in the real sandbox: their starting files, plus what a
// model would write on them, run with pytest the way the tester runs tests (JUnit report, test files
// protected), in the image the profile needs: ratchet-sandbox:3-data has Debian's Flask and pandas, so a
// web_app or data_pipeline task needs no package index. tools/ensure-docker.sh builds both images.
jest.setTimeout(120_000);

const dataImage = 'ratchet-sandbox:3-data';
const profilesDir = path.join(__dirname, '..', '..', '..', 'config', 'profiles');
const reportPath = '/tmp/ratchet-junit.xml';
const limits = { memoryBytes: 512 << 20, pids: 128, cpus: 1, timeout: { seconds: 60, nanos: 0 }, outputLimitBytes: 256 * 1024, workDirBytes: 32 << 20 };
const driver = new DockerDriver();
let counter = 0;

interface ProfileYaml {
  readonly layout: readonly { readonly path: string; readonly content?: string }[];
}

/** The profile's layout files that have starting content, by path. */
function startingFiles(profile: string): Record<string, string> {
  const parsed = parse(readFileSync(path.join(profilesDir, `${profile}.yaml`), 'utf8')) as ProfileYaml;
  return Object.fromEntries(parsed.layout.filter((file) => (file.content ?? '') !== '').map((file) => [file.path, file.content ?? '']));
}

/** `content` with `text` inserted after `anchor`, which must be in it once (a starting file the test builds on changed otherwise). */
function insertAfter(content: string, anchor: string, text: string): string {
  expect(content.split(anchor)).toHaveLength(2);
  return content.replace(anchor, `${anchor}${text}`);
}

/** Runs the test files of `files` as the tester does: python3 -m pytest with a JUnit report, the tests protected. */
async function runTests(files: Record<string, string>, image = ''): Promise<SandboxJobResult> {
  counter += 1;
  const tests = Object.keys(files).filter((file) => /(^|\/)(test_[^/]*\.py|conftest\.py)$/.test(file));
  const job: SandboxJob = sandboxJob(`profiles-test-${process.pid}-${counter}`, ['python3', '-m', 'pytest', '-q', '-p', 'no:cacheprovider', `--junitxml=${reportPath}`, ...tests.filter((file) => !file.endsWith('conftest.py'))], files, {
    limits,
    driver: SandboxDriver.SANDBOX_DRIVER_DOCKER,
    image,
    testReportPath: reportPath,
    protectedPaths: tests,
  });
  return driver.run(job);
}

/** What went wrong, for a failing expectation's message. */
function outputOf(result: SandboxJobResult): string {
  return `exit ${result.exitCode}\n${Buffer.from(result.stdout).toString('utf8')}\n${Buffer.from(result.stderr).toString('utf8')}`;
}

function expectPassed(result: SandboxJobResult, total: number): void {
  expect({ exitCode: result.exitCode, output: result.exitCode === 0 ? '' : outputOf(result) }).toEqual({ exitCode: 0, output: '' });
  expect(result.testReport).toMatchObject({ parsed: true, framework: 'pytest', total, passed: total, failed: 0, errored: 0 });
  expect(result.tamperedPaths).toEqual([]);
}

beforeAll(async () => {
  await driver.ping().catch((error: unknown) => {
    throw new Error(`Docker or the sandbox image is not available (${(error as Error).message}); run tools/ensure-docker.sh`);
  });
  // An informative failure on a machine set up before the data image was part of setup.
  const probe = await driver.run(sandboxJob(`profiles-test-${process.pid}-probe`, ['true'], {}, { driver: SandboxDriver.SANDBOX_DRIVER_DOCKER, image: dataImage }));
  if (probe.error !== undefined) throw new Error(`${dataImage} is not available (${probe.error.message}); run tools/ensure-docker.sh`);
});

afterAll(async () => {
  await driver.close();
});

describe('the web_app profile', () => {
  it('runs its starting files as they are: the health check and JSON errors through the test client', async () => {
    expectPassed(await runTests(startingFiles('web_app'), dataImage), 2);
  });

  it('runs a books API with SQLite built on its starting files, tested through the Flask test client, with Flask from the image', async () => {
    const files = startingFiles('web_app');
    const result = await runTests({ ...files, 'app.py': booksApi.app(files['app.py'] ?? ''), 'tests/test_books.py': booksApi.tests }, dataImage);
    expectPassed(result, 9);
    expect(result.testReport?.cases.filter((testCase) => testCase.status === TestCaseStatus.TEST_CASE_STATUS_PASSED).map((testCase) => testCase.name)).toContain('test_creates_a_book_and_lists_it');
    // Nothing was installed: Flask came with the image.
    expect(result.install).toBeUndefined();
  });

  it('cannot run on the plain image, which has no Flask (the dependency policy installs it there)', async () => {
    const result = await runTests(startingFiles('web_app'));
    expect(result.exitCode).not.toBe(0);
    expect(outputOf(result)).toContain("No module named 'flask'");
  });
});

describe('the cli_tool profile', () => {
  it('runs its starting tests (main(argv) with capsys, and python -m cli in a subprocess) on the plain image', async () => {
    expectPassed(await runTests(startingFiles('cli_tool')), 3);
  });

  it('runs a word counter built on its starting files, checked by output and exit code', async () => {
    const files = startingFiles('cli_tool');
    let cli = files['cli.py'] ?? '';
    cli = insertAfter(cli, 'description="What the program does, in one line.")\n', '    parser.add_argument("file", help="the text file to count, or - for stdin")\n');
    cli = cli.replace(
      '    return EXIT_OK\n\n\nif __name__',
      [
        '    try:',
        '        text = sys.stdin.read() if args.file == "-" else open(args.file, encoding="utf-8").read()',
        '    except OSError as error:',
        '        print(f"cli: error: {args.file}: {error.strerror}", file=sys.stderr)',
        '        return EXIT_FAILURE',
        '    print(len(text.split()))',
        '    return EXIT_OK',
        '',
        '',
        'if __name__',
      ].join('\n'),
    );
    const tests = [
      'from cli import EXIT_FAILURE, EXIT_OK, main',
      '',
      '',
      'def test_counts_the_words_of_a_file(tmp_path, capsys):',
      '    text = tmp_path / "words.txt"',
      '    text.write_text("one two\\nthree\\n", encoding="utf-8")',
      '    assert main([str(text)]) == EXIT_OK',
      '    assert capsys.readouterr().out == "3\\n"',
      '',
      '',
      'def test_a_missing_file_is_a_failure_on_stderr(run_cli):',
      '    result = run_cli("missing.txt")',
      '    assert result.returncode == EXIT_FAILURE',
      '    assert result.stdout == ""',
      '    assert result.stderr == "cli: error: missing.txt: No such file or directory\\n"',
      '',
      '',
      'def test_reads_stdin_for_dash(run_cli):',
      '    result = run_cli("-", stdin="a b c d")',
      '    assert (result.returncode, result.stdout) == (EXIT_OK, "4\\n")',
      '',
    ].join('\n');
    expectPassed(await runTests({ ...files, 'cli.py': cli, 'tests/test_count.py': tests }), 6);
  });
});

describe('the data_pipeline profile', () => {
  it('runs a pandas pipeline built on its starting files against a golden-file case, with pandas from the image', async () => {
    const files = startingFiles('data_pipeline');
    let pipeline = files['pipeline.py'] ?? '';
    pipeline = insertAfter(pipeline, 'from pathlib import Path\n', '\nimport pandas as pd\n');
    pipeline = insertAfter(
      pipeline,
      '    output_dir.mkdir(parents=True, exist_ok=True)\n',
      [
        '    sales = pd.read_csv(input_dir / "data.csv", dtype={"category": str, "amount": float})',
        '    totals = sales.dropna(subset=["amount"]).groupby("category", as_index=False)["amount"].sum().sort_values("category")',
        '    totals["amount"] = totals["amount"].round(2)',
        '    totals.to_csv(output_dir / "result.csv", index=False, lineterminator="\\n")',
        '',
      ].join('\n'),
    );
    const result = await runTests(
      {
        ...files,
        'pipeline.py': pipeline,
        'tests/fixtures/basic/input/data.csv': 'category,amount\nbooks,12.5\ntoys,3\nbooks,7.25\ntoys,\n',
        'tests/fixtures/basic/expected/result.csv': 'category,amount\nbooks,19.75\ntoys,3.0\n',
      },
      dataImage,
    );
    expectPassed(result, 1);
    expect(result.testReport?.cases.map((testCase) => testCase.name)).toEqual(['test_pipeline_writes_the_expected_files[basic]']);
  });
});
