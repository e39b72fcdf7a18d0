// The editor for the few keys Rein sets in Codex's config.toml. A round trip through a TOML library would drop the
// user's comments and layout, so the edit is made on the text, line by line, and leaves every other byte alone (which
// is also what lets the uninstall give the original bytes back). The text edit understands only part of TOML
// (toml.io v1.0.0: table headers, strings, comments, arrays over several lines), so a maintained parser (smol-toml)
// stands on both sides of it: the file is parsed before (a file that is not TOML, or whose key is a table, as in
// `[notify]` or `notify.cmd = …`, is refused), and the edited text is parsed again and must mean exactly the
// document intended (the old one with that one key or table changed) before it is returned to be written. An edit
// that would mean anything else is refused, and nothing is written. Before this, a `[notify]` table got a second,
// top-level `notify = […]` beside it, and Codex would not start.
import { parse, TomlError } from 'smol-toml';
import { ReinError } from '../../common/errors.ts';

const refuse = (why: string): never => {
  throw new ReinError('conflict', `config.toml: ${why}; Rein will not edit it: fix it, or edit it by hand`);
};

/** The parsed file; a file that is not TOML is refused with the parser's line and reason. */
function parseToml(text: string): Record<string, unknown> {
  try {
    // Integers past 2^53 are valid TOML (i64); read them exactly rather than refuse the file.
    return parse(text, { integersAsBigInt: 'asNeeded' }) as Record<string, unknown>;
  } catch (e) {
    if (!(e instanceof TomlError)) throw e;
    return refuse(`it is not valid TOML (line ${e.line}, column ${e.column}: ${e.message.split('\n')[0]!.replace(/^Invalid TOML document: /, '')})`);
  }
}

type Doc = Record<string, unknown>;

/** A parsed value as plain data that JSON keeps whole (dates, big integers, NaN and -0 tagged), for comparison. */
function plain(v: unknown): unknown {
  if (v instanceof Date) return `\u0000date:${v.toISOString()}`;
  if (typeof v === 'bigint') return `\u0000int:${v}`;
  if (typeof v === 'number' && (!Number.isFinite(v) || Object.is(v, -0))) return `\u0000float:${Object.is(v, -0) ? '-0' : v}`;
  if (Array.isArray(v)) return v.map(plain);
  if (v !== null && typeof v === 'object') {
    const out: Doc = {};
    for (const k of Object.keys(v).sort()) out[k] = plain((v as Doc)[k]);
    return out;
  }
  return v;
}

/** Canonical text of a document. A table left empty counts as absent: `[hooks.state."k"]` brings `hooks` and
 *  `hooks.state` into being, and removing it takes them away again. */
function canonical(doc: unknown): string {
  const prune = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map((x) => (isTable(x) ? Object.fromEntries(Object.entries(x).map(([k, y]) => [k, prune(y)])) : prune(x)));
    if (!isTable(v)) return v;
    const out: Doc = {};
    for (const [k, x] of Object.entries(v)) {
      const p = prune(x);
      if (!(isTable(p) && Object.keys(p).length === 0)) out[k] = p;
    }
    return out;
  };
  return JSON.stringify(prune(plain(doc)));
}

const isTable = (v: unknown): v is Doc => v !== null && typeof v === 'object' && !Array.isArray(v);

/** The value of `key = <text>` as the parser reads it. */
function valueOf(text: string): unknown {
  return plain(parseToml(`v = ${text}\n`).v);
}

/** The table at `keys` in `doc`, made where absent; refused where something other than a table is in the way. */
function tableAt(doc: Doc, keys: string[]): Doc {
  let t = doc;
  for (const k of keys) {
    const next = t[k] ?? (t[k] = {});
    if (!isTable(next)) return refuse(`${keys.join('.')} cannot be a table: ${k} is already a value`);
    t = next;
  }
  return t;
}

/** The dotted path of a table header line such as `[hooks.state."a:b"]`, read by the parser. */
function headerPath(header: string): string[] {
  const keys: string[] = [];
  for (let t: unknown = parseToml(header + '\n'); isTable(t) && Object.keys(t).length === 1; ) {
    const k = Object.keys(t)[0]!;
    keys.push(k);
    t = t[k];
  }
  return keys;
}

