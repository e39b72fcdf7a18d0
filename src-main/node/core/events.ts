// A typed event hub. Every subscription returns its disposer, and the live count is visible so tests can
// assert that nothing leaks (house style 17).
import type { EventName, Events } from '../../common/api.ts';

type Listener<E extends EventName> = (payload: Events[E]) => void;

export class EventHub {
  private readonly listeners = new Map<EventName, Set<Listener<EventName>>>();
  /** Called when a listener throws: a failing subscriber must not fail the write that already committed. */
  private readonly onListenerError: (event: EventName, err: unknown) => void;

  constructor(onListenerError: (event: EventName, err: unknown) => void) {
    this.onListenerError = onListenerError;
  }

  on<E extends EventName>(event: E, fn: Listener<E>): () => void {
    let set = this.listeners.get(event);
    if (set === undefined) {
      set = new Set();
      this.listeners.set(event, set);
    }
    // Wrap so that subscribing the same function twice gives two independent subscriptions.
    const entry: Listener<EventName> = (p) => fn(p as Events[E]);
    set.add(entry);
    return () => {
      set.delete(entry);
    };
  }

  emit<E extends EventName>(event: E, payload: Events[E]): void {
    const set = this.listeners.get(event);
    if (set === undefined) return;
    for (const fn of [...set]) {
      try {
        fn(payload);
      } catch (err) {
        this.onListenerError(event, err);
      }
    }
  }

  count(): number {
    let n = 0;
    for (const s of this.listeners.values()) n += s.size;
    return n;
  }

  clear(): void {
    this.listeners.clear();
  }
}
