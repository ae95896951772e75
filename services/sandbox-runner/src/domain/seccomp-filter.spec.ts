import { describe, expect, it } from '@jest/globals';
import { auditArch, deniedSyscalls, ENOSYS, EPERM, SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO, SECCOMP_RET_KILL_PROCESS, seccompProgram, type SeccompArchitecture } from './seccomp-filter';

/**
 * Runs a classic BPF program the way the kernel runs a seccomp filter, for
 * the few instructions the filter uses; an unknown one fails the test. The
 * real kernel loads it in test/bubblewrap-driver.spec.ts.
 */
function run(program: Buffer, data: { nr: number; arch: number; args0?: number }, endianness: 'LE' | 'BE' = 'LE'): number {
  const seccompData = Buffer.alloc(64);
  const write32 = (value: number, at: number) => (endianness === 'LE' ? seccompData.writeUInt32LE(value >>> 0, at) : seccompData.writeUInt32BE(value >>> 0, at));
  write32(data.nr, 0);
  write32(data.arch, 4);
  write32(data.args0 ?? 0, endianness === 'LE' ? 16 : 20);
  let accumulator = 0;
  for (let pc = 0; pc < program.length / 8; ) {
    const at = pc * 8;
    const code = endianness === 'LE' ? program.readUInt16LE(at) : program.readUInt16BE(at);
    const k = endianness === 'LE' ? program.readUInt32LE(at + 4) : program.readUInt32BE(at + 4);
    const jt = program.readUInt8(at + 2);
    const jf = program.readUInt8(at + 3);
    if (code === 0x20) accumulator = endianness === 'LE' ? seccompData.readUInt32LE(k) : seccompData.readUInt32BE(k);
    else if (code === 0x06) return k;
    else if (code === 0x15) pc += accumulator === k ? jt : jf;
    else if (code === 0x35) pc += accumulator >= k ? jt : jf;
    else if (code === 0x45) pc += (accumulator & k) !== 0 ? jt : jf;
    else throw new Error(`unexpected opcode ${code}`);
    pc += 1;
  }
  throw new Error('the program ran off its end');
}

const architectures: [SeccompArchitecture, number, number][] = [
  // [arch, ptrace, clone]
  ['x64', 101, 56],
  ['arm64', 117, 220],
];

describe.each(architectures)('the seccomp filter for %s', (arch, ptrace, clone) => {
  const program = seccompProgram(arch, 'LE');
  const native = auditArch[arch];

  it('refuses every listed call with EPERM', () => {
    for (const call of deniedSyscalls) {
      const number = call[arch];
      if (number !== undefined) expect([call.name, run(program, { nr: number, arch: native })]).toEqual([call.name, SECCOMP_RET_ERRNO | EPERM]);
    }
    expect(run(program, { nr: ptrace, arch: native })).toBe(SECCOMP_RET_ERRNO | EPERM);
  });

  it('allows what tests need: read, write, openat, execve, fork-like clone', () => {
    const allowed = arch === 'x64' ? [0, 1, 257, 59, 57] : [63, 64, 56, 221];
    for (const nr of allowed) expect(run(program, { nr, arch: native })).toBe(SECCOMP_RET_ALLOW);
    // SIGCHLD as the exit signal, CLONE_VM | CLONE_VFORK: posix_spawn and fork.
    expect(run(program, { nr: clone, arch: native, args0: 17 })).toBe(SECCOMP_RET_ALLOW);
    expect(run(program, { nr: clone, arch: native, args0: 0x4111 })).toBe(SECCOMP_RET_ALLOW);
  });

  it('refuses clone into a new namespace, and clone3 with ENOSYS so the C library falls back to clone', () => {
    for (const flag of [0x10000000, 0x20000000, 0x40000000, 0x00020000, 0x08000000, 0x04000000, 0x02000000]) {
      expect(run(program, { nr: clone, arch: native, args0: 17 | flag })).toBe(SECCOMP_RET_ERRNO | EPERM);
    }
    expect(run(program, { nr: 435, arch: native })).toBe(SECCOMP_RET_ERRNO | ENOSYS);
  });

  it('kills a process calling through another architecture', () => {
    for (const foreign of [0x40000003, 0x40000028, arch === 'x64' ? auditArch.arm64 : auditArch.x64]) {
      expect(run(program, { nr: 1, arch: foreign })).toBe(SECCOMP_RET_KILL_PROCESS);
    }
  });
});

describe('seccompProgram', () => {
  it('kills x32 calls on x86_64, which share its architecture value', () => {
    const program = seccompProgram('x64', 'LE');
    expect(run(program, { nr: 0x40000000 + 101, arch: auditArch.x64 })).toBe(SECCOMP_RET_KILL_PROCESS);
    expect(run(program, { nr: 0x40000000 + 1, arch: auditArch.x64 })).toBe(SECCOMP_RET_KILL_PROCESS);
  });

  it('packs in the byte order asked for, args[0] at its low word', () => {
    const program = seccompProgram('arm64', 'BE');
    expect(run(program, { nr: 117, arch: auditArch.arm64 }, 'BE')).toBe(SECCOMP_RET_ERRNO | EPERM);
    expect(run(program, { nr: 220, arch: auditArch.arm64, args0: 17 | 0x10000000 }, 'BE')).toBe(SECCOMP_RET_ERRNO | EPERM);
    expect(run(program, { nr: 220, arch: auditArch.arm64, args0: 17 }, 'BE')).toBe(SECCOMP_RET_ALLOW);
  });

  it('refuses an architecture it has no numbers for, saying what to use', () => {
    expect(() => seccompProgram('riscv64', 'LE')).toThrow(/use the docker driver/);
  });
});
