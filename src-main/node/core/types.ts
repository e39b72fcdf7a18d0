// The core as the transports see it: one generic call, typed events, and a close.
// HTTP handlers, IPC handlers and the CLI are one-line adapters over `call`.
import type { Actor, EventName, Events, VerbName, VerbOutput } from '../../common/api.ts';
import type { ReinHome } from '../home.ts';

export interface Core {
  readonly home: ReinHome;
  /** Validates `input` against VERBS[verb].input (BadInputError naming the field), runs the verb, audits writes. */
  call<V extends VerbName>(verb: V, input: unknown, actor: Actor): Promise<VerbOutput<V>>;
  /** Subscribe to an event; returns a disposer. */
  on<E extends EventName>(event: E, fn: (payload: Events[E]) => void): () => void;
  /** Number of live listeners (tests assert that none leak). */
  listenerCount(): number;
  close(): void;
}
