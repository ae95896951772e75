import { PathClass } from './command-paths';
import { CommandDecision, type CommandPolicy, type CommandRule } from './command-policy';

const { ALLOW, ASK, DENY } = CommandDecision;

/** Programs that run a script read from their standard input. */
const interpreters = ['sh', 'bash', 'zsh', 'dash', 'ksh', 'ash', 'fish', 'python', 'python2', 'python3', 'python3.*', 'perl', 'ruby', 'node', 'php'];

/**
 * The default command policy's rules, first match wins. The sandbox has no
 * network and is isolated, so the rules stop what destroys the work or the
 * sandbox, what tries to leave it, and surface package installs for a
 * person; everything else runs. config/safety.yaml writes the same list
 * out, so the policy can be read and changed without reading code.
 */
export const defaultCommandRules: readonly CommandRule[] = [
  {
    id: 'cmd.fork-bomb',
    recursiveFunction: true,
    decision: DENY,
    reason: 'the shell function "{program}" calls itself: a fork bomb that would exhaust the sandbox',
    remediation: 'Do not define shell functions that call themselves; write the loop out.',
  },
  {
    id: 'cmd.privilege',
    programs: ['sudo', 'su', 'doas', 'pkexec'],
    decision: DENY,
    reason: '"{program}" switches user; commands run as the sandbox user, who owns the work directory',
    remediation: 'Run the command without sudo/su; everything in the work directory is writable as is.',
  },
  {
    id: 'cmd.download-exec',
    programs: ['curl', 'wget'],
    pipedInto: interpreters,
    decision: DENY,
    reason: '"{program}" pipes a download into {target}; nothing fetched from the network may run, and the sandbox has no network',
    remediation: 'Write the script into the work directory, read it, and run it from there.',
  },
  {
    id: 'cmd.network',
    programs: ['curl', 'wget'],
    decision: DENY,
    reason: '"{program}" needs the network, and the sandbox has none',
    remediation: 'Work with the files in the work directory; ask for anything else to be provided.',
  },
  {
    id: 'cmd.remote-access',
    programs: ['ssh', 'scp', 'sftp', 'nc', 'ncat', 'netcat', 'telnet', 'socat', 'ftp'],
    decision: DENY,
    reason: '"{program}" connects to other machines; the sandbox has no network',
    remediation: 'Keep the work inside the sandbox.',
  },
  {
    id: 'cmd.git-push',
    programs: ['git'],
    subcommands: ['push'],
    decision: DENY,
    reason: '"{command}" publishes work outside the sandbox; commit nothing remote',
    remediation: 'Commit locally (git add, git commit); the result is collected from the work directory.',
  },
  {
    id: 'cmd.git-remote',
    programs: ['git'],
    subcommands: ['remote add', 'remote set-url'],
    decision: DENY,
    reason: '"{command}" points the repository at another machine; the work stays in the sandbox',
    remediation: 'Leave the remotes as they are and commit locally.',
  },
  {
    id: 'cmd.publish',
    programs: ['npm', 'pnpm', 'yarn', 'bun'],
    subcommands: ['publish'],
    decision: DENY,
    reason: '"{command}" publishes a package outside the sandbox',
    remediation: 'Build and test the package locally; publishing is for a person to do.',
  },
  {
    id: 'cmd.shutdown',
    programs: ['shutdown', 'reboot', 'halt', 'poweroff'],
    decision: DENY,
    reason: '"{program}" would stop the machine',
    remediation: 'Stop only the processes you started (kill PID).',
  },
  {
    id: 'cmd.disk-format',
    programs: ['mkfs', 'mkfs.*', 'mke2fs', 'mkswap', 'wipefs', 'fdisk', 'sfdisk', 'parted'],
    decision: DENY,
    reason: '"{program}" formats or repartitions a disk',
    remediation: 'Work with files in the work directory; disks are not part of the task.',
  },
  {
    id: 'cmd.device-write',
    writes: [PathClass.DEVICE],
    decision: DENY,
    reason: '{program} writes to the device {target}',
    remediation: 'Write to a file in the work directory, or to /dev/null to discard output.',
  },
  {
    id: 'cmd.rm-workspace',
    programs: ['rm'],
    flags: ['-r', '-R', '--recursive'],
    targets: [PathClass.ROOT, PathClass.WORKSPACE_ROOT],
    decision: DENY,
    reason: 'rm -r {target} deletes the whole work directory or the filesystem',
    remediation: 'Delete only the files or directories you mean, by name (rm -r build/).',
  },
  {
    id: 'cmd.chmod-root',
    programs: ['chmod', 'chown', 'chgrp'],
    writes: [PathClass.ROOT],
    decision: DENY,
    reason: '"{program}" changes the permissions of the whole filesystem ({target})',
    remediation: 'Change the permissions of the files you mean, inside the work directory (chmod +x script.sh).',
  },
  {
    id: 'cmd.write-outside',
    writes: [PathClass.ROOT, PathClass.OUTSIDE],
    decision: DENY,
    reason: '{program} writes to {target}, outside the work directory',
    remediation: 'Write inside the work directory (relative paths), or to /tmp for scratch files.',
  },
  {
    id: 'cmd.rm-dynamic',
    programs: ['rm'],
    flags: ['-r', '-R', '--recursive'],
    targets: [PathClass.DYNAMIC],
    decision: ASK,
    reason: 'rm -r {target} deletes a path only known at run time',
    remediation: 'Name the directory to delete literally (rm -r build/).',
  },
  {
    id: 'cmd.dynamic-program',
    dynamicProgram: true,
    decision: ASK,
    reason: 'the program ({program}) is only known at run time, so what runs cannot be checked',
    remediation: 'Write the program name literally.',
  },
  {
    id: 'cmd.pip-install',
    programs: ['pip', 'pip3', 'pip3.*', 'pipx'],
    subcommands: ['install'],
    decision: ASK,
    reason: '"{command}" installs packages ({arguments}); package installs need approval',
    remediation: 'Use the standard library or what is installed already, or wait for approval.',
  },
  {
    id: 'cmd.python-package-install',
    programs: ['uv', 'poetry', 'pipenv', 'conda', 'mamba', 'micromamba'],
    subcommands: ['pip install', 'add', 'install'],
    operands: true,
    decision: ASK,
    reason: '"{command}" installs packages ({arguments}); package installs need approval',
    remediation: 'Use the standard library or what is installed already, or wait for approval.',
  },
  {
    id: 'cmd.node-package-install',
    programs: ['npm', 'pnpm', 'yarn', 'bun'],
    subcommands: ['install', 'i', 'add', 'in'],
    operands: true,
    decision: ASK,
    reason: '"{command}" installs packages ({arguments}); package installs need approval',
    remediation: 'Use what package.json already lists (npm install with no package installs those), or wait for approval.',
  },
  {
    id: 'cmd.system-package-install',
    programs: ['apt-get', 'apt', 'aptitude', 'yum', 'dnf', 'microdnf', 'apk', 'zypper', 'brew'],
    subcommands: ['install', 'add'],
    decision: ASK,
    reason: '"{command}" installs system packages ({arguments}); package installs need approval',
    remediation: 'Use the tools the sandbox image has, or wait for approval.',
  },
  {
    id: 'cmd.other-package-install',
    programs: ['gem', 'cargo', 'go'],
    subcommands: ['install', 'add', 'get'],
    operands: true,
    decision: ASK,
    reason: '"{command}" installs packages ({arguments}); package installs need approval',
    remediation: 'Use what is installed already, or wait for approval.',
  },
  {
    id: 'cmd.everyday',
    programs: [
      ...['ls', 'cat', 'head', 'tail', 'wc', 'grep', 'egrep', 'fgrep', 'rg', 'find', 'sed', 'awk', 'sort', 'uniq', 'cut', 'tr', 'diff', 'cmp', 'file', 'stat', 'tree', 'du', 'df'],
      ...['echo', 'printf', 'pwd', 'cd', 'pushd', 'popd', 'true', 'false', 'test', '[', 'which', 'type', 'env', 'export', 'timeout', 'xargs', 'time', 'sleep', 'date'],
      ...['mkdir', 'touch', 'rm', 'rmdir', 'cp', 'mv', 'ln', 'chmod', 'tee', 'tar', 'gzip', 'gunzip', 'unzip', 'zip'],
      ...['git', 'python', 'python3', 'python3.*', 'pytest', 'pip', 'pip3', 'node', 'npm', 'npx', 'tsc', 'jest', 'vitest', 'make', 'jq'],
    ],
    decision: ALLOW,
    reason: 'ordinary development command',
  },
];

/**
 * The command policy used when config gives none: the rules above, allow for
 * anything else (the sandbox has no network and is isolated), the sandbox's
 * /work and /tmp, 10 000 characters and three levels of shell strings.
 */
export const defaultCommandPolicy: CommandPolicy = Object.freeze({
  defaultDecision: ALLOW,
  rules: defaultCommandRules,
  workDirectory: '/work',
  scratchDirectories: ['/tmp'],
  maxCommandLineChars: 10_000,
  maxNestingDepth: 3,
});
