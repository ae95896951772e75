import { describe, expect, it } from '@jest/globals';
import { oneLine } from './render';

describe('oneLine', () => {
  it('keeps a goal or title on one line of a table, cut with an ellipsis', () => {
    expect(oneLine('Implement this Python function in solution.py:\n\n    def add(a, b):\n        """Add."""', 40)).toBe('Implement this Python function in solut…');
    expect(oneLine('  short\ttitle\n')).toBe('short title');
    expect(oneLine('x'.repeat(10), 10)).toBe('x'.repeat(10));
    expect(oneLine('x'.repeat(11), 10)).toHaveLength(10);
  });
});
