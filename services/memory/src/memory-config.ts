import { configSection } from '@ratchet/config';
import { z } from 'zod';
import { DEFAULT_QDRANT_COLLECTION } from './adapters/qdrant-store';

const httpUrl = z
  .string()
  .url()
  .refine((value) => /^https?:\/\//i.test(value), 'must be an http(s) URL such as http://qdrant:6333')
  // fetch refuses them, and they would end up in messages.
  .refine((value) => URL.canParse(value) && new URL(value).username === '' && new URL(value).password === '', 'must not contain a user or password; put the key in RATCHET_MEMORY_QDRANT_API_KEY');

/**
 * The `memory` config section of the memory service process (env
 * `RATCHET_MEMORY_*`): where lesson vectors live. Lesson metadata is always
 * in Postgres (`database.url`).
 */
export const memoryConfigSection = configSection({
  /**
   * Where lesson vectors live: `postgres` (pgvector in the same database),
   * `pglite` (pgvector in an embedded database under vectorDataDir, for a
   * Postgres without the extension; one memory replica only), or `qdrant`
   * (the `qdrant` settings; any number of replicas).
   */
  vectors: z.enum(['postgres', 'pglite', 'qdrant']).default('postgres'),
  vectorDataDir: z.string().min(1).default('data/memory-vectors'),
  qdrant: configSection({
    /** Qdrant's REST endpoint, e.g. `http://qdrant:6333` (a missing port is the scheme's, as in any URL). Required for `vectors: qdrant`. */
    url: httpUrl.optional(),
    /** Sent as the `api-key` header; set it in RATCHET_MEMORY_QDRANT_API_KEY rather than in a file. */
    apiKey: z.string().min(1).optional(),
    /** One collection holds one vector dimension: use a new name after changing to an embedder of another dimension. */
    collection: z
      .string()
      .regex(/^[A-Za-z0-9_-]{1,255}$/, 'must be 1 to 255 letters, digits, _ or -')
      .default(DEFAULT_QDRANT_COLLECTION),
    /** Per-request timeout, ms. */
    timeoutMs: z.number().int().positive().max(600_000).default(10_000),
  }),
}).superRefine((section, context) => {
  // Reported by loadConfig at start with the variable to set, next to every other bad key.
  if (section.vectors === 'qdrant' && section.qdrant.url === undefined) {
    context.addIssue({ code: 'custom', path: ['qdrant', 'url'], message: 'required when memory.vectors is qdrant (e.g. http://qdrant:6333)' });
  }
});

export type MemorySettings = Readonly<z.infer<typeof memoryConfigSection>>;
