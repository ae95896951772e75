/** Words in names and text around a hash that say it protects something rather than checks it. */
const securityWords = new Set(['password', 'passwd', 'passphrase', 'pwd', 'secret', 'token', 'signature', 'sign', 'signed', 'auth', 'authenticate', 'authentication', 'credential', 'apikey', 'session', 'salt', 'otp', 'nonce', 'hmac', 'login']);

/**
 * The first security word (password, token, signature, ...) among the words
 * of `text`, with snake_case and camelCase split and plurals counted, so
 * `hash_password`, `userPasswords` and `authToken` match and `author` or
 * `compass` do not. Undefined when there is none.
 */
export function securityWordIn(text: string): string | undefined {
  const words = text.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toLowerCase().split(/[^a-z0-9]+/);
  return words.find((word) => securityWords.has(word) || (word.endsWith('s') && securityWords.has(word.slice(0, -1))));
}
