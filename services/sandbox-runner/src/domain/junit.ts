import { TestCaseStatus, type TestCase, type TestReport } from '@ratchet/contracts';
import { XMLParser } from 'fast-xml-parser';
import { durationFromMs } from '@ratchet/agent';

/** Longest failure detail kept per case, in characters. */
const maxDetailChars = 4_000;

const parser = new XMLParser({
  ignoreAttributes: false,
  // Prefixed, because node's reporter puts a `failure` attribute next to a <failure> child.
  attributeNamePrefix: '@_',
  textNodeName: '#text',
  // Every element as an array, so one testcase and many look the same.
  isArray: (name) => ['testsuite', 'testcase', 'failure', 'error', 'skipped'].includes(name),
  processEntities: true,
  htmlEntities: true,
  parseAttributeValue: false,
  parseTagValue: false,
  trimValues: false,
});

type Element = Record<string, unknown>;

/**
 * A TestReport from JUnit XML as pytest (`--junitxml`) and node's test runner
 * (`--test-reporter=junit`) write it: cases at any depth of nested suites,
 * failures, errors and skips with their messages. Totals are counted from
 * the cases, not taken from attributes the code under test could forge.
 * A missing or malformed document gives `parsed: false` and why.
 */
export function parseJUnit(xml: string | undefined, framework: string): TestReport {
  const empty: TestReport = { framework, total: 0, passed: 0, failed: 0, errored: 0, skipped: 0, duration: undefined, cases: [], parsed: false, parseError: '' };
  if (xml === undefined || xml.trim() === '') return { ...empty, parseError: 'the test run wrote no JUnit report (it crashed, was killed, or never ran the tests)' };
  let document: Element;
  try {
    document = parser.parse(xml, true) as Element;
  } catch (error) {
    return { ...empty, parseError: `the JUnit report is not valid XML: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}` };
  }
  const root = (document['testsuites'] ?? document['testsuite']) as Element | Element[] | undefined;
  if (root === undefined) return { ...empty, parseError: 'the JUnit report has no <testsuites> or <testsuite> element' };
  const cases: TestCase[] = [];
  for (const element of Array.isArray(root) ? root : [root]) collect(element, '', cases, framework);
  let seconds = 0;
  for (const testCase of cases) seconds += testCase.duration === undefined ? 0 : testCase.duration.seconds + testCase.duration.nanos / 1e9;
  const count = (status: TestCaseStatus) => cases.filter((testCase) => testCase.status === status).length;
  return {
    framework,
    total: cases.length,
    passed: count(TestCaseStatus.TEST_CASE_STATUS_PASSED),
    failed: count(TestCaseStatus.TEST_CASE_STATUS_FAILED),
    errored: count(TestCaseStatus.TEST_CASE_STATUS_ERRORED),
    skipped: count(TestCaseStatus.TEST_CASE_STATUS_SKIPPED),
    duration: durationFromMs(seconds * 1000),
    cases,
    parsed: true,
    parseError: '',
  };
}

function collect(element: Element, suite: string, cases: TestCase[], framework: string): void {
  const name = attribute(element, 'name');
  // pytest's one wrapping suite is called "pytest"; it says nothing about the case.
  const suiteName = name === '' || name === 'pytest' ? suite : suite === '' ? name : `${suite} > ${name}`;
  for (const testCase of (element['testcase'] as Element[] | undefined) ?? []) cases.push(toCase(testCase, suiteName, framework));
  for (const child of (element['testsuite'] as Element[] | undefined) ?? []) collect(child, suiteName, cases, framework);
}

function toCase(element: Element, suite: string, framework: string): TestCase {
  const failure = first(element['failure']);
  const error = first(element['error']);
  const skipped = first(element['skipped']);
  const problem = failure ?? error;
  const status = failure !== undefined ? TestCaseStatus.TEST_CASE_STATUS_FAILED : error !== undefined ? TestCaseStatus.TEST_CASE_STATUS_ERRORED : skipped !== undefined ? TestCaseStatus.TEST_CASE_STATUS_SKIPPED : TestCaseStatus.TEST_CASE_STATUS_PASSED;
  const detail = problem === undefined ? '' : text(problem).trim();
  let message = problem === undefined ? '' : attribute(problem, 'message').trim();
  if (framework === 'pytest' && message !== '') message = withPytestErrorType(message, detail);
  const classname = attribute(element, 'classname');
  return {
    name: attribute(element, 'name'),
    // pytest puts the module in classname; node puts the describe block there, as does the suite.
    suite: framework === 'pytest' ? classname : suite,
    file: attribute(element, 'file'),
    status,
    duration: durationFromMs((Number.parseFloat(attribute(element, 'time')) || 0) * 1000),
    failureMessage: message === '' ? detail.split('\n')[0] ?? '' : message,
    failureDetail: detail.length > maxDetailChars ? `${detail.slice(0, maxDetailChars)}\n...` : detail,
  };
}

/**
 * pytest's message for a failed assert is the bare expression (`assert 1 ==
 * 2`); the error type is on the detail's last line (`tests/x.py:5:
 * AssertionError`). The type is put in front, so signatures name it.
 */
function withPytestErrorType(message: string, detail: string): string {
  const lastLine = detail.split('\n').filter((line) => line.trim() !== '').pop() ?? '';
  const type = /:\d+: ([A-Za-z_][\w.]*(?:Error|Exception|Exit|Failure|Interrupt))$/.exec(lastLine.trim())?.[1];
  if (type === undefined || message.startsWith(type)) return message;
  return `${type}: ${message}`;
}

function first(value: unknown): Element | undefined {
  return Array.isArray(value) && value.length > 0 ? ((value[0] as Element | string) === '' ? {} : (value[0] as Element)) : undefined;
}

function attribute(element: Element, name: string): string {
  const value = element[`@_${name}`];
  return typeof value === 'string' ? value : '';
}

function text(element: Element | string): string {
  if (typeof element === 'string') return element;
  const value = element['#text'];
  return typeof value === 'string' ? value : '';
}

