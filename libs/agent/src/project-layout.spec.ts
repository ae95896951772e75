import { describe, expect, it } from '@jest/globals';
import { testConvention } from './language';
import { projectGuide } from './project-layout';

const file = (path: string, content = '') => ({ path, content });

describe('projectGuide', () => {
  it('gives a new project the language convention', () => {
    expect(projectGuide('python', [])).toBe(testConvention('python').guide);
  });

  it("describes where an existing project's tests are, how its pytest is configured, and its package", () => {
    const guide = projectGuide('python', [
      file('tabulate/__init__.py'),
      file('test/test_api.py', 'def test_api():\n    pass\n'),
      file('test/test_output.py', 'def test_output():\n    pass\n'),
      file('test/conftest.py'),
      file('pyproject.toml', '[project]\nname = "tabulate"\n\n[tool.pytest.ini_options]\ntestpaths = ["test"]\naddopts = "-v --doctest-modules"\n\n[tool.other]\nx = 1\n'),
    ]);
    expect(guide).toContain('existing project');
    expect(guide).toContain('Its tests are in test/ (2, e.g. test/test_api.py)');
    expect(guide).toContain('pytest is configured in pyproject.toml (testpaths = test; addopts = -v --doctest-modules)');
    expect(guide).toContain('Its package is tabulate/.');
    expect(guide).not.toContain('tests/test_<topic>.py');
  });

  it('says when the tests are unittest classes, the code is in a src/ layout, and pytest is set up in setup.cfg', () => {
    const unittest = 'import unittest\n\n\nclass TestIdna(unittest.TestCase):\n    def test_x(self):\n        pass\n';
    const guide = projectGuide('python', [
      file('src/idna/__init__.py'),
      file('tests/test_idna.py', unittest),
      file('tests/test_codec.py', unittest),
      file('setup.cfg', '[metadata]\nname = idna\n\n[tool:pytest]\ntestpaths =\n    tests\n    docs\n'),
    ]);
    expect(guide).toContain('unittest TestCase classes');
    expect(guide).toContain('pytest is configured in setup.cfg (testpaths = tests docs)');
    expect(guide).toContain('Its package is src/idna/.');
    expect(guide).toContain('src/ layout');
  });

  it('names top-level modules, and a JavaScript project\'s test script and code directories', () => {
    expect(projectGuide('python', [file('parse.py'), file('setup.py'), file('tests/test_parse.py')])).toContain('Its code is in top-level modules (parse.py).');
    const guide = projectGuide('javascript', [file('package.json', '{"scripts":{"test":"node --test test/"}}'), file('lib/index.js'), file('lib/util.js'), file('test/index.test.js')]);
    expect(guide).toContain('Its tests are in test/ (1, e.g. test/index.test.js)');
    expect(guide).toContain('package.json runs its tests with "node --test test/"');
    expect(guide).toContain('Its code is under lib/.');
  });
});
