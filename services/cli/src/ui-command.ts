import { AppError, ErrorCode } from '@ratchet/errors';
import { newToken, PrincipalDirectory } from '@ratchet/grpc-api';
import type { RoleModels } from '@ratchet/llm';
import type { OrchestratorApi, OrchestratorCallOptions } from '@ratchet/web';
import type { Command } from 'commander';
import { serverTarget } from './api';
import { configDirectory, dataDirectory, loadCliConfig } from './cli-config';
import { consoleOutput, type Output } from './commands';
import type { EmbeddedRatchet } from './embedded';

/** Where `ratchet ui` listens: this machine only. Other hosts use the `web` service. */
const uiHost = '127.0.0.1';

export interface UiOptions {
  /** An orchestrator's gRPC address; without it, embedded mode (every service in this process). */
  readonly server?: string;
  readonly tls?: boolean;
  readonly tlsCa?: string;
  /** Embedded mode's data directory (default ~/.ratchet/data). */
  readonly dataDir?: string;
  /** Port to listen on; 0 (the default) picks a free one. */
  readonly port?: string;
  /** Replaces the configured models in embedded mode (tests, demos with a scripted model). */
  readonly models?: RoleModels;
}

/** A dashboard `ratchet ui` started. */
export interface RunningUi {
  /** The address to open; embedded, with the run's token in its fragment, which signs the browser in. */
  readonly url: string;
  /** Embedded mode's per-run token (the dashboard accepts no other); undefined with --server, where people sign in with their own. */
  readonly token?: string;
  /** `embedded (DATA_DIR)` or `server HOST:PORT`. */
  readonly where: string;
  /** Stops the dashboard, then (embedded) every service; running embedded tasks are cancelled. */
  close(): Promise<void>;
}

/** Bus call options of a gateway call: the token is already checked, the bus needs none. */
const busOptions = (options: OrchestratorCallOptions | undefined) => ({ ...(options?.signal === undefined ? {} : { signal: options.signal }), ...(options?.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }) });

/** The orchestrator of an embedded Ratchet as the gateway calls it: its in-process client, and WatchTask from the orchestrator itself (streams do not ride the bus). */
function embeddedOrchestrator(ratchet: EmbeddedRatchet): OrchestratorApi {
  const { client } = ratchet;
  return {
    submitTask: (request, options) => client.submitTask(request, busOptions(options)),
    getTask: (request, options) => client.getTask(request, busOptions(options)),
    listTasks: (request, options) => client.listTasks(request, busOptions(options)),
    cancelTask: (request, options) => client.cancelTask(request, busOptions(options)),
    approve: (request, options) => client.approve(request, busOptions(options)),
    answer: (request, options) => client.answer(request, busOptions(options)),
    listProfiles: (request, options) => client.listProfiles(request, busOptions(options)),
    listLessons: (request, options) => client.listLessons(request, busOptions(options)),
    getLesson: (request, options) => client.getLesson(request, busOptions(options)),
    watchTask: (request, options) => ratchet.orchestrator.watchTask(request, { signal: options?.signal ?? new AbortController().signal }),
  };
}

function parsePort(text: string | undefined): number {
  const port = text === undefined ? 0 : Number(text);
  if (!Number.isInteger(port) || port < 0 || port > 65_535) throw new AppError(ErrorCode.INVALID_ARGUMENT, `--port ${text}: use a port from 1 to 65535, or 0 for any free one`);
  return port;
}

/**
 * Starts the dashboard on 127.0.0.1. Embedded: every service in this
 * process (as `ratchet run` does), and a random token made for this run
 * that the dashboard alone accepts, so other users of this machine and
 * other sites' pages cannot drive it; the printed address carries it.
 * With `server`: the dashboard of that orchestrator, over gRPC, where each
 * person signs in with their own token, checked by the orchestrator.
 *
 * @throws AppError INVALID_ARGUMENT for a bad --server or --port;
 *   CONFIG_INVALID for a bad config, no model configured (embedded), or a
 *   port that cannot be bound.
 */
