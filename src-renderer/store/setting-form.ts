// The Settings form, derived from each setting's JSON Schema (describeSettings; zod's toJSONSchema): which control a
// value gets, and how a typed draft becomes a value. The core validates every value again and names a bad one; the
// checks here are only those the core cannot make, such as an emptied number field, which is no number at all
// (Number('') is 0: clearing the timeout once saved 0, issue #15 item 5).

type Schema = Record<string, unknown>;

export type FieldSpec =
  | { kind: 'boolean' }
  | { kind: 'number'; integer: boolean; min: number | null; max: number | null; nullable: boolean }
  | { kind: 'enum'; options: string[]; nullable: boolean }
  | { kind: 'text'; nullable: boolean; url: boolean }
  | { kind: 'list' }
  | { kind: 'object'; fields: { name: string; spec: FieldSpec; required: boolean; help: string }[] }
  | { kind: 'json' };

const isObj = (v: unknown): v is Schema => typeof v === 'object' && v !== null && !Array.isArray(v);

export function fieldSpec(schema: unknown): FieldSpec {
  if (!isObj(schema)) return { kind: 'json' };
  let s = schema;
  let nullable = false;
  // A nullable value is `anyOf: [X, {type: null}]`.
  if (Array.isArray(s.anyOf)) {
    const opts = (s.anyOf as unknown[]).filter(isObj);
    const rest = opts.filter((o) => o.type !== 'null');
    if (rest.length !== 1 || rest.length === opts.length) return { kind: 'json' };
    nullable = true;
    s = rest[0]!;
  }
  const bound = (v: unknown) => (typeof v === 'number' && Math.abs(v) < Number.MAX_SAFE_INTEGER ? v : null);
  switch (s.type) {
    case 'boolean':
      return nullable ? { kind: 'json' } : { kind: 'boolean' };
    case 'integer':
    case 'number':
      return { kind: 'number', integer: s.type === 'integer', min: bound(s.minimum ?? s.exclusiveMinimum), max: bound(s.maximum ?? s.exclusiveMaximum), nullable };
    case 'string':
      if (Array.isArray(s.enum)) return { kind: 'enum', options: s.enum.map(String), nullable };
      return { kind: 'text', nullable, url: s.format === 'uri' };
    case 'array':
      return isObj(s.items) && s.items.type === 'string' && !nullable ? { kind: 'list' } : { kind: 'json' };
    case 'object': {
      if (nullable || !isObj(s.properties)) return { kind: 'json' };
      const required = new Set(Array.isArray(s.required) ? s.required.map(String) : []);
      const fields = Object.entries(s.properties).map(([name, sub]) => ({
        name,
        spec: fieldSpec(sub),
        required: required.has(name),
        help: isObj(sub) && typeof sub.description === 'string' ? sub.description : '',
      }));
      // Nested objects are edited as JSON text; one level of fields is what the settings have.
      return fields.some((f) => f.spec.kind === 'object') ? { kind: 'json' } : { kind: 'object', fields };
    }
    default:
      return { kind: 'json' };
  }
}

/** What an empty draft means for a field: null where the value may be null, absent for an optional field. */
export type EmptyMeans = 'null' | 'absent' | 'refuse';

export type Parsed = { ok: true; value: unknown } | { ok: false; message: string };

/** A typed draft (a text or number input's text) → the value to save, or why it is not one. */
export function parseDraft(spec: FieldSpec, draft: string, empty: EmptyMeans): Parsed {
  const t = draft.trim();
  if (t === '') {
    if (empty === 'null') return { ok: true, value: null };
    if (empty === 'absent') return { ok: true, value: undefined };
    return { ok: false, message: spec.kind === 'number' ? 'Enter a number; an empty field is not saved.' : 'Enter a value; an empty field is not saved.' };
  }
  if (spec.kind === 'number') {
    const n = Number(t);
    if (!Number.isFinite(n)) return { ok: false, message: `"${t}" is not a number.` };
    return { ok: true, value: n };
  }
  if (spec.kind === 'json') {
    try {
      return { ok: true, value: JSON.parse(t) as unknown };
    } catch (e) {
      return { ok: false, message: `Not JSON: ${(e as Error).message}` };
    }
  }
  return { ok: true, value: t };
}

/** The text a value shows as in a draft input. */
export function draftOf(spec: FieldSpec, value: unknown): string {
  if (value === null || value === undefined) return '';
  if (spec.kind === 'json') return JSON.stringify(value, null, 2);
  return String(value);
}

/** A few words for the value range the schema allows, for the field's hint. */
export function rangeHint(spec: FieldSpec): string {
  if (spec.kind !== 'number') return '';
  const kind = spec.integer ? 'a whole number' : 'a number';
  const n = (x: number) => x.toLocaleString('en-US');
  if (spec.min !== null && spec.max !== null) return `${kind} from ${n(spec.min)} to ${n(spec.max)}`;
  if (spec.min !== null) return `${kind}, at least ${n(spec.min)}`;
  if (spec.max !== null) return `${kind}, at most ${n(spec.max)}`;
  return kind;
}
