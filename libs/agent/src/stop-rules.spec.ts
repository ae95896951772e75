import { describe, expect, it } from '@jest/globals';
import { firstStopRule, type StopRule } from './stop-rules';

describe('firstStopRule', () => {
  const rules: StopRule<number>[] = [
    { name: 'negative', check: (value) => (value < 0 ? `${value} is below zero` : undefined) },
    { name: 'large', check: (value) => (value > 10 ? `${value} is over 10` : undefined) },
    { name: 'odd-and-large', check: (value) => (value > 10 && value % 2 === 1 ? 'odd' : undefined) },
  ];

  it('returns the first rule that holds, in the order given, with why', () => {
    expect(firstStopRule(rules, 11)).toEqual({ rule: rules[1], detail: '11 is over 10' });
    expect(firstStopRule([...rules].reverse(), 11)).toEqual({ rule: rules[2], detail: 'odd' });
    expect(firstStopRule(rules, -1)?.rule.name).toBe('negative');
  });

  it('returns undefined while no rule holds, and for no rules', () => {
    expect(firstStopRule(rules, 5)).toBeUndefined();
    expect(firstStopRule([], 5)).toBeUndefined();
  });
});
