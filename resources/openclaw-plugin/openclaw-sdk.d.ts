// The slice of OpenClaw's plugin SDK this plugin uses, for type checking here, where openclaw is not installed
// (at runtime OpenClaw provides the real module). Shapes from docs.openclaw.ai plugins/hooks and plugins/sdk.
declare module 'openclaw/plugin-sdk/plugin-entry' {
  type Obj = Record<string, unknown>;
  export interface PluginLogger {
    info(msg: string): void;
    warn(msg: string): void;
    error?(msg: string): void;
  }
  export interface PluginCommandContext extends Obj {
    args?: string;
    commandBody?: string;
    channel?: string;
    sessionKey?: string;
    senderId?: string;
    isAuthorizedSender?: boolean;
    senderIsOwner?: boolean;
  }
  export interface OpenClawPluginApi {
    id: string;
    name: string;
    pluginConfig: Obj | undefined;
    logger: PluginLogger;
    on(hook: string, handler: (event: Obj, ctx: Obj) => unknown, opts?: { priority?: number; timeoutMs?: number }): void;
    registerCommand(cmd: {
      name: string;
      description: string;
      acceptsArgs?: boolean;
      requireAuth?: boolean;
      handler: (ctx: PluginCommandContext) => { text: string } | Promise<{ text: string }>;
    }): void;
  }
  export function definePluginEntry(entry: { id: string; name: string; description?: string; register(api: OpenClawPluginApi): void }): unknown;
}