/** A byte-order mark and CRLF line ends are taken off for the line edit and put back after it. */
function split(text: string): { bom: string; crlf: boolean; body: string } {
  const bom = text.startsWith('\ufeff') ? '\ufeff' : '';
  const rest = text.slice(bom.length);
  // Only a file whose every line ends in CRLF: a mixed file is edited as it is, so no byte of it changes form.
  const crlf = rest.includes('\r\n') && !/(?:^|[^\r])\n/.test(rest);
  return { bom, crlf, body: crlf ? rest.replaceAll('\r\n', '\n') : rest };
}

/**
 * `edit` applied to the text, checked by the parser: the result must be TOML meaning exactly what `intend` makes of
 * the document as it was (`what` names the change in the refusal).
 */
function guarded(text: string, what: string, intend: (doc: Doc) => void, edit: (body: string) => string): string {
  const want = plain(parseToml(text)) as Doc;
  const { bom, crlf, body } = split(text);
  // The line scan refuses strings and brackets that never close, which the parser has already refused.
  scanLines(body);
  intend(want);
  const edited = edit(body);
  const out = bom + (crlf ? edited.replaceAll('\n', '\r\n') : edited);
  let got: unknown;
  try {
    got = parse(out, { integersAsBigInt: 'asNeeded' });
  } catch (e) {
    if (!(e instanceof TomlError)) throw e;
    return refuse(`${what} would not leave valid TOML (line ${e.line}: ${e.message.split('\n')[0]}), so nothing was written`);
  }
  if (canonical(got) !== canonical(want)) refuse(`${what} would change more of the file's meaning than that, so nothing was written`);
  return out;
}

/** Refuses (ReinError 'conflict') a file that is not TOML: checked before an edit, and on the edited text. */
export function checkToml(text: string): void {
  parseToml(text);
  scanLines(split(text).body);
}

/** Where a top-level `key = value` sits: [start, end) line indexes, the value text and any trailing comment. */
interface KeySpan {
  start: number;
  end: number;
  value: string;
  comment: string;
}

/**
 * Which lines start outside every value (not inside a multi-line string, nor an array or inline table spanning lines),
 * and which of those are table headers. Judging `[` line by line took a top-level nested array's `[` line, or
 * `[IMPORTANT]` inside a """…""" string, for a header and wrote into the middle of a value (issue #21 item 5).
 * Strings, comments and brackets follow toml.io v1.0.0; a file whose strings or brackets never close is refused.
 */
function scanLines(text: string): { clean: boolean[]; header: boolean[] } {
  const clean: boolean[] = [];
  const header: boolean[] = [];
  let depth = 0;
  let lineStart = true;
  const fail = (what: string): never => {
    throw new ReinError('conflict', `config.toml: ${what} never ends (line ${clean.length}); Rein will not edit a file it cannot read: fix it, or edit it by hand`);
  };
  for (let i = 0; i < text.length; i++) {
    if (lineStart) {
      lineStart = false;
      clean.push(depth === 0);
      const m = /^[ \t]*/.exec(text.slice(i, i + 256))!;
      const isHeader = depth === 0 && text[i + m[0].length] === '[';
      header.push(isHeader);
      if (isHeader) {
        // A header ([a."b"] or [[a]]) ends its line; its quoted keys cannot hold a newline.
        const nl = text.indexOf('\n', i);
        if (nl < 0) break;
        i = nl;
        lineStart = true;
        continue;
      }
    }
    const c = text[i]!;
    if (c === '\n') {
      lineStart = true;
    } else if (c === '#') {
      const nl = text.indexOf('\n', i);
      if (nl < 0) break;
      i = nl - 1;
    } else if (c === '"' || c === "'") {
      const triple = c.repeat(3);
      if (text.startsWith(triple, i)) {
        let j = i + 3;
        for (;;) {
          const k = text.indexOf(triple, j);
          if (k < 0) fail('a multi-line string');
          if (c === '"' && isEscaped(text, k)) {
            j = k + 1;
            continue;
          }
          // Up to two quotes may sit just before the closing delimiter: """a""""" is a"" closed.
          let end = k + 3;
          while (end < text.length && text[end] === c && end < k + 5) end++;
          for (let n = i; n < end; n++) {
            if (text[n] === '\n') {
              clean.push(false);
              header.push(false);
            }
          }
          i = end - 1;
          break;
        }
      } else {
        let j = i + 1;
        while (j < text.length && text[j] !== c && text[j] !== '\n') j += c === '"' && text[j] === '\\' ? 2 : 1;
        if (j >= text.length || text[j] !== c) fail('a string');
        i = j;
      }
    } else if (c === '[' || c === '{') depth++;
    else if (c === ']' || c === '}') depth = Math.max(0, depth - 1);
  }
  if (depth !== 0) fail('an array or inline table');
  return { clean, header };
}

