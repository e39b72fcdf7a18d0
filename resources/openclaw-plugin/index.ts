// Rein's OpenClaw plugin entry (OpenClaw docs: plugins/building-plugins, plugins/hooks). The logic lives in
// src/capture.ts; this file only wires it to the plugin API: typed hooks through `api.on`, and `/rl` through
// `api.registerCommand`, which answers without a model call.
import { definePluginEntry } from 'openclaw/plugin-sdk/plugin-entry';
import { createReinPlugin, httpPost, validateConfig } from './src/capture.ts';

export default definePluginEntry({
  id: 'rein',
  name: 'Rein',
  description: "Rate the agent's replies (/rl, or a 👍/👎 reaction); Rein trains your local model on them.",
  register(api) {
    const config = validateConfig(api.pluginConfig);
    const plugin = createReinPlugin({ config, post: httpPost(config), log: api.logger });
    api.on('message_received', (event, ctx) => plugin.onMessageReceived(event, ctx));
    api.on('before_prompt_build', (event, ctx) => plugin.onPromptText(typeof event.prompt === 'string' ? event.prompt : '', ctx));
    api.on('agent_end', (event, ctx) => plugin.onAgentEnd(event, ctx));
    api.on('message_sent', (event, ctx) => plugin.onMessageSent(event, ctx));
    api.registerCommand({
      name: 'rl',
      description: 'Rate the last reply for Rein: good, bad, 1-5, fix "<correction>", undo, status',
      acceptsArgs: true,
      // Anyone in the chat may use it; the plugin lets each sender rate only replies to their own messages.
      requireAuth: false,
      handler: (ctx) => plugin.onCommand(ctx),
    });
  },
});
