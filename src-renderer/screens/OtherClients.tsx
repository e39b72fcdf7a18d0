// The wizard's path for clients that have no hook (issue #15 item 8): any OpenAI-compatible client can talk to
// Rein's capture proxy (`rein serve-model`), with the Rein token as its API key; a curl line proves it.
import { useState } from 'react';
import { useShallow } from 'zustand/shallow';
import { useRein } from '../store/react.tsx';

function CopyButton(props: { text: string; label: string }) {
  const [copied, setCopied] = useState<'yes' | 'no' | null>(null);
  return (
    <>
      <button
        type="button"
        className="secondary small-button"
        onClick={() => {
          navigator.clipboard.writeText(props.text).then(
            () => setCopied('yes'),
            () => setCopied('no'),
          );
        }}
      >
        {props.label}
      </button>
      <span className="muted small" role="status">
        {copied === 'yes' ? 'Copied.' : copied === 'no' ? 'Could not copy: select the text instead.' : ''}
      </span>
    </>
  );
}

export function OtherClients() {
  const { port, home } = useRein(useShallow((s) => ({ port: s.settings?.['proxy.port'] ?? 7434, home: s.status?.home ?? '~/.rein' })));
  const url = `http://127.0.0.1:${port}/v1`;
  const tokenFile = `${home}/token`;
  const curl = [
    `curl ${url}/chat/completions \\`,
    `  -H "Authorization: Bearer $(cat ${tokenFile})" \\`,
    `  -H 'Content-Type: application/json' \\`,
    `  -d '{"model":"rein","messages":[{"role":"user","content":"Say hello"}]}'`,
  ].join('\n');
  return (
    <section className="other-clients" aria-labelledby="other-clients-title" data-testid="other-clients">
      <h3 id="other-clients-title">Other clients</h3>
      <p>
        Any app that talks to an OpenAI-compatible server (Continue, Aider, Open WebUI, your own scripts) can be rated too: point it at Rein's proxy, with the Rein token as
        its API key. Start the proxy with <code>rein serve-model</code>; it answers with your model and stores each answer for rating.
      </p>
      <div className="copy-row">
        <span>Base URL</span>
        <code className="path" data-testid="proxy-url">
          {url}
        </code>
        <CopyButton text={url} label="Copy URL" />
      </div>
      <p className="muted small">
        The token is in <code className="path">{tokenFile}</code> (readable only by you).
      </p>
      <pre className="code-block" data-testid="proxy-curl" tabIndex={0} aria-label="A test request with curl">
        {curl}
      </pre>
      <CopyButton text={curl} label="Copy the curl command" />
    </section>
  );
}
