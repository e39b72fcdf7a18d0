// `rein hook codex-notify '<json>'` and `rein hook codex-hook` (JSON on stdin). The installers point Codex
// straight at the plain-JavaScript entry (node/integrations/codex/hook-entry.mjs), not at the CLI, so a notify
// costs one small Node start; this command runs the same code for anyone who calls it through `rein`.
export { runHook } from '../../node/integrations/codex/hook-entry.mjs';
