import { AsyncLocalStorage } from 'node:async_hooks';
import { AppError } from '@ratchet/errors';
import { processMetrics } from '@ratchet/telemetry';
import type { ChatResponse, ChatRole } from '../domain/chat-model';
import { costOf, type ModelPrice } from '../domain/cost';

/** The labels of one model's series: the agent role and the configured model name (never the task). */
interface ModelLabels {
  readonly role: ChatRole;
  readonly model: string;
}

/** The labels of the completion in progress, for the HTTP attempts the client makes for it. */
const inFlight = new AsyncLocalStorage<ModelLabels>();

/**
 * Creates the series of a role's model at zero (tokens, cost, retries), so
 * dashboards and rates see the model from the start rather than from its
 * first call.
 */
export function declareModelSeries(role: ChatRole, model: string): void {
  const metrics = processMetrics();
  const labels = { role, model };
  metrics.modelTokens.inc({ ...labels, kind: 'prompt' }, 0);
  metrics.modelTokens.inc({ ...labels, kind: 'completion' }, 0);
  metrics.modelCost.inc(labels, 0);
  metrics.modelRetries.inc(labels, 0);
}

/**
 * Runs one completion and records it in the process's metrics: its duration,
 * the tokens it used and their cost at `price` (0 without one), or its error
 * code. HTTP retries made inside `call` are counted by `countRetryAttempt`.
 * @throws whatever `call` throws, unchanged.
 */
export async function meteredCompletion(labels: ModelLabels, price: ModelPrice | undefined, call: () => Promise<ChatResponse>): Promise<ChatResponse> {
  const metrics = processMetrics();
  const started = performance.now();
  try {
    const response = await inFlight.run(labels, call);
    metrics.modelTokens.inc({ ...labels, kind: 'prompt' }, response.usage.promptTokens);
    metrics.modelTokens.inc({ ...labels, kind: 'completion' }, response.usage.completionTokens);
    metrics.modelCost.inc(labels, price === undefined ? 0 : costOf(response.usage, price));
    return response;
  } catch (error) {
    metrics.modelErrors.inc({ ...labels, code: AppError.from(error).code });
    throw error;
  } finally {
    metrics.modelCallDuration.observe(labels, (performance.now() - started) / 1000);
  }
}

/**
 * Counts an HTTP attempt of the OpenAI SDK that is a retry: the SDK numbers
 * its attempts in the `X-Stainless-Retry-Count` request header (0 for the
 * first). Called from the client's `fetch`, inside `meteredCompletion`.
 */
export function countRetryAttempt(headers: RequestInit['headers']): void {
  const labels = inFlight.getStore();
  if (labels === undefined || headers === undefined) return;
  const retry = Number(new Headers(headers).get('x-stainless-retry-count') ?? '0');
  if (retry > 0) processMetrics().modelRetries.inc(labels);
}
