import { AppError, ErrorCode } from '@ratchet/errors';
import { z } from 'zod';
import type { DefinitionExtractor } from '@ratchet/code-intel';
import type { RoleBudgetSettings } from '@ratchet/agent';
import type { DefinitionExtractorLoader } from '@ratchet/code-intel';
import { defaultGoalTokens, goalForPrompt } from './format';
import { renderTemplate, type RolePrompt } from './prompts';
import { countTokens, fitsInTokens, truncateStartToTokens, truncateToTokens } from '@ratchet/agent';

/**
 * One placeholder's value in a prompt fitted to a token budget (see
 * `fitPrompt`). A section is shown whole while the budget allows; when
 * sections compete, each gets a share of the room by its `weight`, and one
 * over its share is shortened by `fit`, which says what it left out.
 */
export interface PromptSection {
  /** The placeholder it fills, `goal` for `{{goal}}`. */
  readonly name: string;
  /** The whole value. Optional when `fit` and `tokens` are given (a value too large to build whole, such as every file of a large workspace). */
  readonly text?: string;
  /** Tokens the whole value takes, when known without counting `text` (an estimate is fine: it only steers the shares); default `countTokens(text)`. */
  readonly tokens?: number;
  /**
   * The value in at most `maxTokens` tokens, saying what it left out.
   * Default: `text` cut at its end with a note (`cutText`). A result over
   * `maxTokens` is cut again the default way.
   */
  readonly fit?: (maxTokens: number) => string;
  /** Claim on the room relative to the other sections when they do not all fit. Default 1. */
  readonly weight?: number;
  /** Tokens the section takes at most, even when there is room (a goal the length of a book). Default no limit. */
  readonly maxTokens?: number;
  /** Kept whole and counted first (short rules, the language): never shortened. */
  readonly fixed?: boolean;
}

/** How `fitPrompt` counts and what it names when a prompt cannot fit. */
export interface FitPromptOptions {
  /** The setting named when the fixed part alone is over the budget, e.g. `reflector.promptBudgetTokens`. */
  readonly budgetKey: string;
  /** Tokens per message for the role and framing, as `conversationTokens` counts them. Default 4. */
  readonly perMessageTokens?: number;
  /** Tokens of the budget that go with the call beside the messages (the reply schema, see `replySchemaTokens`). Default 0. */
  readonly reservedTokens?: number;
}

/** What a role's prompt is fitted to: its budget, what travels beside the messages, and how files are outlined. */
export interface RolePromptOptions {
  /** The role's `promptBudgetTokens`. */
  readonly budgetTokens: number;
  /** Tokens sent beside the messages, taken from the budget first: the reply schema (`replySchemaTokens`). Default 0. */
  readonly reservedTokens?: number;
  /** Outlines files for repository maps; without one a map lists paths only. */
  readonly extractor?: DefinitionExtractor;
}

/** A prompt's values fitted to a budget. */
export interface FittedPrompt {
  /** The placeholder values to render the prompt with. */
  readonly values: Readonly<Record<string, string>>;
  /** Tokens of the rendered system and user messages with their framing; never more than the budget less the reserved tokens. */
  readonly tokens: number;
  /** The sections that were shortened, in the order given. */
  readonly shortened: readonly string[];
}

const defaultPerMessageTokens = 4;
/** Rounds of shrinking when joined values count a few tokens more than their parts. */
const maxRefits = 8;

/**
 * Fills a role's prompt so that its system and user messages together take
 * at most `budgetTokens` tokens less `reservedTokens` (o200k_base, plus
 * `perMessageTokens` per message, as `conversationTokens` counts them).
 * The template's own text
 * and the `fixed` sections are counted first; the room left is shared among
 * the other sections: every section that fits its share is shown whole and
 * the room it does not use goes to the others (in proportion to `weight`);
 * a section over its share gets exactly its share and is shortened by its
 * `fit`. A placeholder used twice is counted twice. The whole prompt is
 * counted at the end; where joining values merged tokens across a seam, the
 * largest shortened section is fitted again a little smaller.
 *
 * @throws AppError RESOURCE_EXHAUSTED (not retryable) naming `budgetKey`
 *   when the template and the fixed sections alone are over the budget.
 */
