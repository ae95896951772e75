import { describe, expect, it } from '@jest/globals';
import { traceLinkOf, traceUrlTemplateSchema } from './trace-link';

const dashboard = 'https://grafana.example.com/d/ratchet-tasks/ratchet-tasks?var-task_id={taskId}&var-trace_id={traceId}';
const explore = 'https://grafana.example.com/explore?left={"datasource":"tempo","queries":[{"query":"{traceId}"}]}';

describe('trace links', () => {
  it('fills in the task id and the trace id, URL-encoded', () => {
    expect(traceLinkOf(dashboard, { id: 'a b', traceId: '0af7651916cd43dd8448eb211c80319c' })).toBe('https://grafana.example.com/d/ratchet-tasks/ratchet-tasks?var-task_id=a%20b&var-trace_id=0af7651916cd43dd8448eb211c80319c');
  });

  it('links an untraced task by its id when the template has one, and not at all when it needs the trace id alone', () => {
    expect(traceLinkOf(dashboard, { id: 't-1', traceId: '' })).toBe('https://grafana.example.com/d/ratchet-tasks/ratchet-tasks?var-task_id=t-1&var-trace_id=');
    expect(traceLinkOf(explore, { id: 't-1', traceId: '' })).toBeUndefined();
    expect(traceLinkOf(explore, { id: 't-1' })).toBeUndefined();
    expect(traceLinkOf(undefined, { id: 't-1', traceId: 'abc' })).toBeUndefined();
  });

  it('accepts only http(s) templates with a placeholder', () => {
    expect(traceUrlTemplateSchema.safeParse(dashboard).success).toBe(true);
    expect(traceUrlTemplateSchema.safeParse('https://grafana.example.com/').error?.issues[0]?.message).toBe('must contain {taskId} or {traceId}, which each task fills in');
    expect(traceUrlTemplateSchema.safeParse('javascript:alert({taskId})').error?.issues[0]?.message).toBe('must be an http(s) URL without spaces');
  });
});
