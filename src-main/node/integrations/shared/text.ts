// Small text helpers shared by the capture handlers.
import { createHash } from 'node:crypto';

/** Cut `s` to at most `max` characters with a visible marker, so a reader can tell the text was shortened. */
export function truncate(s: string, max: number): string {
  if (s.length <= max) return s;
  const marker = `\n…[truncated ${s.length - max} chars]`;
  return s.slice(0, Math.max(0, max - marker.length)) + marker;
}

/** A short stable id from parts (an event id when the client sends none). */
export function stableHash(...parts: string[]): string {
  const h = createHash('sha256');
  for (const p of parts) h.update(String(p.length)).update(':').update(p);
  return h.digest('hex').slice(0, 24);
}

export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** A bounded map that forgets its oldest entries and entries older than `ttlMs`. */
export class RecentMap<V> {
  private readonly map = new Map<string, { value: V; at: number }>();
  private readonly max: number;
  private readonly ttlMs: number;
  private readonly now: () => number;
  constructor(max: number, ttlMs: number, now: () => number = Date.now) {
    this.max = max;
    this.ttlMs = ttlMs;
    this.now = now;
  }
  get(key: string): V | undefined {
    const e = this.map.get(key);
    if (e === undefined) return undefined;
    if (this.now() - e.at > this.ttlMs) {
      this.map.delete(key);
      return undefined;
    }
    return e.value;
  }
  set(key: string, value: V): void {
    this.map.delete(key);
    this.map.set(key, { value, at: this.now() });
    while (this.map.size > this.max) {
      const oldest = this.map.keys().next().value as string;
      this.map.delete(oldest);
    }
  }
  delete(key: string): void {
    this.map.delete(key);
  }
  get size(): number {
    return this.map.size;
  }
}