/** A backslash-escaped character: an odd run of backslashes before it. */
function isEscaped(text: string, at: number): boolean {
  let n = 0;
  while (at - 1 - n >= 0 && text[at - 1 - n] === '\\') n++;
  return n % 2 === 1;
}

/** Scan a value from `text`, returning its length (through the balanced closing bracket for an array). */
function scanValue(text: string): { len: number; complete: boolean } {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === '"' || c === "'") {
      // Multi-line strings are not expected in a notify array; refuse rather than mis-edit.
      if (text.startsWith(c.repeat(3), i)) throw new ReinError('conflict', 'config.toml: a multi-line string in the notify value is not supported; edit notify by hand');
      let j = i + 1;
      while (j < text.length && text[j] !== c) {
        if (c === '"' && text[j] === '\\') j++;
        if (text[j] === '\n') throw new ReinError('conflict', 'config.toml: unterminated string in notify');
        j++;
      }
      if (j >= text.length) return { len: text.length, complete: false };
      i = j;
      continue;
    }
    if (c === '#') {
      const nl = text.indexOf('\n', i);
      if (depth === 0) return { len: i, complete: true };
      if (nl < 0) return { len: text.length, complete: false };
      i = nl;
      continue;
    }
    if (c === '[') depth++;
    else if (c === ']') {
      depth--;
      if (depth === 0) return { len: i + 1, complete: true };
    } else if (c === '\n' && depth === 0) return { len: i, complete: true };
  }
  return { len: text.length, complete: depth === 0 };
}

/** End of the top-level region: the index of the first table header line (or the line count). */
function topLevelEnd(lines: string[], header: boolean[]): number {
  for (let i = 0; i < lines.length; i++) if (header[i] === true) return i;
  return lines.length;
}

/** The top-level `key = …` lines in `body` (no BOM, LF line ends), by the line scan alone. */
function locate(body: string, key: string): KeySpan | null {
  const lines = body.split('\n');
  const { clean, header } = scanLines(body);
  const end = topLevelEnd(lines, header);
  const re = new RegExp(`^[ \\t]*(?:${key}|"${key}"|'${key}')[ \\t]*=[ \\t]*`);
  for (let i = 0; i < end; i++) {
    if (clean[i] !== true) continue;
    const m = re.exec(lines[i]!);
    if (!m) continue;
    const rest = lines.slice(i).join('\n').slice(m[0].length);
    const { len, complete } = scanValue(rest);
    if (!complete) throw new ReinError('conflict', `config.toml: the value of ${key} on line ${i + 1} never ends`);
    const value = rest.slice(0, len).trimEnd();
    const consumed = m[0].length + len;
    // The line holding the value's last character.
    const upto = lines.slice(i).join('\n').slice(0, consumed);
    const lastLine = i + upto.split('\n').length - 1;
    const after = lines[lastLine]!.slice(upto.length - upto.lastIndexOf('\n') - 1);
    const comment = /^\s*#/.test(after) ? after.trim() : '';
    return { start: i, end: lastLine + 1, value, comment };
  }
  return null;
}

