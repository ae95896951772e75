import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

/** deploy/grafana/dashboards, where every provisioned dashboard lives. */
export const dashboardsDir = path.resolve(__dirname, '../grafana/dashboards');

export interface Dashboard {
  readonly file: string;
  readonly json: {
    uid: string;
    title: string;
    schemaVersion: number;
    panels: Panel[];
    templating?: { list: { name: string }[] };
  };
}

export interface Panel {
  id: number;
  type: string;
  title: string;
  datasource?: { type?: string; uid?: string };
  gridPos: { h: number; w: number; x: number; y: number };
  targets?: { refId: string; expr?: string; legendFormat?: string; datasource?: { type?: string; uid?: string } }[];
  panels?: Panel[];
}

/** Every dashboard JSON file, parsed. */
export function dashboards(): Dashboard[] {
  return readdirSync(dashboardsDir)
    .filter((file) => file.endsWith('.json'))
    .sort()
    .map((file) => ({ file, json: JSON.parse(readFileSync(path.join(dashboardsDir, file), 'utf8')) as Dashboard['json'] }));
}

/** Every panel of a dashboard, those inside collapsed rows too. */
export function panelsOf(dashboard: Dashboard): Panel[] {
  return dashboard.json.panels.flatMap((panel) => [panel, ...(panel.panels ?? [])]);
}

/** The PromQL queries of a dashboard: targets whose datasource (or their panel's) is the Prometheus one. */
export function prometheusQueries(dashboard: Dashboard): { panel: string; expr: string; legendFormat: string }[] {
  return panelsOf(dashboard).flatMap((panel) =>
    (panel.targets ?? [])
      .filter((target) => (target.datasource?.uid ?? panel.datasource?.uid) === 'prometheus' && target.expr !== undefined)
      .map((target) => ({ panel: `${dashboard.file}: ${panel.title}`, expr: target.expr as string, legendFormat: target.legendFormat ?? '' })),
  );
}

/** Grafana's own variables, as Prometheus would see them after Grafana fills them in. */
export function withGrafanaVariables(expr: string): string {
  return expr.replace(/\$__rate_interval|\$__interval|\$__range/g, '5m');
}

/** A metric selector in a query: the metric's name, the labels it matches on and the function it is the argument of. */
export interface Selector {
  readonly name: string;
  readonly labels: readonly string[];
  readonly enclosingFunction: string | undefined;
}

const aggregators = new Set(['sum', 'min', 'max', 'avg', 'group', 'stddev', 'stdvar', 'count', 'count_values', 'bottomk', 'topk', 'quantile', 'limitk', 'limit_ratio']);
const groupingKeywords = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right']);
const otherKeywords = new Set(['bool', 'and', 'or', 'unless', 'offset', 'atan2', 'inf', 'nan', 'Inf', 'NaN']);

const tokenPattern =
  /\s+|"(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*'|`[^`]*`|\[[^\]]*\]|\$[A-Za-z_][A-Za-z0-9_]*|\d+(?:\.\d+)?(?:[eE][+-]?\d+)?[a-zA-Z]*|[a-zA-Z_:][a-zA-Z0-9_:]*|=~|!~|!=|==|>=|<=|[{}(),=<>+\-*/%^@]/y;

/**
 * Reads the metric selectors and grouping labels (`by`, `without`, `on`,
 * `ignoring`, `group_left`, `group_right`) of a PromQL expression. Not a
 * full parser: enough to check that a query names only metrics and labels
 * that exist, and which function each metric is given to.
 * @throws Error on a character it cannot read.
 */
export function analysePromql(expr: string): { selectors: Selector[]; groupingLabels: string[] } {
  const tokens: string[] = [];
  tokenPattern.lastIndex = 0;
  while (tokenPattern.lastIndex < expr.length) {
    const at = tokenPattern.lastIndex;
    const match = tokenPattern.exec(expr);
    if (match === null) throw new Error(`cannot read ${JSON.stringify(expr.slice(at, at + 20))} in ${expr}`);
    if (!/^\s+$/.test(match[0])) tokens.push(match[0]);
  }
  const isIdentifier = (token: string | undefined) => token !== undefined && /^[a-zA-Z_:][a-zA-Z0-9_:]*$/.test(token);
  const selectors: Selector[] = [];
  const groupingLabels: string[] = [];
  const functions: (string | undefined)[] = [];
  let pendingAggregator: string | undefined;
  for (let index = 0; index < tokens.length; index += 1) {
    const token = tokens[index] as string;
    const next = tokens[index + 1];
    if (token === '(') {
      functions.push(pendingAggregator);
      pendingAggregator = undefined;
    } else if (token === ')') {
      functions.pop();
    } else if (isIdentifier(token)) {
      if (groupingKeywords.has(token)) {
        if (next !== '(') continue; // group_left without a list
        let at = index + 2;
        for (; tokens[at] !== ')' && at < tokens.length; at += 1) if (isIdentifier(tokens[at])) groupingLabels.push(tokens[at] as string);
        index = at;
      } else if (aggregators.has(token) && (next === '(' || next === 'by' || next === 'without')) {
        pendingAggregator = token;
      } else if (next === '(') {
        pendingAggregator = token;
      } else if (!otherKeywords.has(token)) {
        const labels: string[] = [];
        if (next === '{') {
          let at = index + 2;
          for (; tokens[at] !== '}' && at < tokens.length; at += 1) if (isIdentifier(tokens[at]) && ['=', '!=', '=~', '!~'].includes(tokens[at + 1] ?? '')) labels.push(tokens[at] as string);
          index = at;
        }
        selectors.push({ name: token, labels, enclosingFunction: functions[functions.length - 1] });
      }
    } else if (token === '{') {
      throw new Error(`a selector without a metric name in ${expr}: name the metric`);
    }
  }
  return { selectors, groupingLabels };
}
