/**
 * One reason a loop stops, as a named predicate over what the loop knows
 * (in the style of vercel/ai's `stopWhen`): the task loop's stop conditions
 * in the orchestrator and the coder's tool loop are lists of these, read in
 * order by `firstStopRule`.
 */
export interface StopRule<Context> {
  /** For logs and tests: `max-iterations`, `tool-steps`, ... */
  readonly name: string;
  /** Why the loop must stop now, as people read it, or undefined while it may go on. */
  check(context: Context): string | undefined;
}

/** Which rule stopped a loop, and why. */
export interface StopMatch<Rule> {
  readonly rule: Rule;
  readonly detail: string;
}

/** The first of `rules` that holds for `context`, or undefined while the loop may go on. */
export function firstStopRule<Context, Rule extends StopRule<Context>>(rules: readonly Rule[], context: Context): StopMatch<Rule> | undefined {
  for (const rule of rules) {
    const detail = rule.check(context);
    if (detail !== undefined) return { rule, detail };
  }
  return undefined;
}
