// The encoding-specific entry loads only the o200k table (the one GPT-4o and
// later models use, and a fair stand-in for other models' tokenizers), not
// every table the package ships.
import type * as O200k from 'gpt-tokenizer/encoding/o200k_base';

let o200kTable: typeof O200k | undefined;

/**
 * The o200k_base encoder, loaded on first use: building its table takes most
 * of a second, which every process importing this library (every `ratchet`
 * command, `show` and `history` too) would otherwise pay at start.
 */
function o200k(): typeof O200k {
  // A lazy load: an import would build the table at start (see above).
  o200kTable ??= require('gpt-tokenizer/encoding/o200k_base') as typeof O200k;
  return o200kTable;
}

// Text from repositories and tool output may contain `<|endoftext|>` and
// friends; they are counted as the plain text they are, not rejected.
const plainText = { disallowedSpecial: new Set<string>() };

/**
 * The number of tokens `text` takes in the o200k_base encoding. Special
 * token markers are counted as ordinary text. Runs in time linear in the
 * text's length (roughly 30 MB/s), so callers tokenize only what they send.
 * A run of more than 2,048 characters without whitespace (a line of
 * pytest's progress marks, a blob) is counted in pieces of 2,048: byte pair
 * merging takes time quadratic in a run's length, and a piece boundary
 * changes the count by a token at most.
 */
export function countTokens(text: string): number {
  if (text === '') return 0;
  return piecesOf(text).reduce((sum, piece) => sum + o200k().countTokens(piece, plainText), 0);
}

/**
 * Whether `text` takes at most `maxTokens` tokens, as `countTokens` counts
 * them, without encoding it when its UTF-8 length settles the question:
 * every o200k_base token stands for at least one byte (byte pair merging
 * starts from the bytes), and so does every token of a piece, so a text never
 * takes more tokens than it has bytes. Prompts are mostly far under their
 * budgets, where this costs a length instead of a count.
 */
export function fitsInTokens(text: string, maxTokens: number): boolean {
  return fitsByLength(text, maxTokens) || countTokens(text) <= maxTokens;
}

/** Whether `text` has at most `maxTokens` UTF-8 bytes, and so surely at most that many tokens (see `fitsInTokens`). */
function fitsByLength(text: string, maxTokens: number): boolean {
  return Buffer.byteLength(text, 'utf8') <= maxTokens;
}

/** Characters of a run without whitespace encoded in one piece; see `countTokens`. */
const maxRunCharacters = 2_048;
const longRun = new RegExp(`\\S{${maxRunCharacters + 1},}`);
const longRuns = new RegExp(longRun.source, 'g');

/** `text` cut inside its long runs without whitespace, every `maxRunCharacters`, never inside a surrogate pair; `[text]` when it has none. */
function piecesOf(text: string): string[] {
  if (!longRun.test(text)) return [text];
  const pieces: string[] = [];
  let start = 0;
  for (const match of text.matchAll(longRuns)) {
    const end = match.index + match[0].length;
    for (let cut = match.index + maxRunCharacters; cut < end; cut += maxRunCharacters) {
      const at = isLowSurrogate(text.charCodeAt(cut)) ? cut + 1 : cut;
      if (at <= start) continue;
      pieces.push(text.slice(start, at));
      start = at;
    }
  }
  pieces.push(text.slice(start));
  return pieces;
}

function isLowSurrogate(code: number): boolean {
  return code >= 0xdc00 && code <= 0xdfff;
}

/** The tokens of `text`, long runs encoded in pieces as `countTokens` counts them. */
function encodePieces(text: string): number[] {
  const pieces = piecesOf(text);
  return pieces.length === 1 ? o200k().encode(text, plainText) : pieces.flatMap((piece) => o200k().encode(piece, plainText));
}

// A token may stop in the middle of a multi-byte character; then a few
// shorter cuts are tried before the slow path.
const maxCharacterTokens = 8;

/**
 * The longest prefix of `text` that is a prefix of the text (never a broken
 * character) and takes at most `maxTokens` tokens; `text` itself when it fits.
 * `maxTokens` below 1 gives the empty string.
 */
export function truncateToTokens(text: string, maxTokens: number): string {
  if (maxTokens < 1 || text === '') return '';
  if (fitsByLength(text, maxTokens)) return text;
  const tokens = encodePieces(text);
  if (tokens.length <= maxTokens) return text;
  for (let cut = Math.floor(maxTokens); cut > 0 && cut > maxTokens - maxCharacterTokens; cut -= 1) {
    const prefix = decodeWhole(tokens.slice(0, cut));
    if (text.startsWith(prefix) && countTokens(prefix) <= maxTokens) return prefix;
  }
  return shrinkToFit(text.slice(0, maxTokens), maxTokens);
}

/**
 * The longest suffix of `text` that takes at most `maxTokens` tokens, cut at a
 * character boundary; `text` itself when it fits. `maxTokens` below 1 gives
 * the empty string.
 */
export function truncateStartToTokens(text: string, maxTokens: number): string {
  if (maxTokens < 1 || text === '') return '';
  if (fitsByLength(text, maxTokens)) return text;
  const tokens = encodePieces(text);
  if (tokens.length <= maxTokens) return text;
  for (let cut = Math.floor(maxTokens); cut > 0 && cut > maxTokens - maxCharacterTokens; cut -= 1) {
    const suffix = decodeWhole(tokens.slice(tokens.length - cut));
    if (text.endsWith(suffix) && countTokens(suffix) <= maxTokens) return suffix;
  }
  return shrinkToFit(text.slice(-maxTokens), maxTokens, true);
}

const sentinel = '.';
/** The sentinel's tokens, encoded once (with the table, on first use). */
let sentinelTokens: number[] | undefined;

/**
 * The whole characters `tokens` decode to, without the bytes of characters
 * cut at either end. gpt-tokenizer decodes with one process-wide streaming
 * TextDecoder that keeps the bytes of a character cut at the end and puts
 * them in front of the next decode, whoever calls it. An ASCII sentinel on
 * each side ends any such leftover (before ours and after ours) as U+FFFD,
 * which is then dropped with the sentinels.
 */
function decodeWhole(tokens: readonly number[]): string {
  sentinelTokens ??= o200k().encode(sentinel, plainText);
  const decoded = o200k().decode([...sentinelTokens, ...tokens, ...sentinelTokens]);
  const start = decoded.indexOf(sentinel) + sentinel.length;
  return decoded.slice(start, decoded.length - sentinel.length).replace(/^\uFFFD+|\uFFFD+$/g, '');
}

// The slow path, for text whose tokens straddle characters everywhere: every
// token holds at least part of one character, so maxTokens characters are a
// start, and cutting 10% at a time converges quickly.
function shrinkToFit(candidate: string, maxTokens: number, fromStart = false): string {
  let text = dropBrokenSurrogate(candidate, fromStart);
  while (text !== '' && countTokens(text) > maxTokens) {
    const keep = Math.floor(text.length * 0.9);
    text = dropBrokenSurrogate(fromStart ? text.slice(text.length - keep) : text.slice(0, keep), fromStart);
  }
  return text;
}

function dropBrokenSurrogate(text: string, fromStart: boolean): string {
  if (fromStart) {
    const first = text.charCodeAt(0);
    return first >= 0xdc00 && first <= 0xdfff ? text.slice(1) : text;
  }
  const last = text.charCodeAt(text.length - 1);
  return last >= 0xd800 && last <= 0xdbff ? text.slice(0, -1) : text;
}
