import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createClient, InProcessBroker, InProcessTransport } from '@ratchet/bus';
import { CheckDependenciesRequest, Confidence, DependencyVerdict, Language, SafetyServiceDefinition, SafetyVerdict, Severity } from '@ratchet/contracts';
import { ErrorCode } from '@ratchet/errors';
import { hostService, type RunningService } from '@ratchet/runtime';
import path from 'node:path';
import { createSafetyService, defaultDependencyPolicy, DependencyRuleId, loadDependencyPolicy, type DependencyPolicy, type SafetyService } from '../src';

describe('CheckDependencies over the in-process bus', () => {
  const broker = new InProcessBroker();
  const serverTransport = new InProcessTransport(broker);
  const clientTransport = new InProcessTransport(broker);
  const client = createClient(clientTransport, SafetyServiceDefinition, { maxAttempts: 1 });
  let service: SafetyService;
  let running: RunningService;

  beforeAll(async () => {
    service = await createSafetyService({ limits: { maxFiles: 5, maxFileBytes: 10_000 } });
    running = hostService({ name: 'safety', version: 'test', definition: SafetyServiceDefinition, implementation: service.implementation }, { transport: serverTransport });
    await running.server.ready;
  });

  afterAll(async () => {
    await running.stop(1_000);
    await service.close();
    await clientTransport.close();
    await serverTransport.close();
  });

  const python = (fields: Partial<CheckDependenciesRequest>) => client.checkDependencies(CheckDependenciesRequest.fromPartial({ taskId: 't-1', language: Language.LANGUAGE_PYTHON, ...fields }), { timeoutMs: 10_000 });

  it('allows allowed packages, with the range to install and the rule that allowed them', async () => {
    const response = await python({ dependencies: [{ name: 'Flask', versionSpec: '>=3' }, { name: 'pytest', versionSpec: '' }] });
    expect(response).toEqual({
      verdict: SafetyVerdict.SAFETY_VERDICT_ALLOW,
      findings: [],
      decisions: [
        {
          dependency: { name: 'Flask', versionSpec: '>=3' },
          verdict: DependencyVerdict.DEPENDENCY_VERDICT_ALLOWED,
          reason: 'allowed by config/dependencies.yaml (python.allow: flask >=2,<4)',
          installSpec: '>=3,>=2,<4',
          declared: true,
          importedAt: [],
          approvedBy: '',
          provided: false,
        },
        {
          dependency: { name: 'pytest', versionSpec: '' },
          verdict: DependencyVerdict.DEPENDENCY_VERDICT_ALLOWED,
          reason: 'allowed: the sandbox image provides it, so it is not installed (python.provided: pytest)',
          installSpec: '',
          declared: true,
          importedAt: [],
          approvedBy: '',
          provided: true,
        },
      ],
    });
  });

  it('blocks denied packages and typosquats, with findings naming the package', async () => {
    const response = await python({ dependencies: [{ name: 'pycrypto', versionSpec: '' }, { name: 'flaks', versionSpec: '' }] });
    expect(response.verdict).toBe(SafetyVerdict.SAFETY_VERDICT_BLOCK);
    expect(response.decisions.map((decision) => [decision.dependency?.name, decision.verdict, decision.reason])).toEqual([
      ['pycrypto', DependencyVerdict.DEPENDENCY_VERDICT_DENIED, 'denied by config/dependencies.yaml: pycrypto: unmaintained since 2013, use cryptography'],
      ['flaks', DependencyVerdict.DEPENDENCY_VERDICT_DENIED, 'denied: "flaks" looks like flask, a likely typosquat'],
    ]);
    expect(response.findings).toEqual([
      {
        ruleId: DependencyRuleId.DENIED,
        severity: Severity.SEVERITY_HIGH,
        path: '',
        line: 0,
        column: 0,
        message: 'Python package pycrypto: denied by config/dependencies.yaml: pycrypto: unmaintained since 2013, use cryptography',
        snippet: 'pycrypto',
        remediation: 'Do not use pycrypto: unmaintained since 2013, use cryptography.',
        cwe: '',
        confidence: Confidence.CONFIDENCE_HIGH,
        tool: 'dependency-policy',
        preExisting: false,
        action: SafetyVerdict.SAFETY_VERDICT_BLOCK,
      },
      expect.objectContaining({
        ruleId: DependencyRuleId.TYPOSQUAT,
        severity: Severity.SEVERITY_CRITICAL,
        snippet: 'flaks',
        confidence: Confidence.CONFIDENCE_MEDIUM,
        tool: 'dependency-policy',
        preExisting: false,
        action: SafetyVerdict.SAFETY_VERDICT_BLOCK,
      }),
    ]);
  });

  it('asks for approval of packages the allowlist does not name, and allows them once approved', async () => {
    const ask = await python({ dependencies: [{ name: 'django', versionSpec: '>=5,<6' }] });
    expect(ask).toEqual({
      verdict: SafetyVerdict.SAFETY_VERDICT_REQUIRE_APPROVAL,
      findings: [expect.objectContaining({ ruleId: DependencyRuleId.NEEDS_APPROVAL, snippet: 'django', action: SafetyVerdict.SAFETY_VERDICT_REQUIRE_APPROVAL })],
      decisions: [expect.objectContaining({ verdict: DependencyVerdict.DEPENDENCY_VERDICT_NEEDS_APPROVAL, reason: 'needs approval: not in the allowlist (python.default: ask)', installSpec: '>=5,<6' })],
    });
    const approved = await python({ dependencies: [{ name: 'django', versionSpec: '>=5,<6' }], approved: ['Django'] });
    expect(approved).toEqual({
      verdict: SafetyVerdict.SAFETY_VERDICT_ALLOW,
      findings: [],
      decisions: [expect.objectContaining({ verdict: DependencyVerdict.DEPENDENCY_VERDICT_ALLOWED, reason: 'allowed: approved for this task by a person', installSpec: '>=5,<6', approvedBy: '' })],
    });
  });

  it('finds imports the plan did not declare: allowed ones warn, ones needing approval ask a person', async () => {
    const files = [
      { path: 'app.py', content: 'import os\nimport flask\nimport yaml\nfrom . import views\n' },
      { path: 'views.py', content: 'import boto3\nimport helpers\n' },
      { path: 'helpers.py', content: 'import json\n' },
      { path: 'tests/test_app.py', content: 'import pytest\nimport app\n' },
    ];
    const warn = await python({ dependencies: [{ name: 'flask', versionSpec: '' }, { name: 'boto3', versionSpec: '' }], approved: ['boto3'], files });
    expect(warn.verdict).toBe(SafetyVerdict.SAFETY_VERDICT_WARN);
    expect(warn.decisions.map((decision) => [decision.dependency?.name, decision.declared, decision.verdict, decision.importedAt])).toEqual([
      ['flask', true, DependencyVerdict.DEPENDENCY_VERDICT_ALLOWED, ['app.py:2']],
      ['boto3', true, DependencyVerdict.DEPENDENCY_VERDICT_ALLOWED, ['views.py:1']],
      ['PyYAML', false, DependencyVerdict.DEPENDENCY_VERDICT_ALLOWED, ['app.py:3']],
      ['pytest', false, DependencyVerdict.DEPENDENCY_VERDICT_ALLOWED, ['tests/test_app.py:1']],
    ]);
    expect(warn.findings).toEqual([
      expect.objectContaining({ ruleId: DependencyRuleId.UNDECLARED_IMPORT, path: 'app.py', line: 3, column: 8, snippet: 'PyYAML', severity: Severity.SEVERITY_LOW, action: SafetyVerdict.SAFETY_VERDICT_WARN }),
    ]);

    const ask = await python({ dependencies: [{ name: 'flask', versionSpec: '' }], files });
    expect(ask.verdict).toBe(SafetyVerdict.SAFETY_VERDICT_REQUIRE_APPROVAL);
    expect(ask.decisions.find((decision) => decision.dependency?.name === 'boto3')).toMatchObject({ declared: false, verdict: DependencyVerdict.DEPENDENCY_VERDICT_NEEDS_APPROVAL, importedAt: ['views.py:1'] });
    expect(ask.findings).toContainEqual(
      expect.objectContaining({
        ruleId: DependencyRuleId.UNDECLARED_IMPORT,
        path: 'views.py',
        line: 1,
        snippet: 'boto3',
        action: SafetyVerdict.SAFETY_VERDICT_REQUIRE_APPROVAL,
        remediation: 'A person decides whether boto3 is installed for this task; if refused, rewrite the code without it.',
      }),
    );
  });

  it('judges only the imports the change adds: what the original files imported, and optional imports, are never undeclared', async () => {
    const original = 'import wcwidth\nimport reqeusts\n\n\ndef width(text):\n    return len(text)\n';
    const changed = original.replace('return len(text)', 'return len(text.expandtabs())');
    const unchanged = await python({ files: [{ path: 'table.py', content: changed }], baseFiles: [{ path: 'table.py', content: original }] });
    expect(unchanged).toEqual({ verdict: SafetyVerdict.SAFETY_VERDICT_ALLOW, findings: [], decisions: [] });
    const guarded = await python({ files: [{ path: 'extra.py', content: 'try:\n    import ujson as json\nexcept ImportError:\n    import json\n' }] });
    expect(guarded.decisions).toEqual([]);
    // A new import in the changed code is judged as before, even beside old ones.
    const added = await python({ files: [{ path: 'table.py', content: `import colorama\n${changed}` }], baseFiles: [{ path: 'table.py', content: original }] });
    expect(added.decisions.map((decision) => [decision.dependency?.name, decision.declared])).toEqual([['colorama', false]]);
  });

  it('blocks an undeclared import of a typosquat in TypeScript code', async () => {
    const response = await client.checkDependencies(
      CheckDependenciesRequest.fromPartial({
        language: Language.LANGUAGE_TYPESCRIPT,
        dependencies: [{ name: 'zod', versionSpec: '^3.23' }],
        files: [{ path: 'src/app.ts', content: "import { z } from 'zod';\nimport fs from 'node:fs';\nimport express from 'expres';\n" }],
      }),
    );
    expect(response.verdict).toBe(SafetyVerdict.SAFETY_VERDICT_BLOCK);
    expect(response.decisions.map((decision) => [decision.dependency?.name, decision.declared, decision.verdict, decision.installSpec])).toEqual([
      ['zod', true, DependencyVerdict.DEPENDENCY_VERDICT_ALLOWED, '^3.23'],
      ['expres', false, DependencyVerdict.DEPENDENCY_VERDICT_DENIED, ''],
    ]);
    expect(response.findings.map((finding) => [finding.ruleId, finding.path, finding.line, finding.action])).toEqual([
      [DependencyRuleId.TYPOSQUAT, 'src/app.ts', 3, SafetyVerdict.SAFETY_VERDICT_BLOCK],
      [DependencyRuleId.UNDECLARED_IMPORT, 'src/app.ts', 3, SafetyVerdict.SAFETY_VERDICT_BLOCK],
    ]);
  });

  it('refuses bad requests with INVALID_ARGUMENT', async () => {
    await expect(client.checkDependencies(CheckDependenciesRequest.fromPartial({ dependencies: [{ name: 'flask' }] }))).rejects.toMatchObject({
      code: ErrorCode.INVALID_ARGUMENT,
      message: expect.stringContaining('language is not set'),
    });
    await expect(python({ dependencies: Array.from({ length: 201 }, (_, index) => ({ name: `p${index}`, versionSpec: '' })) })).rejects.toMatchObject({
      code: ErrorCode.INVALID_ARGUMENT,
      message: expect.stringContaining('201 dependencies sent'),
    });
    await expect(python({ dependencies: [{ name: '', versionSpec: '' }] })).rejects.toMatchObject({ code: ErrorCode.INVALID_ARGUMENT, message: expect.stringContaining('dependencies[0].name is empty') });
    await expect(python({ dependencies: [{ name: 'a'.repeat(215), versionSpec: '' }] })).rejects.toMatchObject({ code: ErrorCode.INVALID_ARGUMENT, message: expect.stringContaining('215 characters') });
    await expect(python({ files: Array.from({ length: 6 }, (_, index) => ({ path: `f${index}.py`, content: '' })) })).rejects.toMatchObject({
      code: ErrorCode.INVALID_ARGUMENT,
      message: expect.stringContaining('6 files sent; CheckDependencies takes at most 5'),
    });
    await expect(python({ files: [{ path: 'big.py', content: 'x'.repeat(10_001) }] })).rejects.toMatchObject({ code: ErrorCode.INVALID_ARGUMENT, message: expect.stringContaining('big.py is 10001 bytes') });
  });
});

