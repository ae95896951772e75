import { describe, expect, it } from '@jest/globals';
import { isLockfile, outputsBeside, setupKey } from './setup';

const registries = [{ url: 'https://pypi.org/simple', hosts: ['pypi.org:443', 'files.pythonhosted.org:443'] }];
const files = [
  { path: 'pyproject.toml', content: '[project]\nname = "x"\n' },
  { path: 'src/x/__init__.py', content: 'X = 1\n' },
];

describe('setup layers', () => {
  it('knows manifests and lockfiles at any depth, and nothing else', () => {
    for (const path of ['pyproject.toml', 'packages/a/package.json', 'requirements-dev.txt', 'requirements/test.in', 'uv.lock', 'pnpm-lock.yaml']) expect(isLockfile(path)).toBe(true);
    for (const path of ['src/setup_helpers.py', 'README.md', 'package.json.bak', 'tests/requirements_test.py']) expect(isLockfile(path)).toBe(false);
  });

  it('keys a layer by the command, the lockfiles, the registries and the image, not by other sources', () => {
    const key = setupKey({ command: 'pip install -e .', files, registries, image: 'sha256:1' });
    expect(setupKey({ command: 'pip install -e .', files: [files[0]!, { path: 'src/x/__init__.py', content: 'X = 2\n' }], registries, image: 'sha256:1' })).toBe(key);
    expect(setupKey({ command: 'pip install -e .', files: [...files].reverse(), registries, image: 'sha256:1' })).toBe(key);
    expect(setupKey({ command: 'pip install .', files, registries, image: 'sha256:1' })).not.toBe(key);
    expect(setupKey({ command: 'pip install -e .', files: [{ path: 'pyproject.toml', content: '[project]\nname = "y"\n' }, files[1]!], registries, image: 'sha256:1' })).not.toBe(key);
    expect(setupKey({ command: 'pip install -e .', files, registries: [{ ...registries[0]!, url: 'https://mirror.example/simple' }], image: 'sha256:1' })).not.toBe(key);
    expect(setupKey({ command: 'pip install -e .', files, registries, image: 'sha256:2' })).not.toBe(key);
  });

  it("leaves out the setup's copy of a file the job sends itself", () => {
    const outputs = [
      { path: 'x/_version.py', content: Buffer.from('V = 1\n') },
      { path: 'src/x/__init__.py', content: Buffer.from('stale\n') },
    ];
    expect(outputsBeside(outputs, files).map((file) => file.path)).toEqual(['x/_version.py']);
  });
});
