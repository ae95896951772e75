import { configSection } from '@ratchet/config';
import { AppError, ErrorCode } from '@ratchet/errors';
import { z } from 'zod';
import { OpenAiEmbedder } from './adapters/openai-embedder';
import { HashingEmbedder, type Embedder } from './domain/hashing-embedder';

/**
 * The `embedder` config section (env `RATCHET_EMBEDDER_*`), read by the
 * memory service and by embedded mode: how lesson texts become vectors.
 */
export const embedderConfigSection = configSection({
  /** `hashing` (offline, no model; the default) or `openai` (any OpenAI-compatible `/v1/embeddings`). */
  kind: z.enum(['hashing', 'openai']).default('hashing'),
  /** openai: base URL up to and including `/v1`. */
  baseUrl: z.string().url().optional(),
  /** openai: the embedding model, e.g. `text-embedding-3-small` or `nomic-embed-text`. */
  model: z.string().min(1).optional(),
  /** openai: sent as a bearer token; set it in RATCHET_EMBEDDER_API_KEY rather than in a file. */
  apiKey: z.string().min(1).optional(),
  /** openai: vector length to ask for (models that can shorten theirs); default the model's own. */
  dimensions: z.number().int().min(1).max(65_536).optional(),
  /** openai: texts per request. */
  batchSize: z.number().int().min(1).max(2_048).default(64),
  /** openai: per-request timeout, ms. */
  timeoutMs: z.number().int().positive().default(30_000),
  /** openai: retries after the first attempt, on 429, 5xx and connection errors. */
  maxRetries: z.number().int().min(0).max(10).default(3),
}).superRefine((section, context) => {
  // Reported by loadConfig at start with the variable to set, next to every other bad key.
  if (section.kind !== 'openai') return;
  if (section.baseUrl === undefined) context.addIssue({ code: 'custom', path: ['baseUrl'], message: 'required when embedder.kind is openai (e.g. https://api.openai.com/v1)' });
  if (section.model === undefined) context.addIssue({ code: 'custom', path: ['model'], message: 'required when embedder.kind is openai (e.g. text-embedding-3-small)' });
});

export type EmbedderSettings = Readonly<z.infer<typeof embedderConfigSection>>;

/**
 * The embedder an `embedder` section describes: `HashingEmbedder(512)` (id
 * `hashing-v1-512`) for `hashing`, an `OpenAiEmbedder` for `openai`.
 * Creating one makes no request.
 *
 * @throws AppError CONFIG_INVALID when kind is `openai` and baseUrl or model
 *   is missing, naming the variables to set.
 */
export function createEmbedder(settings: EmbedderSettings): Embedder {
  if (settings.kind === 'hashing') return new HashingEmbedder();
  const missing = [
    ...(settings.baseUrl === undefined ? ['RATCHET_EMBEDDER_BASE_URL (embedder.baseUrl)'] : []),
    ...(settings.model === undefined ? ['RATCHET_EMBEDDER_MODEL (embedder.model)'] : []),
  ];
  if (settings.baseUrl === undefined || settings.model === undefined) {
    throw new AppError(ErrorCode.CONFIG_INVALID, `embedder.kind is openai but ${missing.join(' and ')} ${missing.length === 1 ? 'is' : 'are'} not set; set ${missing.length === 1 ? 'it' : 'them'}, or use embedder.kind: hashing to embed offline`);
  }
  return new OpenAiEmbedder({
    baseUrl: settings.baseUrl,
    model: settings.model,
    batchSize: settings.batchSize,
    timeoutMs: settings.timeoutMs,
    maxRetries: settings.maxRetries,
    ...(settings.apiKey === undefined ? {} : { apiKey: settings.apiKey }),
    ...(settings.dimensions === undefined ? {} : { dimensions: settings.dimensions }),
  });
}
