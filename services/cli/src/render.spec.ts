import { describe, expect, it } from '@jest/globals';
import { Phase, TaskEvent, type ToolStep } from '@ratchet/contracts';
import { oneLine, renderEvent } from './render';

describe('oneLine', () => {
  it('keeps a goal or title on one line of a table, cut with an ellipsis', () => {
    expect(oneLine('Implement this Python function in solution.py:\n\n    def add(a, b):\n        """Add."""', 40)).toBe('Implement this Python function in solut…');
    expect(oneLine('  short\ttitle\n')).toBe('short title');
    expect(oneLine('x'.repeat(10), 10)).toBe('x'.repeat(10));
    expect(oneLine('x'.repeat(11), 10)).toHaveLength(10);
  });
});

describe('renderEvent', () => {
  const step: ToolStep = { number: 1, tool: 'search', arguments: '{"pattern":"def _format"}', result: 'tabulate/__init__.py:1360: def _format(val)', failed: false, decision: '', duration: undefined, thought: '' };
  const toolCalled = (phase: Phase, iteration: number) => TaskEvent.fromPartial({ taskId: 't', iteration, payload: { $case: 'toolCalled', toolCalled: { step, phase } } });

  it("tells a planner's lookup from the coder's tool calls", () => {
    expect(renderEvent(toolCalled(Phase.PHASE_PLANNING, 0))).toBe('  planner lookup #1 search def _format -> tabulate/__init__.py:1360: def _format(val)');
    expect(renderEvent(toolCalled(Phase.PHASE_CODING, 2))).toBe('[iteration 2]   #1 search def _format -> tabulate/__init__.py:1360: def _format(val)');
  });
});
