import { AppError, ErrorCode } from '@ratchet/errors';

/**
 * The bubblewrap sandbox's seccomp filter, compiled here to the classic BPF
 * program bwrap's `--seccomp FD` loads (an array of struct sock_filter). It
 * is a deny list on top of what the sandbox already withholds (no
 * capabilities, no user namespaces): the calls that reach into another
 * process (so code under test cannot take the supervisor's result channel
 * or memory), the kernel's larger attack surfaces that Docker's default
 * profile also refuses, and every way to make or enter a namespace or
 * mount. Refused calls fail with EPERM; a call made through another
 * architecture's entry (x32, i386 or arm32 compat) kills the process.
 */

/** The architectures the filter is compiled for, by Node's `process.arch`. */
export const seccompArchitectures = ['x64', 'arm64'] as const;
export type SeccompArchitecture = (typeof seccompArchitectures)[number];

/** A denied system call and its number on each architecture; absent where the call does not exist. */
interface DeniedCall {
  readonly name: string;
  readonly x64?: number;
  readonly arm64?: number;
}

/**
 * Every call the filter refuses with EPERM, with why in groups. Numbers
 * from the kernel's uapi headers (asm/unistd_64.h and asm-generic/unistd.h).
 */
export const deniedSyscalls: readonly DeniedCall[] = [
  // Reaching into another process of the same user: its memory, its descriptors, its state.
  { name: 'ptrace', x64: 101, arm64: 117 },
  { name: 'process_vm_readv', x64: 310, arm64: 270 },
  { name: 'process_vm_writev', x64: 311, arm64: 271 },
  { name: 'pidfd_getfd', x64: 438, arm64: 438 },
  { name: 'kcmp', x64: 312, arm64: 272 },
  { name: 'process_madvise', x64: 440, arm64: 440 },
  { name: 'move_pages', x64: 279, arm64: 239 },
  // The kernel keyring, shared beyond the sandbox.
  { name: 'add_key', x64: 248, arm64: 217 },
  { name: 'request_key', x64: 249, arm64: 218 },
  { name: 'keyctl', x64: 250, arm64: 219 },
  // Large kernel attack surfaces no test needs (Docker's default profile refuses them too).
  { name: 'bpf', x64: 321, arm64: 280 },
  { name: 'perf_event_open', x64: 298, arm64: 241 },
  { name: 'userfaultfd', x64: 323, arm64: 282 },
  { name: 'io_uring_setup', x64: 425, arm64: 425 },
  { name: 'io_uring_enter', x64: 426, arm64: 426 },
  { name: 'io_uring_register', x64: 427, arm64: 427 },
  // Namespaces and mounts (clone with namespace flags is refused separately).
  { name: 'unshare', x64: 272, arm64: 97 },
  { name: 'setns', x64: 308, arm64: 268 },
  { name: 'mount', x64: 165, arm64: 40 },
  { name: 'umount2', x64: 166, arm64: 39 },
  { name: 'pivot_root', x64: 155, arm64: 41 },
  { name: 'open_tree', x64: 428, arm64: 428 },
  { name: 'move_mount', x64: 429, arm64: 429 },
  { name: 'fsopen', x64: 430, arm64: 430 },
  { name: 'fsconfig', x64: 431, arm64: 431 },
  { name: 'fsmount', x64: 432, arm64: 432 },
  { name: 'fspick', x64: 433, arm64: 433 },
  { name: 'mount_setattr', x64: 442, arm64: 442 },
  // Administration that needs a capability the sandbox lacks: refused before the kernel looks further.
  { name: 'open_by_handle_at', x64: 304, arm64: 265 },
  { name: 'name_to_handle_at', x64: 303, arm64: 264 },
  { name: 'init_module', x64: 175, arm64: 105 },
  { name: 'finit_module', x64: 313, arm64: 273 },
  { name: 'delete_module', x64: 176, arm64: 106 },
  { name: 'kexec_load', x64: 246, arm64: 104 },
  { name: 'kexec_file_load', x64: 320, arm64: 294 },
  { name: 'reboot', x64: 169, arm64: 142 },
  { name: 'swapon', x64: 167, arm64: 224 },
  { name: 'swapoff', x64: 168, arm64: 225 },
  { name: 'acct', x64: 163, arm64: 89 },
  { name: 'quotactl', x64: 179, arm64: 60 },
  { name: 'quotactl_fd', x64: 443, arm64: 443 },
  { name: 'syslog', x64: 103, arm64: 116 },
  { name: 'settimeofday', x64: 164, arm64: 170 },
  { name: 'clock_settime', x64: 227, arm64: 112 },
  { name: 'clock_adjtime', x64: 305, arm64: 266 },
  { name: 'lookup_dcookie', x64: 212, arm64: 18 },
  { name: 'fanotify_init', x64: 300, arm64: 262 },
  { name: 'vhangup', x64: 153, arm64: 58 },
  { name: 'nfsservctl', x64: 180, arm64: 42 },
  // x86_64 only: port I/O and calls long removed or obsolete.
  { name: 'iopl', x64: 172 },
  { name: 'ioperm', x64: 173 },
  { name: 'create_module', x64: 174 },
  { name: 'get_kernel_syms', x64: 177 },
  { name: 'query_module', x64: 178 },
  { name: 'uselib', x64: 134 },
  { name: 'ustat', x64: 136 },
  { name: 'sysfs', x64: 139 },
  { name: '_sysctl', x64: 156 },
];

