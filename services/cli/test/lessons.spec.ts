import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { TaskStatus } from '@ratchet/contracts';
import { ErrorCode } from '@ratchet/errors';
import { runGoal, showTask } from '../src/commands';
import { exportLessons, forgetLesson, importLessons, listLessons, showLesson } from '../src/lessons-command';
import { codeReply, failure, planReply, RecordedOutput, scripted, temporaryDirectory, testsReply } from './helpers';

// `ratchet lessons` on embedded data: what two real tasks (Docker sandbox,
// PGlite, every service; the model scripted) leave in memory, why each
// lesson ranks where it does, and moving memory between installations.
jest.setTimeout(120_000);

const test = 'from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n';
const lessonTitle = 'Add numbers with the plus operator, never subtract';
const reflection = JSON.stringify({
  rootCause: 'add() subtracts its arguments',
  hypothesis: 'using + makes the test pass',
  fixDirection: 'return a + b',
  confidence: 0.9,
  replanRecommended: false,
  lesson: { title: lessonTitle, body: 'A function that adds two numbers returns a + b: check the operator before anything else.', tags: ['arithmetic'] },
  relevantLessonIds: [],
});
// A plan that cites the lessons it was offered by their list numbers.
const citingPlan = JSON.stringify({ ...JSON.parse(planReply('calc.py', 'tests/test_calc.py')), appliedLessonIds: ['1', '2'] });

describe('ratchet lessons (embedded)', () => {
  let dir: string;
  let remove: () => Promise<void>;
  let dataDir: string;
  const project = 'github.com/acme/calc';
  beforeAll(async () => {
    ({ dir, remove } = await temporaryDirectory());
    process.env['RATCHET_CONFIG_DIR'] = path.resolve(__dirname, '../../../config');
    dataDir = path.join(dir, 'data');
  });
  afterAll(async () => {
    await remove();
  });

  it('a failure leaves a candidate lesson in the project; a later task that applies it and succeeds promotes it', async () => {
    const first = scripted([
      { role: 'planner', reply: planReply('calc.py', 'tests/test_calc.py') },
      { role: 'coder', reply: codeReply('calc.py', 'def add(a, b):\n    return a - b\n') },
      { role: 'tester', reply: testsReply('tests/test_calc.py', test) },
      { role: 'reflector', reply: reflection },
      { role: 'coder', reply: codeReply('calc.py', 'def add(a, b):\n    return a + b\n') },
    ]);
    const one = await runGoal('a function that adds two numbers', { lang: 'python', out: path.join(dir, 'out-1'), dataDir, models: first.models, project }, new RecordedOutput());
    expect(one.task.status).toBe(TaskStatus.TASK_STATUS_SUCCEEDED);

    const listed = new RecordedOutput();
    await listLessons({ dataDir, json: true }, listed);
    const lessons = listed.lines.map((line) => JSON.parse(line) as { id: string; title: string; scope: string; status: string });
    const lesson = lessons.find((item) => item.title === lessonTitle);
    expect(lesson).toMatchObject({ scope: project, status: 'LESSON_STATUS_CANDIDATE' });
    expect(lessons.every((item) => item.scope === project)).toBe(true);

    const second = scripted([
      { role: 'planner', expect: [lessonTitle], reply: citingPlan },
      { role: 'coder', reply: codeReply('calc.py', 'def add(a, b):\n    return a + b\n') },
      { role: 'tester', reply: testsReply('tests/test_calc.py', test) },
    ]);
    const two = await runGoal('a function that adds two numbers, for a calculator', { lang: 'python', out: path.join(dir, 'out-2'), dataDir, models: second.models, project }, new RecordedOutput());
    expect(two.task.status).toBe(TaskStatus.TASK_STATUS_SUCCEEDED);
    const shownTask = new RecordedOutput();
    await showTask(two.task.id, { dataDir }, shownTask);
    expect(shownTask.all).toContain(`project: ${project}`);

    const shown = new RecordedOutput();
    await showLesson(lesson!.id.slice(0, 8), { dataDir }, shown);
    expect(shown.all).toContain(`title: ${lessonTitle}`);
    expect(shown.all).toMatch(/status: promoted, weight \d\.\d\d/);
    expect(shown.all).toContain('promoted: a later task applied it and succeeded');
    expect(shown.all).toContain('applied by 1 later task(s) (1 succeeded)');
    expect(shown.all).toContain(`evidence: task ${one.task.id} iteration 1`);

    const table = new RecordedOutput();
    await listLessons({ dataDir }, table);
    expect(table.all).toMatch(new RegExp(`${lesson!.id.slice(0, 8)}  promoted  w=\\d\\.\\d\\d  applied 1x`));
  });

  it('exports lessons, imports them into another installation once, and forgets one', async () => {
    const file = path.join(dir, 'lessons.json');
    await exportLessons(file, { dataDir }, new RecordedOutput());
    const exported = JSON.parse(await readFile(file, 'utf8')) as { format: string; version: number; lessons: { id: string; title: string }[] };
    expect(exported).toMatchObject({ format: 'ratchet-lessons', version: 1 });
    expect(exported.lessons.map((lesson) => lesson.title)).toContain(lessonTitle);
    expect((await failure(exportLessons(file, { dataDir }, new RecordedOutput()))).code).toBe(ErrorCode.ALREADY_EXISTS);

    const otherData = path.join(dir, 'other-data');
    const imported = new RecordedOutput();
    await importLessons(file, { dataDir: otherData }, imported);
    expect(imported.all).toContain(`imported ${exported.lessons.length} lesson(s)`);
    const again = new RecordedOutput();
    await importLessons(file, { dataDir: otherData }, again);
    expect(again.all).toContain(`imported 0 lesson(s) from ${file}; ${exported.lessons.length} already stored, skipped`);
    const listed = new RecordedOutput();
    await listLessons({ dataDir: otherData, json: true }, listed);
    expect(listed.lines.map((line) => (JSON.parse(line) as { id: string }).id).sort()).toEqual(exported.lessons.map((lesson) => lesson.id).sort());

    const future = path.join(dir, 'future.json');
    await writeFile(future, JSON.stringify({ ...exported, version: 2 }));
    const refused = await failure(importLessons(future, { dataDir: otherData }, new RecordedOutput()));
    expect(refused.code).toBe(ErrorCode.FAILED_PRECONDITION);
    expect(refused.message).toContain('export format version 2');
    await writeFile(future, '{"lessons": [');
    expect((await failure(importLessons(future, { dataDir: otherData }, new RecordedOutput()))).message).toContain('is not a lessons export');

    const victim = exported.lessons.find((lesson) => lesson.title === lessonTitle)!;
    await forgetLesson(victim.id, { dataDir: otherData }, new RecordedOutput());
    const after = new RecordedOutput();
    await listLessons({ dataDir: otherData, json: true }, after);
    expect(after.all).not.toContain(victim.id);
    expect((await failure(showLesson(victim.id, { dataDir: otherData }, new RecordedOutput()))).code).toBe(ErrorCode.NOT_FOUND);
  });
});
