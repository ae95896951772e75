import { z } from 'zod';

/**
 * A link to a task's trace in Grafana/Tempo: an http(s) URL with
 * `{taskId}` and/or `{traceId}` in it, for example the tasks dashboard
 * deploy/grafana provisions,
 * `https://grafana.example.com/d/ratchet-tasks/ratchet-tasks?var-task_id={taskId}&var-trace_id={traceId}`,
 * or Grafana Explore on the Tempo data source with `{traceId}`.
 */
export const traceUrlTemplateSchema = z
  .string()
  .trim()
  .regex(/^https?:\/\/\S+$/, 'must be an http(s) URL without spaces')
  .refine((template) => template.includes('{taskId}') || template.includes('{traceId}'), 'must contain {taskId} or {traceId}, which each task fills in');

/**
 * The trace link of a task from `template`, with `{taskId}` and `{traceId}`
 * filled in (URL-encoded). The task id is always known; the trace id only
 * when the task's submit was traced. So a template that needs only the
 * trace id gives no link for an untraced task (undefined), and one that
 * has both leaves the trace id empty.
 */
export function traceLinkOf(template: string | undefined, task: { readonly id: string; readonly traceId?: string }): string | undefined {
  if (template === undefined || template === '' || task.id === '') return undefined;
  const traceId = task.traceId ?? '';
  if (traceId === '' && !template.includes('{taskId}')) return undefined;
  return template.replaceAll('{taskId}', encodeURIComponent(task.id)).replaceAll('{traceId}', encodeURIComponent(traceId));
}