describe('createSafetyService with a dependency policy', () => {
  it('applies the policy it is given', async () => {
    const policy: DependencyPolicy = { ...defaultDependencyPolicy, source: 'etc/dependencies.yaml', npm: { ...defaultDependencyPolicy.npm, default: 'deny' } };
    const service = await createSafetyService({ dependencyPolicy: policy });
    try {
      const response = await service.implementation.checkDependencies(CheckDependenciesRequest.fromPartial({ language: Language.LANGUAGE_JAVASCRIPT, dependencies: [{ name: 'left-pad' }, { name: 'request' }] }), {
        requestId: 'r',
        deadline: Date.now() + 5_000,
        signal: new AbortController().signal,
        headers: {},
      });
      expect(response.decisions.map((decision) => decision.reason)).toEqual([
        'denied: not in the allowlist (npm.default: deny)',
        'denied by etc/dependencies.yaml: request: deprecated since 2020, use fetch (built into Node) or undici',
      ]);
    } finally {
      await service.close();
    }
  });

  it('answers that the data image has flask (nothing to install), and that the plain image needs it installed', async () => {
    const configDir = path.join(__dirname, '..', '..', '..', 'config');
    const context = { requestId: 'r', deadline: Date.now() + 5_000, signal: new AbortController().signal, headers: {} };
    // A web_app plan: flask declared, the starting app.py importing it.
    const request = CheckDependenciesRequest.fromPartial({ language: Language.LANGUAGE_PYTHON, dependencies: [{ name: 'flask' }], files: [{ path: 'app.py', content: 'import sqlite3\n\nfrom flask import Flask, g\n' }] });
    const decisionsOn = async (sandboxImage: string) => {
      const service = await createSafetyService({ dependencyPolicy: loadDependencyPolicy(configDir, {}, { sandboxImage }) });
      try {
        return await service.implementation.checkDependencies(request, context);
      } finally {
        await service.close();
      }
    };
    const data = await decisionsOn('ratchet-sandbox:3-data');
    expect(data.verdict).toBe(SafetyVerdict.SAFETY_VERDICT_ALLOW);
    expect(data.decisions).toEqual([
      expect.objectContaining({
        dependency: { name: 'flask', versionSpec: '' },
        verdict: DependencyVerdict.DEPENDENCY_VERDICT_ALLOWED,
        provided: true,
        installSpec: '',
        importedAt: ['app.py:3'],
        reason: 'allowed: the sandbox image ratchet-sandbox:3-data has flask 2.2.2, so it is not installed (images.ratchet-sandbox:3-data.python in config/dependencies.yaml)',
      }),
    ]);
    const plain = await decisionsOn('ratchet-sandbox:3');
    expect(plain.decisions).toEqual([expect.objectContaining({ verdict: DependencyVerdict.DEPENDENCY_VERDICT_ALLOWED, provided: false, installSpec: '>=2,<4' })]);
  });

  it('stops a check whose call was given up on', async () => {
    const service = await createSafetyService();
    try {
      const controller = new AbortController();
      controller.abort();
      const call = service.implementation.checkDependencies(CheckDependenciesRequest.fromPartial({ language: Language.LANGUAGE_PYTHON, files: [{ path: 'a.py', content: 'import flask' }] }), {
        requestId: 'r',
        deadline: Date.now(),
        signal: controller.signal,
        headers: {},
      });
      await expect(call).rejects.toMatchObject({ code: ErrorCode.CANCELLED });
    } finally {
      await service.close();
    }
  });
});