/**
 * The line span of `key = …` at the top level, or null where the file has no such key. The parser has the last word:
 * a key the line scan does not find (a table `[notify]`, a dotted `notify.cmd = …`, an escaped name) or reads
 * otherwise than the parser does is refused, never taken for absent.
 */
export function findTopLevelKey(text: string, key: string): KeySpan | null {
  const doc = parseToml(text);
  const span = locate(split(text).body, key);
  const has = Object.hasOwn(doc, key);
  if (has && isTable(doc[key])) {
    refuse(`${key} is a table here (a [${key}] header or a dotted ${key}.… key), and Codex reads ${key} as a value, so Codex cannot start with this file either`);
  }
  if (has && Array.isArray(doc[key]) && (doc[key] as unknown[]).some(isTable)) refuse(`${key} is an array of tables here ([[${key}]]), and Codex reads ${key} as a list of strings`);
  if (span === null && has) refuse(`${key} is written in a form Rein cannot edit line by line (an escaped or otherwise unusual key name)`);
  if (span !== null && (!has || canonical(valueOf(span.value)) !== canonical(plain(doc[key])))) {
    refuse(`the ${key} on line ${span.start + 1} does not read the same to Rein's line scan and to a TOML parser`);
  }
  return span;
}

/** Parse a TOML array of strings (basic or literal). */
export function parseStringArray(value: string): string[] {
  const out: string[] = [];
  const s = value.trim();
  if (!s.startsWith('[') || !s.endsWith(']')) refuse(`notify is not an array of strings but ${value} (Codex runs notify as a program and its arguments: ["prog", "arg"])`);
  let i = 1;
  const ws = () => {
    while (i < s.length - 1) {
      if (/\s|,/.test(s[i]!)) i++;
      else if (s[i] === '#') i = s.indexOf('\n', i) < 0 ? s.length - 1 : s.indexOf('\n', i);
      else break;
    }
  };
  for (ws(); i < s.length - 1; ws()) {
    const q = s[i];
    if (q === "'") {
      const j = s.indexOf("'", i + 1);
      out.push(s.slice(i + 1, j));
      i = j + 1;
    } else if (q === '"') {
      let j = i + 1;
      let str = '';
      while (s[j] !== '"') {
        if (s[j] === '\\') {
          const e = s[j + 1]!;
          const map: Record<string, string> = { b: '\b', t: '\t', n: '\n', f: '\f', r: '\r', '"': '"', '\\': '\\' };
          if (e in map) {
            str += map[e];
            j += 2;
          } else if (e === 'u' || e === 'U') {
            const n = e === 'u' ? 4 : 8;
            str += String.fromCodePoint(parseInt(s.slice(j + 2, j + 2 + n), 16));
            j += 2 + n;
          } else refuse(`bad escape \\${e} in notify`);
        } else str += s[j++];
      }
      out.push(str);
      i = j + 1;
    } else refuse(`notify holds something other than strings: ${value}`);
  }
  return out;
}

/** A TOML array of basic strings. JSON string escapes are valid TOML basic-string escapes. */
export function formatStringArray(items: string[]): string {
  return `[${items.map((x) => JSON.stringify(x)).join(', ')}]`;
}

/** Set (or, with null, remove) a top-level key, keeping every other line exactly. */
export function setTopLevelKey(text: string, key: string, value: string | null): string {
  findTopLevelKey(text, key);
  const intended = value === null ? undefined : valueOf(value);
  const intend = (doc: Doc) => {
    if (intended === undefined) delete doc[key];
    else doc[key] = intended;
  };
  return guarded(text, value === null ? `removing ${key}` : `setting ${key}`, intend, (body) => {
    const lines = body.split('\n');
    const span = locate(body, key);
    if (span) {
      const repl = value === null ? [] : [`${key} = ${value}${span.comment ? ' ' + span.comment : ''}`];
      lines.splice(span.start, span.end - span.start, ...repl);
      return lines.join('\n');
    }
    if (value === null) return body;
    const line = `${key} = ${value}`;
    if (body === '') return line + '\n';
    const end = topLevelEnd(lines, scanLines(body).header);
    // No tables: append, keeping the file's final newline (or its absence) as it was.
    if (end === lines.length) return body.endsWith('\n') ? body + line + '\n' : body + '\n' + line;
    // Before the first table, after the last top-level line that has content, so it cannot fall into a table.
    let at = end;
    while (at > 0 && lines[at - 1]!.trim() === '') at--;
    lines.splice(at, 0, line);
    return lines.join('\n');
  });
}

