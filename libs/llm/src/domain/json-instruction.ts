import type { ChatMessage, ResponseFormat } from './chat-model';

/**
 * Puts a "reply with JSON matching this schema" instruction into the system
 * prompt, for servers that cannot enforce `response_format: json_schema`.
 * Appends to the first system message, or adds one in front.
 */
export function withJsonInstruction(messages: readonly ChatMessage[], format: ResponseFormat): ChatMessage[] {
  const instruction =
    `Reply with a single JSON object and nothing else (no prose, no code fence). ` +
    `It must match this JSON Schema (named "${format.name}"):\n${JSON.stringify(format.schema)}`;
  const index = messages.findIndex((message) => message.role === 'system');
  if (index === -1) return [{ role: 'system', content: instruction }, ...messages];
  return messages.map((message, position) => (position === index ? { role: 'system', content: `${message.content}\n\n${instruction}` } : message));
}
