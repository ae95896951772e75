import { DefaultDecision, type DependencyPolicy } from './dependency-policy';

/**
 * The built-in dependency policy, which config/dependencies.yaml writes out
 * (a test keeps the two equal): the packages below are allowed, the denied
 * ones are unmaintained, deprecated or were compromised, and anything else
 * needs a person's approval. `images` lists what the data variant of the
 * sandbox image has (a test checks it against the image); `sandboxImage`
 * is unknown until `loadDependencyPolicy` is told it.
 */
export const defaultDependencyPolicy: DependencyPolicy = deepFreeze({
  source: 'config/dependencies.yaml',
  python: {
    default: DefaultDecision.ASK,
    allow: [
      { name: 'flask', version: '>=2,<4', note: 'web applications' },
      { name: 'pandas', note: 'data frames' },
      { name: 'numpy', note: 'arrays and numerics' },
      { name: 'requests', note: 'HTTP client' },
      { name: 'pyyaml', version: '>=5.4', note: 'YAML; 5.4 fixed arbitrary code execution in full_load (CVE-2020-14343)' },
      { name: 'sqlalchemy', version: '>=1.4', note: 'SQL toolkit and ORM' },
      { name: 'click', note: 'command-line interfaces' },
      { name: 'python-dateutil', note: 'date parsing and arithmetic' },
      { name: 'jinja2', version: '>=3', note: 'templates' },
      { name: 'attrs', note: 'classes without boilerplate' },
    ],
    deny: [
      { name: 'pycrypto', reason: 'unmaintained since 2013, use cryptography' },
      { name: 'nose', reason: 'unmaintained since 2015 and broken on Python 3.10+, use pytest' },
      { name: 'sklearn', reason: 'a deprecated placeholder that refuses to install, the package is scikit-learn' },
      { name: 'ctx', reason: 'was compromised in 2022 (its new versions stole environment variables)' },
    ],
    provided: ['pytest', 'hypothesis', 'pip', 'setuptools', 'wheel'],
  },
  npm: {
    default: DefaultDecision.ASK,
    allow: [
      { name: 'zod', version: '^3 || ^4', note: 'schema validation' },
      { name: 'express', version: '^4.21 || ^5', note: 'web applications; 4.21 fixed the open redirect and XSS advisories of 2024' },
      { name: 'commander', note: 'command-line interfaces' },
      { name: 'yargs', note: 'command-line interfaces' },
      { name: 'lodash', version: '^4.17.21', note: 'utilities; 4.17.21 fixed command injection in template (CVE-2021-23337)' },
      { name: 'date-fns', note: 'dates' },
      { name: 'uuid', note: 'UUIDs (crypto.randomUUID() needs no package)' },
      { name: 'semver', version: '^7.5.2', note: 'version ranges; 7.5.2 fixed a ReDoS (CVE-2022-25883)' },
      { name: 'chalk', note: 'terminal colours' },
    ],
    deny: [
      { name: 'event-stream', reason: 'was compromised in 2018 (flatmap-stream stole wallets), use node:stream' },
      { name: 'flatmap-stream', reason: 'malware, the payload of the event-stream compromise' },
      { name: 'request', reason: 'deprecated since 2020, use fetch (built into Node) or undici' },
      { name: 'node-ipc', reason: 'shipped protestware that overwrote files (2022)' },
      { name: 'colors', reason: 'its author published a sabotaged release in 2022, use chalk or node:util styleText' },
      { name: 'faker', reason: 'sabotaged by its author in 2022, use @faker-js/faker' },
    ],
    provided: [],
  },
  images: [
    {
      // deploy/sandbox/build-image.sh --variant data: Debian bookworm's packages.
      image: 'ratchet-sandbox:3-data',
      python: [
        { name: 'flask', version: '2.2.2' },
        { name: 'werkzeug', version: '2.2.2' },
        { name: 'jinja2', version: '3.1.2' },
        { name: 'markupsafe', version: '2.1.2' },
        { name: 'itsdangerous', version: '2.1.2' },
        { name: 'click', version: '8.1.3' },
        { name: 'pandas', version: '1.5.3' },
        { name: 'numpy', version: '1.24.2' },
        { name: 'python-dateutil', version: '2.8.2' },
        { name: 'pytz', version: '2022.7.1' },
        { name: 'requests', version: '2.28.1' },
        { name: 'urllib3', version: '1.26.12' },
        { name: 'idna', version: '3.3' },
        { name: 'certifi', version: '2022.9.24' },
        { name: 'charset-normalizer', version: '3.0.1' },
        { name: 'chardet', version: '5.1.0' },
        { name: 'pyyaml', version: '6.0' },
        { name: 'sqlalchemy', version: '1.4.46' },
        { name: 'greenlet', version: '2.0.2' },
      ],
      npm: [],
    },
  ],
  sandboxImage: '',
});

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}
