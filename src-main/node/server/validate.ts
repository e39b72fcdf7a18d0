// Validate a verb's input against its schema in the API contract; the first problem becomes a BadInputError that
// names the field (a dotted path such as `context.0.role`).
import type { z } from 'zod';
import { VERBS } from '../../common/api.ts';
import type { VerbName, VerbParsed } from '../../common/api.ts';
import { BadInputError } from '../../common/errors.ts';

export function issueField(issue: z.core.$ZodIssue): string | undefined {
  const parts = issue.path.map(String);
  if (issue.code === 'unrecognized_keys' && issue.keys.length > 0) parts.push(issue.keys[0]);
  return parts.length > 0 ? parts.join('.') : undefined;
}

export function parseVerbInput<V extends VerbName>(verb: V, input: unknown): VerbParsed<V> {
  const r = VERBS[verb].input.safeParse(input);
  if (r.success) return r.data as VerbParsed<V>;
  const issue = r.error.issues[0];
  const field = issueField(issue);
  throw new BadInputError(`${verb}: ${field ?? 'input'}: ${issue.message}`, field, {
    issues: r.error.issues.slice(0, 10).map((i) => ({ field: issueField(i), message: i.message })),
  });
}
