// The agent hook routes the capture server mounts under `/hooks/<agent>` (token-checked like the rest). Each is a
// function from the parsed JSON body to the JSON answer. None blocks an agent: what fails is logged and answered,
// except a captured turn that was not stored, which throws so that the server answers non-2xx (issue #21 item 4).
import type { Core } from '../core/types.ts';
import { createClaudeHooks } from './claude/handler.ts';
import { createCodexHooks } from './codex/handler.ts';
import { createOpenClawHooks } from './openclaw/handler.ts';
import type { HookLog } from './shared/log.ts';

export type HookRoute = (body: unknown) => Promise<Record<string, unknown>>;

export function createHookRoutes(core: Core, log: HookLog): Record<string, HookRoute> {
  const claude = createClaudeHooks(core, { log });
  const codex = createCodexHooks(core, { log });
  const openclaw = createOpenClawHooks(core, { log });
  return { claude: (b) => claude.handle(b), codex: (b) => codex.handle(b), openclaw: (b) => openclaw.handle(b) };
}
