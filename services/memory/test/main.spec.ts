import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MemoryServiceDefinition } from '@ratchet/contracts';
import { serviceProcessContract } from '@ratchet/runtime/testing';

// Debian's Postgres has no pgvector, so the vectors go to an embedded store here.
serviceProcessContract({
  name: 'memory',
  packageDir: path.join(__dirname, '..'),
  definition: MemoryServiceDefinition,
  postgres: true,
  dependencies: ['postgres'],
  env: { RATCHET_MEMORY_VECTORS: 'pglite', RATCHET_MEMORY_VECTOR_DATA_DIR: mkdtempSync(path.join(os.tmpdir(), 'ratchet-memory-vectors-')) },
});