export function fitPrompt(prompt: RolePrompt, sections: readonly PromptSection[], budgetTokens: number, options: FitPromptOptions): FittedPrompt {
  const perMessage = options.perMessageTokens ?? defaultPerMessageTokens;
  const reserved = Math.max(0, Math.floor(options.reservedTokens ?? 0));
  const budget = Math.floor(budgetTokens) - reserved;
  const uses = placeholderUses(prompt);
  const values: Record<string, string> = {};
  for (const section of sections) values[section.name] = '';
  const render = () => countTokens(renderTemplate(prompt.system, values)) + countTokens(renderTemplate(prompt.user, values)) + 2 * perMessage;

  const used = (section: PromptSection) => uses.get(section.name) ?? 0;
  for (const section of sections) if (section.fixed === true && used(section) > 0) values[section.name] = section.text ?? '';
  const whole = wholeWithinBytes(prompt, sections, values, { budget, perMessage }, used);
  if (whole !== undefined) return whole;
  // The template with the fixed values and every other value empty.
  const frame = render();
  const room = budget - frame;
  if (room < 0) {
    throw new AppError(
      ErrorCode.RESOURCE_EXHAUSTED,
      `the prompt's fixed part (its template and ${sections.filter((section) => section.fixed === true).length} fixed values) needs ${frame} tokens${reserved > 0 ? ` beside the ${reserved} of the reply schema` : ''}, over the budget of ${budget + reserved}; raise ${options.budgetKey}`,
      { retryable: false },
    );
  }

  const flexible = sections.filter((section) => section.fixed !== true && used(section) > 0);
  const wholeTokens = flexible.map((section) => section.tokens ?? countTokens(section.text ?? ''));
  const needs = flexible.map((section, index) => used(section) * Math.min(wholeTokens[index] ?? 0, section.maxTokens ?? Number.POSITIVE_INFINITY));
  const shares = shareTokens(needs, room, flexible.map((section) => section.weight ?? 1));
  const limits = flexible.map((section, index) => Math.floor((shares[index] ?? 0) / used(section)));
  const shortened = new Set<string>();

  const fill = (index: number) => {
    const section = flexible[index] as PromptSection;
    const limit = limits[index] ?? 0;
    const whole = section.text !== undefined && (wholeTokens[index] ?? 0) <= limit && (section.maxTokens === undefined || (wholeTokens[index] ?? 0) <= section.maxTokens);
    if (whole) {
      values[section.name] = section.text as string;
      shortened.delete(section.name);
      return;
    }
    const fitted = section.fit === undefined ? cutText(section.text ?? '', limit, { label: labelOf(section.name) }) : section.fit(limit);
    values[section.name] = fitsInTokens(fitted, limit) ? fitted : cutText(fitted, limit, { label: labelOf(section.name) });
    shortened.add(section.name);
  };
  flexible.forEach((_, index) => fill(index));

  let total = render();
  for (let round = 0; total > budget && round < maxRefits; round += 1) {
    // The largest section gives up what the seams cost, and a little more.
    let largest = -1;
    flexible.forEach((_, index) => {
      if (largest < 0 || (limits[index] ?? 0) > (limits[largest] ?? 0)) largest = index;
    });
    if (largest < 0) break;
    const section = flexible[largest] as PromptSection;
    limits[largest] = Math.max(0, (limits[largest] ?? 0) - Math.ceil((total - budget) / used(section)) - 4 * (round + 1));
    fill(largest);
    total = render();
  }
  if (total > budget) {
    throw new AppError(ErrorCode.RESOURCE_EXHAUSTED, `the prompt needs ${total + reserved} tokens after shortening every section, over the budget of ${budget + reserved}; raise ${options.budgetKey}`, { retryable: false });
  }
  return { values, tokens: total, shortened: sections.filter((section) => shortened.has(section.name)).map((section) => section.name) };
}

/**
 * `fitPrompt`'s answer when every section is shown whole and the rendered
 * messages have at most as many bytes as `budget` leaves beside their
 * framing (`fixedValues` holds the fixed sections). A token is at least a
 * byte, so the prompt then fits without counting a token, and the sections'
 * counts, which only share out a room that is not short, are not needed
 * either: the parts' tokens add up to at most the bytes of the whole, so
 * counting them would give every section its whole text too (when a
 * section's given `tokens` is exact). The prompt's tokens are counted only
 * if read. Undefined when a section is given only by `fit`, may be over its
 * `maxTokens`, or the bytes do not settle it.
 */