/** clone's number per architecture: allowed unless its flags ask for a new namespace. */
const cloneNumber: Record<SeccompArchitecture, number> = { x64: 56, arm64: 220 };
/**
 * clone3's number: refused with ENOSYS, as Docker does, because its flags
 * sit in memory a filter cannot read; the C library then falls back to
 * clone, whose flags it can.
 */
const clone3Number = 435;
/** CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET (CLONE_NEWTIME's bit is clone's exit signal). */
const cloneNamespaceFlags = 0x7e02_0000;

/** AUDIT_ARCH_* of each architecture, as the kernel reports it in seccomp_data.arch. */
export const auditArch: Record<SeccompArchitecture, number> = { x64: 0xc000_003e, arm64: 0xc000_00b7 };
/** Numbers at or above this on x86_64 are x32 calls, which share its AUDIT_ARCH. */
const x32SyscallBit = 0x4000_0000;

// Classic BPF opcodes (linux/filter.h) and seccomp return values (linux/seccomp.h).
const BPF_LD_W_ABS = 0x20;
const BPF_JMP_JEQ_K = 0x15;
const BPF_JMP_JGE_K = 0x35;
const BPF_JMP_JSET_K = 0x45;
const BPF_RET_K = 0x06;
export const SECCOMP_RET_KILL_PROCESS = 0x8000_0000;
export const SECCOMP_RET_ERRNO = 0x0005_0000;
export const SECCOMP_RET_ALLOW = 0x7fff_0000;
export const EPERM = 1;
export const ENOSYS = 38;
/** Offsets in struct seccomp_data: nr (int), arch (u32), instruction_pointer (u64), args[6] (u64). */
const offsetNr = 0;
const offsetArch = 4;
const offsetArgs = 16;

/** One instruction, with jumps to labels resolved when the program is assembled. */
interface Instruction {
  readonly code: number;
  readonly k: number;
  readonly jt?: string;
  readonly jf?: string;
}

/**
 * The filter for `arch` as bytes bwrap reads from `--seccomp FD`: struct
 * sock_filter { u16 code; u8 jt; u8 jf; u32 k } in the host's byte order.
 *
 * @param arch Node's name of the architecture the sandbox runs on.
 * @param endianness the host's byte order (os.endianness()); it also places args[0]'s low word.
 * @throws AppError FAILED_PRECONDITION for an architecture the filter has no numbers for.
 */
