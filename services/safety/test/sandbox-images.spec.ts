import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { CheckCodeRequest, CheckDependenciesRequest, Language, SafetyVerdict, SandboxDriver, type Dependency } from '@ratchet/contracts';
import { parse } from 'yaml';
import { createSafetyService, defaultCodeCheckSettings, loadDependencyPolicy, loadParsers, normalizePackageName, sandboxImagePackages, Ecosystem, type Parsers } from '../src';
import { startSandbox, type SandboxFixture } from './sandbox';

// What config/dependencies.yaml says the data image has, checked against the image itself in the
// real sandbox (a sandbox-runner process, Docker, ratchet-sandbox:3-data: tools/ensure-docker.sh builds
// it); and the shipped project profiles' starting files through the checks every attempt goes through.
jest.setTimeout(120_000);

const configDir = path.join(__dirname, '..', '..', '..', 'config');
const dataImage = 'ratchet-sandbox:3-data';
const context = () => ({ requestId: 'r', deadline: Date.now() + 60_000, signal: new AbortController().signal, headers: {} });

interface ProfileYaml {
  readonly name: string;
  readonly language: string;
  readonly layout?: readonly { path: string; content?: string }[];
  readonly dependencies?: readonly { name: string; version?: string }[];
}

/** The shipped profiles as their files say (the orchestrator loads them; services do not import each other). */
function shippedProfiles(): ProfileYaml[] {
  const directory = path.join(configDir, 'profiles');
  return readdirSync(directory)
    .filter((name) => name.endsWith('.yaml'))
    .map((name) => parse(readFileSync(path.join(directory, name), 'utf8')) as ProfileYaml);
}

let fixture: SandboxFixture;
let parsers: Parsers;
beforeAll(async () => {
  [fixture, parsers] = await Promise.all([startSandbox(), loadParsers()]);
});
afterAll(async () => {
  parsers?.close();
  await fixture?.stop();
});

describe(`the packages config/dependencies.yaml lists for ${dataImage}`, () => {
  it('are installed in the image, at the versions listed', async () => {
    const listed = sandboxImagePackages(loadDependencyPolicy(configDir, {}, { sandboxImage: dataImage }));
    expect(listed?.python.length).toBeGreaterThan(0);
    const script = 'import importlib.metadata as m, json; print(json.dumps({d.metadata["Name"]: d.version for d in m.distributions()}))';
    const { result } = await fixture.sandbox.runJob(
      {
        job: {
          jobId: `images-test-${process.pid}`,
          taskId: 'images-test',
          iteration: 1,
          language: Language.LANGUAGE_PYTHON,
          files: [],
          dataFiles: [],
          setupCommand: '',
          commands: [{ name: 'list', argv: ['python3', '-c', script], workingDirectory: '', timeout: undefined }],
          env: {},
          limits: undefined,
          driver: SandboxDriver.SANDBOX_DRIVER_UNSPECIFIED,
          image: dataImage,
          testReportPath: '',
          protectedPaths: [],
          dependencies: [],
          enqueuedAt: new Date(),
          deadline: new Date(Date.now() + 60_000),
        },
      },
      { deadline: Date.now() + 60_000, signal: new AbortController().signal },
    );
    if (result?.error !== undefined) throw new Error(`the job did not run (${result.error.message}); is ${dataImage} built? (tools/ensure-docker.sh)`);
    expect(result?.exitCode).toBe(0);
    const installed = new Map(
      Object.entries(JSON.parse(Buffer.from(result?.stdout ?? new Uint8Array()).toString('utf8')) as Record<string, string>).map(([name, version]) => [normalizePackageName(Ecosystem.PYTHON, name), version]),
    );
    const wrong = (listed?.python ?? []).filter((entry) => installed.get(normalizePackageName(Ecosystem.PYTHON, entry.name)) !== entry.version);
    expect(wrong.map((entry) => `${entry.name} ${entry.version} (the image has ${installed.get(normalizePackageName(Ecosystem.PYTHON, entry.name)) ?? 'none'})`)).toEqual([]);
  });
});

describe("the shipped profiles' starting files", () => {
  const profiles = shippedProfiles().filter((profile) => profile.language === 'python');

  it('are the Python profiles web_app, cli_tool and data_pipeline', () => {
    expect(profiles.map((profile) => profile.name).sort()).toEqual(['cli_tool', 'data_pipeline', 'web_app']);
  });

  it('pass CheckCode with Bandit in the sandbox (nothing blocks, nothing to approve)', async () => {
    const service = await createSafetyService({ parsers, code: defaultCodeCheckSettings, sandbox: fixture.sandbox });
    try {
      for (const profile of profiles) {
        const files = (profile.layout ?? []).filter((file) => (file.content ?? '') !== '').map((file) => ({ path: file.path, content: file.content ?? '' }));
        const response = await service.implementation.checkCode(CheckCodeRequest.fromPartial({ taskId: `profile-${profile.name}`, iteration: 1, language: Language.LANGUAGE_PYTHON, files }), context());
        expect([profile.name, response.findings.filter((finding) => finding.action !== SafetyVerdict.SAFETY_VERDICT_ALLOW).map((finding) => `${finding.path}:${finding.line} ${finding.ruleId}`)]).toEqual([profile.name, []]);
        expect([profile.name, response.verdict]).toEqual([profile.name, SafetyVerdict.SAFETY_VERDICT_ALLOW]);
      }
    } finally {
      await service.close();
    }
  });

  it(`pass CheckDependencies with their packages: provided by ${dataImage}, allowed (to install) on the plain image`, async () => {
    for (const [sandboxImage, provided] of [
      [dataImage, true],
      ['ratchet-sandbox:3', false],
    ] as const) {
      const service = await createSafetyService({ parsers, dependencyPolicy: loadDependencyPolicy(configDir, {}, { sandboxImage }) });
      try {
        for (const profile of profiles) {
          const dependencies: Dependency[] = (profile.dependencies ?? []).map((dependency) => ({ name: dependency.name, versionSpec: dependency.version ?? '' }));
          const files = (profile.layout ?? []).filter((file) => (file.content ?? '') !== '').map((file) => ({ path: file.path, content: file.content ?? '' }));
          const response = await service.implementation.checkDependencies(CheckDependenciesRequest.fromPartial({ taskId: `profile-${profile.name}`, language: Language.LANGUAGE_PYTHON, dependencies, files, approved: [] }), context());
          expect([profile.name, sandboxImage, response.verdict]).toEqual([profile.name, sandboxImage, SafetyVerdict.SAFETY_VERDICT_ALLOW]);
          for (const dependency of dependencies) {
            const decision = response.decisions.find((candidate) => candidate.dependency?.name === dependency.name);
            expect([profile.name, sandboxImage, dependency.name, decision?.provided]).toEqual([profile.name, sandboxImage, dependency.name, provided]);
          }
        }
      } finally {
        await service.close();
      }
    }
  });
});
