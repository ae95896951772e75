import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Ecosystem, findImportedPackages, importsOfFile, loadParsers, type ImportSourceFile, type Parsers } from '../src';

describe('finding the packages code imports', () => {
  let parsers: Parsers;
  beforeAll(async () => {
    parsers = await loadParsers();
  });
  afterAll(() => parsers.close());

  const packages = (ecosystem: Ecosystem, files: ImportSourceFile[]) =>
    findImportedPackages(parsers, ecosystem, files).map((found) => ({ name: found.name, module: found.module, at: found.sites.map((site) => `${site.path}:${site.line}`) }));

  describe('Python', () => {
    it('reads import and from-import anywhere in a file, with positions', () => {
      const content = ['import os, flask', 'import numpy as np', 'from requests.adapters import HTTPAdapter', '', 'def load():', '    try:', '        import yaml', '    except ImportError:', '        yaml = None'].join('\n');
      expect(importsOfFile(parsers, Ecosystem.PYTHON, { path: 'app.py', content })).toEqual([
        { specifier: 'os', line: 1, column: 8, optional: false },
        { specifier: 'flask', line: 1, column: 12, optional: false },
        { specifier: 'numpy', line: 2, column: 8, optional: false },
        { specifier: 'requests.adapters', line: 3, column: 6, optional: false },
        { specifier: 'yaml', line: 7, column: 16, optional: true },
      ]);
    });

    it('leaves out optional imports: guarded by try/except ImportError, TYPE_CHECKING or find_spec; not those in a function under a try', () => {
      const content = [
        'try:',
        '    import wcwidth',
        'except ImportError:',
        '    wcwidth = None',
        'try:',
        '    from ujson import loads',
        'except (ModuleNotFoundError, ValueError) as error:',
        '    from json import loads',
        'try:',
        '    import colorama',
        'except:',
        '    pass',
        'try:',
        '    import required_one',
        'except KeyError:',
        '    pass',
        'if TYPE_CHECKING:',
        '    import typing_only',
        'if typing.TYPE_CHECKING:',
        '    from stubs_only import Thing',
        'if importlib.util.find_spec("rich") is not None:',
        '    import rich',
        'try:',
        '    def load():',
        '        import called_later',
        'except ImportError:',
        '    pass',
        'import numpy',
      ].join('\n');
      expect(packages(Ecosystem.PYTHON, [{ path: 'app.py', content }]).map((found) => found.name)).toEqual(['required_one', 'called_later', 'numpy']);
    });

    it('keeps a package imported both guarded and unguarded', () => {
      const files = [
        { path: 'a.py', content: 'try:\n    import yaml\nexcept ImportError:\n    yaml = None\n' },
        { path: 'b.py', content: 'import yaml\n' },
      ];
      expect(packages(Ecosystem.PYTHON, files)).toEqual([{ name: 'PyYAML', module: 'yaml', at: ['b.py:1'] }]);
    });

    it('leaves out relative imports, __future__, the standard library and modules the files provide', () => {
      const files = [
        {
          path: 'app.py',
          content: [
            'from __future__ import annotations',
            'from . import views',
            'from .models import User',
            'import json, sqlite3, collections.abc, tomllib',
            'import helpers',
            'import mypkg.sub',
            'import nspkg',
            'import core',
            'import flask',
          ].join('\n'),
        },
        { path: 'helpers.py', content: '' },
        { path: 'mypkg/__init__.py', content: '' },
        { path: 'nspkg/mod.py', content: '' },
        { path: 'src/core/__init__.py', content: '' },
        { path: 'tests/test_app.py', content: 'import pytest\nimport conftest_helpers\nimport app\n' },
        { path: 'tests/conftest_helpers.py', content: '' },
      ];
      expect(packages(Ecosystem.PYTHON, files)).toEqual([
        { name: 'flask', module: 'flask', at: ['app.py:9'] },
        { name: 'pytest', module: 'pytest', at: ['tests/test_app.py:1'] },
      ]);
    });

    it('maps import names to the distributions that provide them, and groups them by package in order of first import', () => {
      const files = [
        { path: 'a.py', content: 'import yaml\nfrom PIL import Image\nimport sklearn.linear_model\nfrom bs4 import BeautifulSoup\nimport cv2\n' },
        { path: 'b.py', content: 'from dateutil import parser\nimport dotenv\nimport jwt\nfrom google.protobuf import json_format\nimport attr\nimport yaml\n' },
      ];
      expect(packages(Ecosystem.PYTHON, files)).toEqual([
        { name: 'PyYAML', module: 'yaml', at: ['a.py:1', 'b.py:6'] },
        { name: 'Pillow', module: 'PIL', at: ['a.py:2'] },
        { name: 'scikit-learn', module: 'sklearn', at: ['a.py:3'] },
        { name: 'beautifulsoup4', module: 'bs4', at: ['a.py:4'] },
        { name: 'opencv-python', module: 'cv2', at: ['a.py:5'] },
        { name: 'python-dateutil', module: 'dateutil', at: ['b.py:1'] },
        { name: 'python-dotenv', module: 'dotenv', at: ['b.py:2'] },
        { name: 'PyJWT', module: 'jwt', at: ['b.py:3'] },
        { name: 'protobuf', module: 'google.protobuf', at: ['b.py:4'] },
        { name: 'attrs', module: 'attr', at: ['b.py:5'] },
      ]);
    });

    it('reads only Python files for Python, a shebang script included', () => {
      const files = [
        { path: 'tool', content: '#!/usr/bin/env python3\nimport click\n' },
        { path: 'web/app.js', content: "import express from 'express';\n" },
        { path: 'README.md', content: 'import nothing' },
      ];
      expect(packages(Ecosystem.PYTHON, files)).toEqual([{ name: 'click', module: 'click', at: ['tool:2'] }]);
    });
  });

  describe('JavaScript and TypeScript', () => {
    it('leaves out a require or import() inside try with a catch, not one in a function defined there', () => {
      const content = [
        'let color;',
        "try { color = require('supports-color'); } catch { color = undefined; }",
        "try { await import('fsevents'); } catch (error) { /* not on this platform */ }",
        "try { run(function () { return require('lodash'); }); } catch {}",
        "try { require('finally-only'); } finally { done(); }",
      ].join('\n');
      expect(packages(Ecosystem.NPM, [{ path: 'index.js', content }]).map((found) => found.name)).toEqual(['lodash', 'finally-only']);
    });

    it('reads every static and literal dynamic import form', () => {
      const content = [
        "import express from 'express';",
        "import type { Schema } from 'zod';",
        "import '@scope/side-effect/register';",
        "export * from 'lodash/fp';",
        "export { parse } from 'yaml';",
        "const chalk = require('chalk');",
        "const lazy = await import('date-fns');",
        "import uuid = require('uuid');",
        'const tpl = import(`commander`);',
        'const computed = require(name);',
        'const fromTemplate = import(`./locale/${lang}`);',
        "require.resolve('not-an-import');",
      ].join('\n');
      expect(importsOfFile(parsers, Ecosystem.NPM, { path: 'src/app.ts', content }).map((found) => `${found.specifier}@${found.line}`)).toEqual([
        'express@1',
        'zod@2',
        '@scope/side-effect/register@3',
        'lodash/fp@4',
        'yaml@5',
        'chalk@6',
        'date-fns@7',
        'uuid@8',
        'commander@9',
      ]);
    });

    it('names packages by their first segment or scope, and leaves out paths, builtins, aliases and the project itself', () => {
      const files = [
        {
          path: 'src/index.js',
          content: [
            "import fs from 'fs';",
            "import { readFile } from 'node:fs/promises';",
            "import test from 'node:test';",
            "import util from './util.js';",
            "import config from '../config.json';",
            "import abs from '/opt/x.js';",
            "import internal from '#internal';",
            "import aliased from '@/components/button';",
            "import home from '~/lib';",
            "import remote from 'https://esm.sh/preact';",
            "import self from 'my-app/lib';",
            "import fp from 'lodash/fp';",
            "import { z } from 'zod';",
            "import node from '@types/node/fs';",
            "const stream = require('stream');",
          ].join('\n'),
        },
        { path: 'src/view.tsx', content: "import React from 'react';\nexport const A = () => <div />;\n" },
        { path: 'package.json', content: '{"name": "my-app"}' },
        { path: 'broken/package.json', content: '{' },
      ];
      expect(packages(Ecosystem.NPM, files)).toEqual([
        { name: 'lodash', module: 'lodash/fp', at: ['src/index.js:12'] },
        { name: 'zod', module: 'zod', at: ['src/index.js:13'] },
        { name: '@types/node', module: '@types/node/fs', at: ['src/index.js:14'] },
        { name: 'react', module: 'react', at: ['src/view.tsx:1'] },
      ]);
    });

    it('reads only JavaScript and TypeScript files for npm', () => {
      expect(packages(Ecosystem.NPM, [{ path: 'a.py', content: 'import flask\n' }])).toEqual([]);
    });
  });
});