function wholeWithinBytes(
  prompt: RolePrompt,
  sections: readonly PromptSection[],
  fixedValues: Readonly<Record<string, string>>,
  { budget, perMessage }: { budget: number; perMessage: number },
  used: (section: PromptSection) => number,
): FittedPrompt | undefined {
  const values: Record<string, string> = { ...fixedValues };
  for (const section of sections) {
    if (section.fixed === true || used(section) === 0) continue;
    if (section.text === undefined || (section.maxTokens !== undefined && !fitsInTokens(section.text, section.maxTokens))) return undefined;
    values[section.name] = section.text;
  }
  const system = renderTemplate(prompt.system, values);
  const user = renderTemplate(prompt.user, values);
  if (Buffer.byteLength(system, 'utf8') + Buffer.byteLength(user, 'utf8') + 2 * perMessage > budget) return undefined;
  let tokens: number | undefined;
  return {
    values,
    get tokens() {
      tokens ??= countTokens(system) + countTokens(user) + 2 * perMessage;
      return tokens;
    },
    shortened: [],
  };
}

/**
 * Shares `total` tokens among parts that need `needs` tokens each, by
 * weight (default 1 each): a part that needs no more than its weighted share
 * gets what it needs, and what it leaves goes to the others; the parts over
 * their share split the rest by weight (rounded down). A part never gets
 * more than it needs; when everything fits, each gets exactly its need.
 */
export function shareTokens(needs: readonly number[], total: number, weights: readonly number[] = []): number[] {
  const shares = needs.map(() => 0);
  let remaining = Math.max(0, Math.floor(total));
  let open = needs.map((need, index) => ({ index, need: Math.max(0, need), weight: Math.max(0, weights[index] ?? 1) })).filter((part) => part.need > 0);
  while (open.length > 0) {
    const weightSum = open.reduce((sum, part) => sum + part.weight, 0);
    const shareOf = (part: { weight: number }) => (weightSum === 0 ? remaining / open.length : (remaining * part.weight) / weightSum);
    const satisfied = open.filter((part) => part.need <= shareOf(part));
    if (satisfied.length === 0) {
      for (const part of open) shares[part.index] = Math.floor(shareOf(part));
      break;
    }
    for (const part of satisfied) {
      shares[part.index] = Math.ceil(part.need);
      remaining -= Math.ceil(part.need);
    }
    open = open.filter((part) => !satisfied.includes(part));
  }
  return shares;
}

/** How `cutText` shortens a text. */
export interface CutTextOptions {
  /** What the text is, for the note: `the test report`. Default `this section`. */
  readonly label?: string;
  /** Which end is kept: `start` (default; a report states its point first) or `end` (the end of a log says how it ended). */
  readonly keep?: 'start' | 'end';
}

/**
 * `text` in at most `maxTokens` tokens: whole when it fits; else cut at a
 * line break where one is near, with a note saying how many tokens of what
 * were left out (`[… 1200 more tokens of the test report cut here to fit the
 * prompt budget]`), at the end or, with `keep: 'end'`, at the start. When
 * not even the note fits, a shorter one or the empty string.
 */
export function cutText(text: string, maxTokens: number, options: CutTextOptions = {}): string {
  const limit = Math.floor(maxTokens);
  if (fitsInTokens(text, limit)) return text;
  const total = countTokens(text);
  const label = options.label ?? 'this section';
  const keepEnd = options.keep === 'end';
  const note = (removed: number) =>
    keepEnd ? `[… the first ${removed} tokens of ${label} cut here to fit the prompt budget]\n` : `\n[… ${removed} more tokens of ${label} cut here to fit the prompt budget]`;
  let room = limit - countTokens(note(total));
  for (let round = 0; room > 0 && round < maxRefits; round += 1) {
    const kept = keepEnd ? atLineStart(truncateStartToTokens(text, room)) : atLineEnd(truncateToTokens(text, room));
    const candidate = keepEnd ? `${note(total - countTokens(kept))}${kept}` : `${kept}${note(total - countTokens(kept))}`;
    const tokens = countTokens(candidate);
    if (tokens <= limit) return candidate;
    room -= tokens - limit + 2;
  }
  const bare = `[${label} left out: over the prompt budget]`;
  return countTokens(bare) <= limit ? bare : '';
}

