// The `source` a captured turn carries for each agent integration (turns.source): the hooks in node/integrations/
// write them, and training (node/training/data.ts) reads them to know how a turn's context is ordered.
export const CLAUDE_SOURCE = 'claude-code';
export const CODEX_SOURCE = 'codex';
export const OPENCLAW_SOURCE = 'openclaw';
