// What the agent did on the way to its answer: each tool call on one folded line (its tool and what it acted on),
// opening to its input (an edit as a diff) and its output. Shown under the answer on the card, in the popup and in
// the Ratings detail, so a rating judges the work and not only the last words.
import { useMemo } from 'react';
import type { ContextMessage } from '../../src-main/common/domain.ts';
import { toolCalls } from '../store/tool-calls.ts';
import type { DiffLine, ToolCall } from '../store/tool-calls.ts';

const DIFF_MARK = { same: ' ', del: '-', add: '+' } as const;

function Diff(props: { lines: DiffLine[]; name: string }) {
  return (
    <pre className="tool-block tool-diff" data-testid="tool-diff" tabIndex={0} aria-label={`${props.name}: the change, removed lines marked -, added lines +`}>
      {props.lines.map((l, i) => (
        <span key={i} className={`diff-${l.kind}`}>
          {DIFF_MARK[l.kind]} {l.text}
        </span>
      ))}
    </pre>
  );
}

function Call(props: { call: ToolCall }) {
  const { call } = props;
  return (
    <details className={`tool-call${call.isError ? ' failed' : ''}`}>
      <summary>
        <span className="tool-name">{call.name}</span>
        {call.target !== '' && <code className="tool-target">{call.target}</code>}
        {call.isError && <span className="tool-flag">failed</span>}
      </summary>
      {call.detail !== null && (
        <pre className="tool-block" tabIndex={0} aria-label={`${call.name}: input`}>
          {call.detail}
        </pre>
      )}
      {call.diff !== null && <Diff lines={call.diff} name={call.name} />}
      <p className="label">Output</p>
      {call.output === null ? (
        <p className="muted small">No output was captured.</p>
      ) : (
        <pre className="tool-block tool-output" tabIndex={0} aria-label={`${call.name}: output`}>
          {call.output === '' ? '(empty)' : call.output}
        </pre>
      )}
    </details>
  );
}

export function ToolCalls(props: { context: readonly ContextMessage[] }) {
  const calls = useMemo(() => toolCalls(props.context), [props.context]);
  if (calls.length === 0) return null;
  return (
    <div className="tool-calls" data-testid="tool-calls">
      <p className="label">
        Tool calls <span className="count">{calls.length}</span>
      </p>
      <ol>
        {calls.map((c, i) => (
          <li key={i}>
            <Call call={c} />
          </li>
        ))}
      </ol>
    </div>
  );
}