/**
 * A goal fitted to `maxTokens` (for a section's `fit`): whole when it fits,
 * else its beginning with `goalForPrompt`'s note saying how much is shown.
 */
export function fitGoal(goal: string, maxTokens: number): string {
  const limit = Math.floor(maxTokens);
  const whole = goalForPrompt(goal, Number.MAX_SAFE_INTEGER);
  if (countTokens(whole) <= limit) return whole;
  let shown = limit - 60;
  for (let round = 0; shown > 0 && round < maxRefits; round += 1) {
    const candidate = goalForPrompt(goal, shown);
    const tokens = countTokens(candidate);
    if (tokens <= limit) return candidate;
    shown -= tokens - limit + 2;
  }
  return cutText(whole, limit, { label: 'the goal' });
}

/**
 * A role's prompt options for one call: its budget (`settings`), the tokens
 * sent beside the messages (`reservedTokens`, the reply schema), and the
 * extractor when `extractor` loads one.
 */
export async function rolePromptOptions(settings: RoleBudgetSettings, reservedTokens: number, extractor?: DefinitionExtractorLoader): Promise<RolePromptOptions> {
  const loaded = await extractor?.();
  return { budgetTokens: settings.promptBudgetTokens, reservedTokens, ...(loaded === undefined ? {} : { extractor: loaded }) };
}

const schemaTokens = new WeakMap<z.ZodType, number>();
/** What the call's `responseFormat` adds beside its schema: its name and flags. */
const responseFormatTokens = 12;

/**
 * Tokens the reply schema of a structured call takes: the JSON schema
 * `completeStructured` sends as the request's `responseFormat` (as zod
 * writes it, without `$schema`), plus a few for its name and flags. Counted
 * once per schema object.
 */
export function replySchemaTokens(schema: z.ZodType): number {
  const cached = schemaTokens.get(schema);
  if (cached !== undefined) return cached;
  const json: Record<string, unknown> = { ...(z.toJSONSchema(schema, { unrepresentable: 'any' }) as Record<string, unknown>) };
  delete json['$schema'];
  const tokens = countTokens(JSON.stringify(json)) + responseFormatTokens;
  schemaTokens.set(schema, tokens);
  return tokens;
}

/** How `goalSection` weighs the goal; both optional. */
export interface GoalSectionOptions {
  /** Tokens of the goal at most. Default a quarter of the budget, and never more than `defaultGoalTokens`. */
  readonly maxTokens?: number;
  /** Default 2: a goal is worth more than most sections, less than the code. */
  readonly weight?: number;
}

/**
 * The `goal` section of a role's prompt: whole while it fits, else its start
 * with a note saying how much is shown (`fitGoal`).
 */
export function goalSection(goal: string, budgetTokens: number, options: GoalSectionOptions = {}): PromptSection {
  const maxTokens = options.maxTokens ?? Math.min(defaultGoalTokens, Math.floor(budgetTokens / 4));
  return { name: 'goal', text: goal.trim(), fit: (tokens) => fitGoal(goal, tokens), weight: options.weight ?? 2, maxTokens };
}

/** How often each placeholder appears in the system and user templates. */
function placeholderUses(prompt: RolePrompt): Map<string, number> {
  const uses = new Map<string, number>();
  for (const template of [prompt.system, prompt.user]) {
    for (const match of template.matchAll(/\{\{\s*([A-Za-z][\w]*)\s*\}\}/g)) {
      const name = match[1] ?? '';
      uses.set(name, (uses.get(name) ?? 0) + 1);
    }
  }
  return uses;
}

/** A placeholder's name as words for a note: `testReport` -> `the test report`. */
function labelOf(name: string): string {
  return `the ${name.replace(/([a-z])([A-Z])/g, '$1 $2').toLowerCase()}`;
}

/** `text` without a last, partial line, when a line break is in its last fifth. */
function atLineEnd(text: string): string {
  const cut = text.lastIndexOf('\n');
  return cut >= text.length * 0.8 ? text.slice(0, cut) : text;
}

/** `text` without a first, partial line, when a line break is in its first fifth. */
function atLineStart(text: string): string {
  const cut = text.indexOf('\n');
  return cut >= 0 && cut <= text.length * 0.2 ? text.slice(cut + 1) : text;
}
