// The one validation of a verb's input, shared by every transport (core.call, and the HTTP server before it): a depth
// bound, then the verb's schema. The first problem becomes a BadInputError that names the field (a dotted path such
// as `context.0.role`).
import type { z } from 'zod';
import { VERBS } from './api.ts';
import type { VerbName, VerbParsed } from './api.ts';
import { BadInputError } from './errors.ts';

/**
 * The deepest nesting of arrays and objects a verb's input may have (the input object itself is level 1). Real input
 * stays under ten (a context message's tool call is about five); a bound keeps every later walk (the redaction of a
 * context, JSON.stringify of an error) far from the stack's limit: a value 200,000 deep used to kill the server.
 */
export const MAX_INPUT_DEPTH = 64;

/**
 * The dotted path of the first array or object nested deeper than `max`, or null. Iterative, so any depth is safe to
 * inspect; it stops at the first one too deep.
 */
export function tooDeep(value: unknown, max: number = MAX_INPUT_DEPTH): string | null {
  const stack: { v: unknown; depth: number; path: string[] }[] = [{ v: value, depth: 1, path: [] }];
  while (stack.length > 0) {
    const { v, depth, path } = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    if (depth > max) return path.join('.');
    for (const [k, x] of Object.entries(v)) {
      if (x !== null && typeof x === 'object') stack.push({ v: x, depth: depth + 1, path: [...path, k] });
    }
  }
  return null;
}

export function issueField(issue: z.core.$ZodIssue): string | undefined {
  const parts = issue.path.map(String);
  if (issue.code === 'unrecognized_keys' && issue.keys.length > 0) parts.push(issue.keys[0]);
  return parts.length > 0 ? parts.join('.') : undefined;
}

export function parseVerbInput<V extends VerbName>(verb: V, input: unknown): VerbParsed<V> {
  const deep = tooDeep(input);
  if (deep !== null) {
    // Only the first levels of the path: the rest is as long as the nesting.
    const field = deep.split('.').slice(0, 4).join('.');
    throw new BadInputError(`${verb}: ${field}: nested deeper than ${MAX_INPUT_DEPTH} levels`, field);
  }
  const r = VERBS[verb].input.safeParse(input);
  if (r.success) return r.data as VerbParsed<V>;
  const issue = r.error.issues[0];
  const field = issueField(issue);
  throw new BadInputError(`${verb}: ${field ?? 'input'}: ${issue.message}`, field, {
    issues: r.error.issues.slice(0, 10).map((i) => ({ field: issueField(i), message: i.message })),
  });
}
