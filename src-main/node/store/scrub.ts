// Everything a user or an agent supplies is capped, then redacted, here and nowhere else: a captured turn (the
// captureTurn verb and importData), a rating (the rate verb and importData), and the session a verb looks turns up
// by. Every free-text field goes through it, identifiers included: a session, an event id, a model name, a context
// message's keys, tags and the rater are text a hook or a person writes, and a secret can sit in any of them (issue
// #21 item 9). One RedactBudget bounds the time of a whole request (issue #21 item 1).
import { RATING_LIMITS, type TurnPolicy } from '../../common/api.ts';
import type { ContextMessage } from '../../common/domain.ts';
import { RedactBudget, redact } from '../../common/redact.ts';
import { capText } from './codec.ts';

/** Room left for a string in a context whose shared budget ran out: enough for the truncation marker. */
export const MIN_CONTEXT_STRING = 64;
/**
 * How far past the cap a text is read before it is redacted: a secret the cap cuts through is still seen whole (and
 * replaced) rather than kept as a visible prefix too short to recognise. A PEM block longer than this is redacted to
 * the end of what was read, as a truncated block.
 */
export const CAP_OVERLAP = 4096;

/**
 * Cap, then redact: redacting all of an 8 MB text to keep its first `max` characters wasted seconds (issue #21). Only
 * the first `max + CAP_OVERLAP` characters are read; the result is cut to `max` after redaction (a marker can be
 * longer than the secret it replaces), so nothing past the redacted part is ever kept.
 */
export function redactCapped(text: string, max: number, budget?: RedactBudget): { text: string; cut: boolean } {
  const read = Math.min(text.length, max + CAP_OVERLAP);
  return capText(redact(text.slice(0, read), budget), max, text.length - read);
}

/** The session or event id a turn is stored and looked up by: lookups redact the same way, so they find it. */
export function scrubKey(key: string, budget?: RedactBudget): string {
  return redact(key, budget);
}

/** A turn's free text, as captured or imported. */
export interface TurnText {
  session: string | null;
  eventId: string;
  prompt: string;
  context: readonly ContextMessage[];
  response: string;
  model: string | null;
  policy: TurnPolicy | null;
}

/**
 * Caps and redacts every string of a turn. The prompt and the response are capped at `maxChars` each; the context's
 * strings, keys included, share one budget of `maxChars`, so a 10,000-message context cannot store 10,000 x maxChars.
 * `cut` says whether any text was cut.
 */
export function scrubTurn(t: TurnText, maxChars: number, budget: RedactBudget = new RedactBudget()): TurnText & { cut: boolean } {
  let cut = false;
  const text = (s: string, max: number): string => {
    const r = redactCapped(s, max, budget);
    cut ||= r.cut;
    return r.text;
  };
  let left = maxChars;
  const shared = (s: string): string => {
    const out = text(s, Math.max(left, MIN_CONTEXT_STRING));
    left = Math.max(0, left - out.length);
    return out;
  };
  // The input's depth is bounded at the schema (verb-input.ts MAX_INPUT_DEPTH), so this recursion is shallow.
  const deep = (v: unknown): unknown => {
    if (typeof v === 'string') return shared(v);
    if (Array.isArray(v)) return v.map(deep);
    if (v !== null && typeof v === 'object') {
      // Two keys that redact alike both stay; a Map, then fromEntries, so that no key can set a prototype.
      const out = new Map<string, unknown>();
      for (const [k, x] of Object.entries(v)) {
        const base = shared(k);
        let key = base;
        for (let n = 2; out.has(key); n++) key = `${base}#${n}`;
        out.set(key, deep(x));
      }
      return Object.fromEntries(out);
    }
    return v;
  };
  const prompt = text(t.prompt, maxChars);
  const response = text(t.response, maxChars);
  const context = t.context.map((m) => deep(m) as ContextMessage);
  return {
    session: t.session === null ? null : scrubKey(t.session, budget),
    eventId: scrubKey(t.eventId, budget),
    prompt,
    context,
    response,
    model: t.model === null ? null : text(t.model, maxChars),
    policy: t.policy === null ? null : { ...t.policy, modelId: redact(t.policy.modelId, budget) },
    cut,
  };
}

/** A rating's free text, as rated or imported. */
export interface RatingText {
  correction: string | null;
  tags: readonly string[];
  comment: string | null;
  rater: string;
}

/** Caps each field of a rating at its RATING_LIMITS (an import's may be longer) and redacts it. */
export function scrubRating(r: RatingText, budget: RedactBudget = new RedactBudget()): RatingText & { tags: string[] } {
  const text = (s: string, max: number): string => redactCapped(s, max, budget).text;
  return {
    correction: r.correction === null ? null : text(r.correction, RATING_LIMITS.correction),
    tags: r.tags.map((tag) => text(tag, RATING_LIMITS.tag)),
    comment: r.comment === null ? null : text(r.comment, RATING_LIMITS.comment),
    rater: text(r.rater, RATING_LIMITS.rater),
  };
}
