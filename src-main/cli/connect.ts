// How the CLI reaches the core: over HTTP to the running one (server.json with a live pid, and the token), or,
// when none runs, by opening the store directly through composeCore (SQLite WAL makes a second writer safe).
import type { EventName, Events, VerbInput, VerbName, VerbOutput } from '../common/api.ts';
import { ConnectionError, connectRunning } from '../node/client.ts';
import type { Core } from '../node/core/types.ts';
import type { ReinHome } from '../node/home.ts';

export interface CliApi {
  /** How the last call went: to the running core, or to the store directly. */
  readonly via: 'http' | 'direct';
  call<V extends VerbName>(verb: V, input: VerbInput<V>): Promise<VerbOutput<V>>;
  /**
   * Listen to one event of the core the calls go to (the running core's event stream, or the direct core's events);
   * resolves once listening, with its disposer.
   */
  subscribe<E extends EventName>(event: E, fn: (payload: Events[E]) => void): Promise<() => void>;
  close(): void;
}

function refused(e: unknown): boolean {
  // Only a refused connection proves the request never reached a core; a reset mid-request might have been applied.
  return e instanceof ConnectionError && (e.cause as NodeJS.ErrnoException | undefined)?.code === 'ECONNREFUSED';
}

export async function openApi(home: ReinHome, opts: { direct?: boolean } = {}): Promise<CliApi> {
  let http = opts.direct ? null : connectRunning(home);
  let core: Core | null = null;
  // Loaded on demand: the store and its schema cost start-up time that a call over HTTP does not need.
  const direct = async () => (core ??= (await import('../node/compose.ts')).composeCore({ home }));
  return {
    get via() {
      return http ? 'http' : 'direct';
    },
    async call(verb, input) {
      if (http) {
        try {
          return await http.call(verb, input);
        } catch (e) {
          if (!refused(e)) throw e;
          // The core stopped between reading server.json and now: carry on against the store.
          http = null;
        }
      }
      return (await direct()).call(verb, input, 'cli');
    },
    async subscribe(event, fn) {
      if (http) {
        const client = http;
        const ctrl = new AbortController();
        const connected = await new Promise<boolean>((resolve, reject) => {
          client
            .events((name, payload) => name === event && fn(payload as never), ctrl.signal, () => resolve(true))
            .then(() => resolve(false), (e: unknown) => (refused(e) ? resolve(false) : reject(e as Error)));
        });
        if (connected) return () => ctrl.abort();
        // The core stopped between reading server.json and now: carry on against the store.
        http = null;
      }
      return (await direct()).on(event, fn);
    },
    close() {
      core?.close();
      core = null;
    },
  };
}
