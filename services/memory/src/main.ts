import path from 'node:path';
import { databaseConfigSection } from '@ratchet/agent';
import { configSection, extendConfigSchema } from '@ratchet/config';
import { MemoryServiceDefinition } from '@ratchet/contracts';
import { openPglite, openPostgresWithRetry, type Database } from '@ratchet/db';
import { AppError, ErrorCode } from '@ratchet/errors';
import { main, packageVersion } from '@ratchet/runtime';
import { z } from 'zod';
import { createEmbedder, createMemoryService, embedderConfigSection, learningConfigSection, learningOptionsOf, PgVectorStore } from './index';

const schema = extendConfigSchema({
  database: databaseConfigSection,
  memory: configSection({
    /**
     * Where lesson vectors live: `postgres` (pgvector in the same database),
     * or `pglite` (pgvector in an embedded database under vectorDataDir, for
     * a Postgres without the extension; one memory replica only).
     */
    vectors: z.enum(['postgres', 'pglite']).default('postgres'),
    vectorDataDir: z.string().min(1).default('data/memory-vectors'),
  }),
  embedder: embedderConfigSection,
  learning: learningConfigSection,
});

// Lessons and their evidence in Postgres (schema memory); vectors per memory.vectors.
main({
  name: 'memory',
  version: packageVersion(path.join(__dirname, '..')),
  definition: MemoryServiceDefinition,
  schema,
  start: async ({ config, logger, signal, redact }) => {
    const url = config.database.url;
    if (url === undefined) throw new AppError(ErrorCode.CONFIG_INVALID, 'the memory service keeps lessons in Postgres: set RATCHET_DATABASE_URL (or database.url in config/memory.yaml)');
    const db = await openPostgresWithRetry({ connectionString: url, maxConnections: config.database.maxConnections, statementTimeoutMs: config.database.statementTimeoutMs }, signal, (error, attempt, retryInMs) =>
      logger.warn({ attempt, retryInMs, err: error.message }, 'Postgres not reachable yet'),
    );
    let vectorDb: Database | undefined;
    try {
      if (config.memory.vectors === 'pglite') vectorDb = await openPglite({ dataDir: path.resolve(config.memory.vectorDataDir), vector: true });
      const embedder = createEmbedder(config.embedder);
      // The id, not the settings: the settings may carry an API key.
      logger.info({ embedder: embedder.id }, 'lessons are embedded with this embedder');
      const memory = await createMemoryService({
        db,
        vectors: await PgVectorStore.open(vectorDb ?? db),
        embedder,
        ...learningOptionsOf(config.learning),
        redact,
        onReindexError: (error) => logger.warn({ err: error instanceof Error ? error.message : String(error) }, 're-embedding lessons stopped; ratchet lessons reindex resumes it'),
      });
      return {
        implementation: memory.implementation,
        checks: [{ name: 'postgres', required: true, check: async () => (await db.query('SELECT 1'), { ok: true, detail: 'connected' }) }],
        close: async () => {
          await memory.close();
          await vectorDb?.close();
          await db.close();
        },
      };
    } catch (error) {
      await vectorDb?.close();
      await db.close();
      throw error;
    }
  },
});
