// The composition root: the core's verbs (core/core.ts) with the setup wizard's (system/) and the chat service
// (serving/chat.ts), which sit above the core because they install integrations, read the capture server's file and
// start the serve stack. Every process that serves the app, the CLI
// or a benchmark opens its core here; tests of the core alone may call core/core.ts createCore.
import { createCore, type CoreOptions, type ReinCore } from './core/core.ts';
import { createChatService } from './serving/chat.ts';
import { createSystemHandlers } from './system/index.ts';

export function composeCore(opts: CoreOptions): ReinCore {
  return createCore({ ...opts, wizard: createSystemHandlers, chat: createChatService });
}