/** `[hooks.state."<key>"]` with `trusted_hash`, replacing an earlier one for the same key. */
export function setHookTrust(text: string, key: string, hash: string): string {
  const header = `[hooks.state.${JSON.stringify(key)}]`;
  const body = `trusted_hash = ${JSON.stringify(hash)}`;
  return guarded(text, `trusting hook ${key}`, (doc) => (tableAt(doc, ['hooks', 'state', key]).trusted_hash = hash), (t) => {
    const lines = t.split('\n');
    const isHeader = scanLines(t).header;
    const at = lines.findIndex((l, i) => isHeader[i] === true && l.trim() === header);
    if (at >= 0) {
      let j = at + 1;
      while (j < lines.length && isHeader[j] !== true) {
        if (/^\s*trusted_hash\s*=/.test(lines[j]!)) {
          lines[j] = body;
          return lines.join('\n');
        }
        j++;
      }
      lines.splice(at + 1, 0, body);
      return lines.join('\n');
    }
    return `${t}${separator(t)}${header}\n${body}\n`;
  });
}

/** The blank line that goes before a table appended to `t`. */
const separator = (t: string) => (t === '' || t.endsWith('\n\n') ? '' : t.endsWith('\n') ? '\n' : '\n\n');

/** Remove Rein's trust tables (header plus its lines up to the next table), given the keys Rein wrote. */
export function removeHookTrust(text: string, keys: string[]): string {
  return removeTables(text, keys.map((k) => `[hooks.state.${JSON.stringify(k)}]`));
}

/** A table `header` with exactly `body` (key = value lines), replacing one already there. */
export function setTable(text: string, header: string, body: string[]): string {
  const keys = headerPath(header);
  const table = plain(parseToml(`${header}\n${body.join('\n')}\n`));
  const intend = (doc: Doc) => {
    const parent = tableAt(doc, keys.slice(0, -1));
    parent[keys.at(-1)!] = keys.reduce((t, k) => (t as Doc)[k], table);
  };
  return guarded(text, `setting ${header}`, intend, (t) => {
    const cleared = removeTableLines(t, new Set([header]));
    return `${cleared}${separator(cleared)}${header}\n${body.join('\n')}\n`;
  });
}

/** Remove tables (header plus its lines up to the next table) by their exact header lines. */
export function removeTables(text: string, headerLines: string[]): string {
  const present = new Set<string>();
  const { body } = split(text);
  const { header } = scanLines(body);
  body.split('\n').forEach((l, i) => {
    if (header[i] === true && headerLines.includes(l.trim())) present.add(l.trim());
  });
  if (present.size === 0) return text;
  const intend = (doc: Doc) => {
    for (const h of present) {
      const keys = headerPath(h);
      delete tableAt(doc, keys.slice(0, -1))[keys.at(-1)!];
    }
  };
  return guarded(text, `removing ${[...present].join(', ')}`, intend, (t) => removeTableLines(t, present));
}

function removeTableLines(text: string, headers: Set<string>): string {
  const lines = text.split('\n');
  const isHeader = scanLines(text).header;
  const out: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (isHeader[i] !== true || !headers.has(lines[i]!.trim())) {
      out.push(lines[i]!);
      continue;
    }
    let j = i + 1;
    while (j < lines.length && isHeader[j] !== true) j++;
    // Keep the blank line that separated the next table, drop the one we added before ours.
    if (out.length > 0 && out[out.length - 1] === '' && j < lines.length) out.pop();
    i = j - 1;
  }
  return out.join('\n');
}