export async function startUi(options: UiOptions): Promise<RunningUi> {
  const port = parsePort(options.port);
  const target = serverTarget({ ...(options.server === undefined ? {} : { server: options.server }), ...(options.tls === undefined ? {} : { tls: options.tls }), ...(options.tlsCa === undefined ? {} : { tlsCa: options.tlsCa }) });
  const configDir = configDirectory();
  const config = loadCliConfig(configDir);
  // Loaded here, not with the CLI: a web server is worth its start-up time only to this command.
  const { createGateway, grpcOrchestrator } = await import('@ratchet/web');
  const traceUrlTemplate = config.web.traceUrlTemplate;
  const closers: (() => Promise<void>)[] = [];
  const close = async () => {
    for (const closer of closers.reverse()) await closer().catch(() => undefined);
  };
  try {
    let orchestrator: OrchestratorApi;
    let token: string | undefined;
    let where: string;
    if (target !== undefined) {
      const client = grpcOrchestrator(target.address, target.tls === undefined ? {} : { tls: target.tls });
      closers.push(() => Promise.resolve(client.close()));
      orchestrator = client;
      where = `server ${target.address}`;
    } else {
      const dataDir = options.dataDir ?? dataDirectory(config);
      // Loaded only here, as in openApi: every service and PGlite, which `ui --server` never needs.
      const { startEmbedded } = require('./embedded') as typeof import('./embedded');
      const ratchet = await startEmbedded({ config, configDir, dataDir, commandGates: true, ...(options.models === undefined ? {} : { models: options.models }) });
      closers.push(() => ratchet.close());
      orchestrator = embeddedOrchestrator(ratchet);
      token = newToken().token;
      where = `embedded (${dataDir})`;
    }
    const gateway = createGateway({
      orchestrator,
      ...(token === undefined ? {} : { authenticate: PrincipalDirectory.ofTokens([token]).authenticate, tokenHint: 'open the address `ratchet ui` printed: it signs you in, and its token changes with every run' }),
      ...(traceUrlTemplate === undefined ? {} : { traceUrlTemplate }),
      // Loopback names only unless cli.yaml adds some: a page of another site whose name resolves to 127.0.0.1 (DNS rebinding) is refused.
      allowedHosts: config.web.allowedHosts,
      allowedHostsSetting: 'web.allowedHosts in cli.yaml (or RATCHET_WEB_ALLOWED_HOSTS, comma-separated)',
    });
    closers.push(() => gateway.close());
    const bound = await gateway.listen(uiHost, port);
    return { url: `http://${uiHost}:${bound}/${token === undefined ? '' : `#token=${token}`}`, ...(token === undefined ? {} : { token }), where, close };
  } catch (error) {
    await close();
    throw error;
  }
}

/**
 * `ratchet ui`: serves the dashboard until Ctrl-C (or SIGTERM), printing
 * the address to open.
 */
export async function runUi(options: UiOptions, output: Output = consoleOutput): Promise<void> {
  const ui = await startUi(options);
  output.err(`Ratchet dashboard (${ui.where}): open ${ui.url}`);
  if (ui.token === undefined) output.err("Sign in with your own token for that server (`ratchet token` makes one; it goes in the server's users file).");
  else output.err('The address carries a token made for this run: the dashboard accepts no other, and it changes each time.');
  output.err('Ctrl-C stops it.');
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  output.err(ui.token === undefined ? 'stopping the dashboard' : 'stopping the dashboard and Ratchet; running tasks are cancelled');
  await ui.close();
}

/** Registers `ratchet ui` on the program. */
export function addUiCommand(program: Command): void {
  program
    .command('ui')
    .description('the web dashboard on 127.0.0.1: tasks followed live, diffs between iterations, approvals and questions, lessons (embedded: every service in this process, like run; with --server: that orchestrator\'s, each person signing in with their own token)')
    .option('--server <host:port>', "an orchestrator's gRPC address (env RATCHET_SERVER); without it, embedded mode")
    .option('--tls', 'connect to the server with TLS, verifying it with the system CAs (env RATCHET_SERVER_TLS=1)')
    .option('--tls-ca <file>', 'connect to the server with TLS, verifying it with this CA (env RATCHET_SERVER_CA_FILE)')
    .option('--data-dir <dir>', 'embedded mode: where history and lessons are kept (default ~/.ratchet/data)')
    .option('--port <port>', 'port on 127.0.0.1 (default: any free one; the address is printed)')
    .action(async (options: UiOptions) => {
      await runUi(options);
    });
}
