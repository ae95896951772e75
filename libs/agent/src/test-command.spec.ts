import { describe, expect, it } from '@jest/globals';
import { testCommandLine, withJunitReport } from './test-command';

describe('test command lines', () => {
  it('shows a project command as it was typed', () => {
    expect(testCommandLine(['sh', '-c', 'python3 -m pytest -q tests/test_number.py'])).toBe('python3 -m pytest -q tests/test_number.py');
    expect(testCommandLine(['npm', 'test'])).toBe('npm test');
  });

  it('adds a JUnit report to a plain pytest run, and leaves every other command alone', () => {
    expect(withJunitReport(['sh', '-c', 'python3 -m pytest -q tests'], 'RATCHET_TEST_REPORT')).toEqual(['sh', '-c', 'python3 -m pytest -q tests --continue-on-collection-errors --junitxml="$RATCHET_TEST_REPORT"']);
    expect(withJunitReport(['sh', '-c', 'pytest'], 'R')).toEqual(['sh', '-c', 'pytest --continue-on-collection-errors --junitxml="$R"']);
    expect(withJunitReport(['sh', '-c', 'pytest --continue-on-collection-errors'], 'R')).toEqual(['sh', '-c', 'pytest --continue-on-collection-errors --junitxml="$R"']);
    for (const line of ['pytest -q | tail -5', 'pytest --junitxml=out.xml', 'cd src && pytest', 'python3 -m unittest discover', 'npm test', 'pytest > log']) {
      expect(withJunitReport(['sh', '-c', line], 'R')).toEqual(['sh', '-c', line]);
    }
    expect(withJunitReport(['pytest', '-q'], 'R')).toEqual(['pytest', '-q']);
  });
});
