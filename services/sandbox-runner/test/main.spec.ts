import path from 'node:path';
import { SandboxRunnerServiceDefinition } from '@ratchet/contracts';
import { serviceProcessContract } from '@ratchet/runtime/testing';

// Health includes the Docker engine and the sandbox image (tools/ensure-docker.sh sets both up),
// and whether the dependency layer cache can be used.
serviceProcessContract({ name: 'sandbox-runner', packageDir: path.join(__dirname, '..'), definition: SandboxRunnerServiceDefinition, dependencies: ['docker', 'dependency-layers'] });
