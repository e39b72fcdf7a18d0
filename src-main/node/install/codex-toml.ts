// A minimal, line-based editor for the few keys Rein sets in Codex's config.toml. There is no TOML library here,
// and a round trip through one would drop the user's comments anyway, so this edits text and leaves every other
// byte alone. It understands just enough TOML (toml.io v1.0.0): table headers, basic "…" and literal '…' strings,
// comments, and arrays that span lines.
import { ReinError } from '../../common/errors.ts';

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

/** Refuses (ReinError 'conflict') a file whose strings, arrays or inline tables never close: checked before an edit
 *  and on the edited text before it is written. */
export function checkToml(text: string): void {
  scanLines(text);
}

function checked(text: string): string {
  checkToml(text);
  return text;
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

export function findTopLevelKey(text: string, key: string): KeySpan | null {
  const lines = text.split('\n');
  const { clean, header } = scanLines(text);
  const end = topLevelEnd(lines, header);
  const re = new RegExp(`^\\s*(?:${key}|"${key}")\\s*=\\s*`);
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
    return checked(lines.join('\n'));
  }
  if (value === null) return checked(text);
  const line = `${key} = ${value}`;
  if (text === '') return checked(line + '\n');
  const end = topLevelEnd(lines, scanLines(text).header);
  if (end === lines.length) {
    // No tables: append, keeping the file's final newline (or its absence) as it was.
    return checked(text.endsWith('\n') ? text + line + '\n' : text + '\n' + line);
  }
  // Before the first table, after the last top-level line that has content, so it cannot fall into a table.
  let at = end;
  while (at > 0 && lines[at - 1]!.trim() === '') at--;
  lines.splice(at, 0, line);
  return checked(lines.join('\n'));
}

/** `[hooks.state."<key>"]` with `trusted_hash`, replacing an earlier one for the same key. */
export function setHookTrust(text: string, key: string, hash: string): string {
  const header = `[hooks.state.${JSON.stringify(key)}]`;
  const lines = text.split('\n');
  const isHeader = scanLines(text).header;
  const at = lines.findIndex((l, i) => isHeader[i] === true && l.trim() === header);
  const body = `trusted_hash = ${JSON.stringify(hash)}`;
  if (at >= 0) {
    let j = at + 1;
    while (j < lines.length && isHeader[j] !== true) {
      if (/^\s*trusted_hash\s*=/.test(lines[j]!)) {
        lines[j] = body;
        return checked(lines.join('\n'));
      }
      j++;
    }
    lines.splice(at + 1, 0, body);
    return checked(lines.join('\n'));
  }
  const sep = text === '' ? '' : text.endsWith('\n\n') ? '' : text.endsWith('\n') ? '\n' : '\n\n';
  return checked(`${text}${sep}${header}\n${body}\n`);
}

/** Remove Rein's trust tables (header plus its lines up to the next table), given the keys Rein wrote. */
export function removeHookTrust(text: string, keys: string[]): string {
  return removeTables(text, keys.map((k) => `[hooks.state.${JSON.stringify(k)}]`));
}

/** A table `header` with exactly `body` (key = value lines), replacing one already there. */
export function setTable(text: string, header: string, body: string[]): string {
  const cleared = removeTables(text, [header]);
  const sep = cleared === '' ? '' : cleared.endsWith('\n\n') ? '' : cleared.endsWith('\n') ? '\n' : '\n\n';
  return checked(`${cleared}${sep}${header}\n${body.join('\n')}\n`);
}

/** Remove tables (header plus its lines up to the next table) by their exact header lines. */
export function removeTables(text: string, headerLines: string[]): string {
  const headers = new Set(headerLines);
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
  return checked(out.join('\n'));
}
