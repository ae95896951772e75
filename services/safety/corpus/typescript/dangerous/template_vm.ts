// Renders a template whose expressions run in a vm context.
import vm from 'node:vm';

export function render(template: string, data: Record<string, unknown>): string {
  return template.replace(/\{\{(.+?)\}\}/g, (_match, code: string) => String(vm.runInNewContext(code, { ...data })));
}
