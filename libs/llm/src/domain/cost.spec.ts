import { addUsage, costOf } from './cost';

describe('costOf', () => {
  it('prices prompt and completion tokens per million, in USD', () => {
    expect(costOf({ promptTokens: 1_000_000, completionTokens: 500_000 }, { promptPerMillion: 2.5, completionPerMillion: 10 })).toBeCloseTo(7.5);
    expect(costOf({ promptTokens: 1200, completionTokens: 300 }, { promptPerMillion: 0.15, completionPerMillion: 0.6 })).toBeCloseTo(0.00036);
    expect(costOf({ promptTokens: 0, completionTokens: 0 }, { promptPerMillion: 5, completionPerMillion: 15 })).toBe(0);
  });

  it('adds usage', () => {
    expect(addUsage({ promptTokens: 1, completionTokens: 2 }, { promptTokens: 3, completionTokens: 4 })).toEqual({ promptTokens: 4, completionTokens: 6 });
  });
});
