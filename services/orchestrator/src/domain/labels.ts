import { AppError, ErrorCode, quoted } from '@ratchet/errors';

/**
 * Limits of a task's labels, as Kubernetes sets them for its own labels
 * where they fit: a key is an optional DNS-subdomain prefix (at most 253
 * characters) and `/`, then a name of at most 63 characters (letters,
 * digits, `-`, `_`, `.`, starting and ending with a letter or digit). Values
 * are freer than Kubernetes' (ticket URLs, bench task ids such as
 * `HumanEval/0`): at most 256 characters without control characters. At
 * most 32 labels, so a task's labels stay under about 40 KB whatever is sent.
 */
export const labelLimits = {
  maxLabels: 32,
  maxKeyNameChars: 63,
  maxKeyPrefixChars: 253,
  maxValueChars: 256,
} as const;

const keyName = /^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$/;
const keyPrefix = /^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/;
// eslint-disable-next-line no-control-regex -- control characters are what is refused.
const controlCharacters = /[\u0000-\u001f\u007f-\u009f]/;

/** What is wrong with one label, or undefined when it is within `labelLimits`. */
export function labelProblem(key: string, value: string): string | undefined {
  const slash = key.lastIndexOf('/');
  const prefix = slash < 0 ? undefined : key.slice(0, slash);
  const name = slash < 0 ? key : key.slice(slash + 1);
  const shownKey = quoted(key, 40);
  if (name.length === 0 || name.length > labelLimits.maxKeyNameChars || !keyName.test(name)) {
    return `label key ${shownKey} is not a label name: use at most ${labelLimits.maxKeyNameChars} letters, digits, "-", "_" or ".", starting and ending with a letter or digit, optionally after a prefix and "/" (e.g. "team", "ratchet.dev/ticket")`;
  }
  if (prefix !== undefined && (prefix.length === 0 || prefix.length > labelLimits.maxKeyPrefixChars || !keyPrefix.test(prefix))) {
    return `label key ${shownKey} has a prefix that is not a DNS name: use at most ${labelLimits.maxKeyPrefixChars} lower-case letters, digits, "-" and "." before the "/" (e.g. "example.com/team")`;
  }
  if (value.length > labelLimits.maxValueChars) return `label ${shownKey} has a value of ${value.length} characters; at most ${labelLimits.maxValueChars} are accepted: put longer text in the goal or a workspace file`;
  if (controlCharacters.test(value)) return `label ${shownKey} has a control character in its value; send plain text on one line`;
  return undefined;
}

/**
 * Checks a label map a client sent (a task's labels, or a list filter).
 *
 * @param field the request field, for the message ("labels").
 * @throws AppError INVALID_ARGUMENT saying the limit and what to do.
 */
export function checkLabels(field: string, labels: Readonly<Record<string, string>>): void {
  const entries = Object.entries(labels);
  if (entries.length > labelLimits.maxLabels) {
    throw new AppError(ErrorCode.INVALID_ARGUMENT, `${field} has ${entries.length} labels; at most ${labelLimits.maxLabels} are accepted: keep the ones you filter by`);
  }
  for (const [key, value] of entries) {
    const problem = labelProblem(key, value);
    if (problem !== undefined) throw new AppError(ErrorCode.INVALID_ARGUMENT, `${field}: ${problem}`);
  }
}

/**
 * The labels of a stored task as they are shown: those within
 * `labelLimits`, at most `maxLabels` by key. Tasks stored before the limits
 * may carry labels of any size; showing them whole made every list that
 * held one too large to send.
 */
export function shownLabels(labels: Readonly<Record<string, string>>): Record<string, string> {
  const entries = Object.entries(labels);
  if (entries.length <= labelLimits.maxLabels && entries.every(([key, value]) => labelProblem(key, value) === undefined)) return { ...labels };
  return Object.fromEntries(
    entries
      .filter(([key, value]) => labelProblem(key, value) === undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .slice(0, labelLimits.maxLabels),
  );
}
