import { describe, expect, it } from '@jest/globals';
import { keywordPlan, lexemeQuery, relevanceOf, vectorWeightOf } from '../src/domain/ranking';

describe('keywordPlan', () => {
  const counts = [
    { lexeme: 'test', lessons: 900 },
    { lexeme: 'fixtur', lessons: 40 },
    { lexeme: 'unknown', lessons: 0 },
    { lexeme: 'scope', lessons: 120 },
    { lexeme: 'fixtur', lessons: 40 },
  ];

  it('weighs a word by its rarity and drops words no lesson holds', () => {
    const plan = keywordPlan(counts, 1000);
    expect(plan.scored.map((term) => term.lexeme)).toEqual(['fixtur', 'scope', 'test']);
    const [rare, middle, common] = plan.scored.map((term) => term.weight) as [number, number, number];
    expect(rare).toBeCloseTo(Math.log(1 + (1000 - 40 + 0.5) / 40.5), 10);
    expect(rare).toBeGreaterThan(middle);
    expect(middle).toBeGreaterThan(common);
    expect(common).toBeGreaterThan(0);
    expect(plan.total).toBeCloseTo(rare + middle + common, 10);
  });

  it('searches the rarest words up to the read budget, and always at least one', () => {
    expect(keywordPlan(counts, 1000, 300).searched).toEqual(['fixtur', 'scope']);
    expect(keywordPlan(counts, 1000, 100).searched).toEqual(['fixtur']);
    expect(keywordPlan(counts, 1000, 10).searched).toEqual(['fixtur']);
    expect(keywordPlan(counts, 1000, 5000).searched).toEqual(['fixtur', 'scope', 'test']);
  });

  it('plans nothing when no word is held, and copes with counts above a stale total', () => {
    expect(keywordPlan([{ lexeme: 'x', lessons: 0 }], 10)).toEqual({ searched: [], scored: [], total: 0 });
    expect(keywordPlan([], 0)).toEqual({ searched: [], scored: [], total: 0 });
    const stale = keywordPlan([{ lexeme: 'x', lessons: 12 }], 3);
    expect(stale.scored[0]!.weight).toBeGreaterThan(0);
  });

  it('scores only the rarest 48 words of a long query', () => {
    const many = Array.from({ length: 100 }, (_, index) => ({ lexeme: `w${index}`, lessons: index + 1 }));
    const plan = keywordPlan(many, 10_000);
    expect(plan.scored).toHaveLength(48);
    expect(plan.scored.at(-1)!.lexeme).toBe('w47');
  });
});

describe('relevanceOf', () => {
  it('is 1 for a signature match, else the weighted mean of vector and keyword relevance, within 0..1', () => {
    expect(relevanceOf({ id: 'a', vector: 0.1, keyword: 0, signature: true }, 0.35)).toBe(1);
    expect(relevanceOf({ id: 'a', vector: 0.4, keyword: 0.8, signature: false }, 0.35)).toBeCloseTo(0.35 * 0.4 + 0.65 * 0.8, 10);
    expect(relevanceOf({ id: 'a', vector: -0.3, keyword: 0, signature: false }, 0.35)).toBe(0);
    expect(relevanceOf({ id: 'a', vector: 1, keyword: 1, signature: false }, 0.7)).toBe(1);
  });

  it('counts a lexical embedder’s vectors for less than a model’s', () => {
    expect(vectorWeightOf({ lexical: true })).toBeLessThan(vectorWeightOf({ lexical: false }));
  });
});

describe('lexemeQuery', () => {
  it('quotes a stemmed word so tsquery takes it as is', () => {
    expect(lexemeQuery('fixtur')).toBe("'fixtur'");
    expect(lexemeQuery("it's")).toBe("'it''s'");
    expect(lexemeQuery('a\\b')).toBe("'a\\\\b'");
  });
});