export function seccompProgram(arch: string, endianness: 'LE' | 'BE'): Buffer {
  if (!(seccompArchitectures as readonly string[]).includes(arch)) {
    throw new AppError(ErrorCode.FAILED_PRECONDITION, `the bubblewrap sandbox's seccomp filter knows the system calls of ${seccompArchitectures.join(' and ')} only, not ${arch}; use the docker driver (sandbox.driver: docker) on this host`);
  }
  const known = arch as SeccompArchitecture;
  const program: (Instruction | { readonly label: string })[] = [
    { code: BPF_LD_W_ABS, k: offsetArch },
    { code: BPF_JMP_JEQ_K, k: auditArch[known], jt: 'native', jf: 'kill' },
    { label: 'native' },
    { code: BPF_LD_W_ABS, k: offsetNr },
    ...(known === 'x64' ? [{ code: BPF_JMP_JGE_K, k: x32SyscallBit, jt: 'kill', jf: 'next-0' }, { label: 'next-0' }] : []),
  ];
  deniedSyscalls.forEach((call, index) => {
    const number = call[known];
    if (number === undefined) return;
    program.push({ code: BPF_JMP_JEQ_K, k: number, jt: 'deny', jf: `next-${index + 1}` }, { label: `next-${index + 1}` });
  });
  program.push(
    { code: BPF_JMP_JEQ_K, k: clone3Number, jt: 'enosys', jf: 'not-clone3' },
    { label: 'not-clone3' },
    { code: BPF_JMP_JEQ_K, k: cloneNumber[known], jt: 'clone', jf: 'allow' },
    { label: 'clone' },
    // Namespace flags all lie in the low 32 bits of clone's first argument.
    { code: BPF_LD_W_ABS, k: offsetArgs + (endianness === 'LE' ? 0 : 4) },
    { code: BPF_JMP_JSET_K, k: cloneNamespaceFlags, jt: 'deny', jf: 'allow' },
    { label: 'allow' },
    { code: BPF_RET_K, k: SECCOMP_RET_ALLOW },
    { label: 'deny' },
    { code: BPF_RET_K, k: SECCOMP_RET_ERRNO | EPERM },
    { label: 'enosys' },
    { code: BPF_RET_K, k: SECCOMP_RET_ERRNO | ENOSYS },
    { label: 'kill' },
    { code: BPF_RET_K, k: SECCOMP_RET_KILL_PROCESS },
  );
  return assemble(program, endianness);
}

/** Resolves labels to forward jump offsets (at most 255 instructions ahead, as classic BPF allows) and packs the instructions. */
function assemble(program: readonly (Instruction | { readonly label: string })[], endianness: 'LE' | 'BE'): Buffer {
  const instructions: Instruction[] = [];
  const labels = new Map<string, number>();
  for (const item of program) {
    if ('label' in item) labels.set(item.label, instructions.length);
    else instructions.push(item);
  }
  const out = Buffer.alloc(instructions.length * 8);
  instructions.forEach((instruction, index) => {
    const offset = (label: string | undefined): number => {
      if (label === undefined) return 0;
      const target = labels.get(label);
      const distance = target === undefined ? -1 : target - index - 1;
      if (distance < 0 || distance > 255) throw new Error(`seccomp program: jump to ${label} from instruction ${index} is out of range`);
      return distance;
    };
    const at = index * 8;
    if (endianness === 'LE') {
      out.writeUInt16LE(instruction.code, at);
      out.writeUInt32LE(instruction.k >>> 0, at + 4);
    } else {
      out.writeUInt16BE(instruction.code, at);
      out.writeUInt32BE(instruction.k >>> 0, at + 4);
    }
    out.writeUInt8(offset(instruction.jt), at + 2);
    out.writeUInt8(offset(instruction.jf), at + 3);
  });
  return out;
}
