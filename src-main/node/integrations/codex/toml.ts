// A minimal, line-based editor for the few keys Rein sets in Codex's config.toml. There is no TOML library here,
// and a round trip through one would drop the user's comments anyway, so this edits text and leaves every other
// byte alone. It understands just enough TOML (toml.io v1.0.0): table headers, basic "…" and literal '…' strings,
// comments, and arrays that span lines.
import { ReinError } from '../../../common/errors.ts';

/** Where a top-level `key = value` sits: [start, end) line indexes, the value text and any trailing comment. */
interface KeySpan {
  start: number;
  end: number;
  value: string;
  comment: string;
}

const HEADER = /^\s*\[/;

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
function topLevelEnd(lines: string[]): number {
  for (let i = 0; i < lines.length; i++) if (HEADER.test(lines[i]!)) return i;
  return lines.length;
}

export function findTopLevelKey(text: string, key: string): KeySpan | null {
  const lines = text.split('\n');
  const end = topLevelEnd(lines);
  const re = new RegExp(`^\\s*(?:${key}|"${key}")\\s*=\\s*`);
  for (let i = 0; i < end; i++) {
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

/** Parse a TOML array of strings (basic or literal). */
export function parseStringArray(value: string): string[] {
  const out: string[] = [];
  const s = value.trim();
  if (!s.startsWith('[') || !s.endsWith(']')) throw new ReinError('conflict', `config.toml: notify is not an array: ${value}`);
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
          } else throw new ReinError('conflict', `config.toml: bad escape \\${e} in notify`);
        } else str += s[j++];
      }
      out.push(str);
      i = j + 1;
    } else throw new ReinError('conflict', `config.toml: notify holds something other than strings: ${value}`);
  }
  return out;
}

/** A TOML array of basic strings. JSON string escapes are valid TOML basic-string escapes. */
export function formatStringArray(items: string[]): string {
  return `[${items.map((x) => JSON.stringify(x)).join(', ')}]`;
}

/** Set (or, with null, remove) a top-level key, keeping every other line exactly. */
export function setTopLevelKey(text: string, key: string, value: string | null): string {
  const lines = text.split('\n');
  const span = findTopLevelKey(text, key);
  if (span) {
    const repl = value === null ? [] : [`${key} = ${value}${span.comment ? ' ' + span.comment : ''}`];
    lines.splice(span.start, span.end - span.start, ...repl);
    return lines.join('\n');
  }
  if (value === null) return text;
  const line = `${key} = ${value}`;
  if (text === '') return line + '\n';
  const end = topLevelEnd(lines);
  if (end === lines.length) {
    // No tables: append, keeping the file's final newline (or its absence) as it was.
    return text.endsWith('\n') ? text + line + '\n' : text + '\n' + line;
  }
  // Before the first table, after the last top-level line that has content, so it cannot fall into a table.
  let at = end;
  while (at > 0 && lines[at - 1]!.trim() === '') at--;
  lines.splice(at, 0, line);
  return lines.join('\n');
}

/** `[hooks.state."<key>"]` with `trusted_hash`, replacing an earlier one for the same key. */
export function setHookTrust(text: string, key: string, hash: string): string {
  const header = `[hooks.state.${JSON.stringify(key)}]`;
  const lines = text.split('\n');
  const at = lines.findIndex((l) => l.trim() === header);
  const body = `trusted_hash = ${JSON.stringify(hash)}`;
  if (at >= 0) {
    let j = at + 1;
    while (j < lines.length && !HEADER.test(lines[j]!)) {
      if (/^\s*trusted_hash\s*=/.test(lines[j]!)) {
        lines[j] = body;
        return lines.join('\n');
      }
      j++;
    }
    lines.splice(at + 1, 0, body);
    return lines.join('\n');
  }
  const sep = text === '' ? '' : text.endsWith('\n\n') ? '' : text.endsWith('\n') ? '\n' : '\n\n';
  return `${text}${sep}${header}\n${body}\n`;
}

/** Remove Rein's trust tables (header plus its lines up to the next table), given the keys Rein wrote. */
export function removeHookTrust(text: string, keys: string[]): string {
  const headers = new Set(keys.map((k) => `[hooks.state.${JSON.stringify(k)}]`));
  const lines = text.split('\n');
  const out: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (!headers.has(lines[i]!.trim())) {
      out.push(lines[i]!);
      continue;
    }
    let j = i + 1;
    while (j < lines.length && !HEADER.test(lines[j]!)) j++;
    // Keep the blank line that separated the next table, drop the one we added before ours.
    if (out.length > 0 && out[out.length - 1] === '' && j < lines.length) out.pop();
    i = j - 1;
  }
  return out.join('\n');
}
