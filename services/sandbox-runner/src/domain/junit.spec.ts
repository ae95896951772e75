import { describe, expect, it } from '@jest/globals';
import { TestCaseStatus } from '@ratchet/contracts';
import { parseJUnit } from './junit';

// Written by pytest 7 and node 24 in the sandbox image.
const pytestXml = `<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" errors="1" failures="1" skipped="1" tests="4" time="0.022"><testcase classname="tests.test_p" name="test_ok" time="0.001" /><testcase classname="tests.test_p" name="test_bad" time="0.000"><failure message="assert 1 == 2">def test_bad():
&gt;       assert 1 == 2
E       assert 1 == 2

tests/test_p.py:5: AssertionError</failure></testcase><testcase classname="tests.test_p" name="test_skip" time="0.000"><skipped type="pytest.skip" message="unconditional skip">/w/tests/test_p.py:6: unconditional skip</skipped></testcase><testcase classname="tests.test_p" name="test_err" time="0.000"><error message="failed on setup with &quot;file /w/tests/test_p.py, line 9&quot;">file /w/tests/test_p.py, line 9
E       fixture 'missing' not found</error></testcase><testcase classname="tests.test_todo" name="test_first_use" time="0.002"><failure message="FileNotFoundError: [Errno 2] No such file or directory: '/tmp/x/todo.json'">tests/test_todo.py:8: FileNotFoundError</failure></testcase></testsuite></testsuites>`;

const nodeXml = `<?xml version="1.0" encoding="utf-8"?>
<testsuites>
	<testcase name="ok" time="0.000875" classname="test" file="/w/tests/a.test.ts"/>
	<testsuite name="group" time="0.002086" tests="2" failures="1" skipped="1">
		<testcase name="bad" time="0.001283" classname="group" file="/w/tests/a.test.ts" failure="Expected values to be strictly equal:&#10;&#10;1 !== 2&#10;">
			<failure type="testCodeFailure" message="Expected values to be strictly equal:&#10;&#10;1 !== 2">
Error [ERR_TEST_FAILURE]: Expected values to be strictly equal:
			</failure>
		</testcase>
		<testcase name="sk" time="0.000274" classname="group" file="/w/tests/a.test.ts">
			<skipped type="skipped" message="true"/>
		</testcase>
	</testsuite>
	<!-- tests 3 -->
</testsuites>`;

describe('parseJUnit', () => {
  it('reads pytest reports: statuses, module as suite, and the error type in front of a bare assert message', () => {
    const report = parseJUnit(pytestXml, 'pytest');
    expect(report).toMatchObject({ parsed: true, total: 5, passed: 1, failed: 2, errored: 1, skipped: 1 });
    const [ok, bad, skip, err, missing] = report.cases;
    expect(ok).toMatchObject({ name: 'test_ok', suite: 'tests.test_p', status: TestCaseStatus.TEST_CASE_STATUS_PASSED, duration: { seconds: 0, nanos: 1_000_000 } });
    expect(bad).toMatchObject({ status: TestCaseStatus.TEST_CASE_STATUS_FAILED, failureMessage: 'AssertionError: assert 1 == 2' });
    expect(bad!.failureDetail).toContain('E       assert 1 == 2');
    expect(skip!.status).toBe(TestCaseStatus.TEST_CASE_STATUS_SKIPPED);
    expect(err).toMatchObject({ status: TestCaseStatus.TEST_CASE_STATUS_ERRORED, failureMessage: 'failed on setup with "file /w/tests/test_p.py, line 9"' });
    expect(missing!.failureMessage).toBe("FileNotFoundError: [Errno 2] No such file or directory: '/tmp/x/todo.json'");
  });

  it("reads node's reports: cases at the top and inside describe suites", () => {
    const report = parseJUnit(nodeXml, 'node:test');
    expect(report).toMatchObject({ parsed: true, total: 3, passed: 1, failed: 1, skipped: 1 });
    expect(report.cases[1]).toMatchObject({ name: 'bad', suite: 'group', file: '/w/tests/a.test.ts', failureMessage: 'Expected values to be strictly equal:\n\n1 !== 2' });
  });

  it('counts cases itself rather than trusting the attributes', () => {
    const forged = '<testsuites><testsuite name="x" tests="10" failures="0"><testcase name="a"><failure message="no"/></testcase></testsuite></testsuites>';
    expect(parseJUnit(forged, 'pytest')).toMatchObject({ total: 1, failed: 1, passed: 0 });
  });

  it('says why when there is no report or it is not a report', () => {
    expect(parseJUnit(undefined, 'pytest')).toMatchObject({ parsed: false, parseError: expect.stringContaining('wrote no JUnit report') });
    expect(parseJUnit('<html>', 'pytest')).toMatchObject({ parsed: false });
    expect(parseJUnit('<html></html>', 'pytest')).toMatchObject({ parsed: false, parseError: expect.stringContaining('no <testsuites>') });
    expect(parseJUnit('<testsuites></testsuites>', 'pytest')).toMatchObject({ parsed: true, total: 0 });
  });
});
