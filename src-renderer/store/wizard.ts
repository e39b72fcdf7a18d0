// The setup wizard's data: what the core found on this machine, the dry-run plans of the agents the user ticks, and
// the outcome of each step. Every value comes from a core verb; nothing is guessed here.
import type { AgentId } from '../../src-main/common/system.ts';
import type { ReinClient } from '../services/api.ts';
import { toApiError } from '../services/api.ts';
import type { ReinState, Slice, WizardSlice } from './types.ts';

export const WIZARD_STEPS = ['welcome', 'agents', 'model', 'preset', 'test'] as const;

export function createWizardSlice(client: ReinClient): Slice<WizardSlice> {
  return (set, get) => {
    const guard = async (fn: () => Promise<void>) => {
      set({ wizardError: null });
      try {
        await fn();
      } catch (e) {
        set({ wizardError: toApiError(e) });
      }
    };
    return {
      wizardStep: 'welcome',
      agents: null,
      hardware: null,
      models: null,
      modelFolders: [],
      folderNote: null,
      plans: {},
      agentResults: {},
      presets: null,
      testTurn: null,
      wizardBusy: null,
      wizardError: null,
      setWizardStep: (step) => set({ wizardStep: step, wizardError: null }),
      detect: () =>
        guard(async () => {
          const [agents, hardware, models] = await Promise.all([
            client.detectAgents({}),
            client.detectHardware({}),
            client.discoverModels({ folders: get().modelFolders }),
          ]);
          set({ agents, hardware, models });
        }),
      // The answer goes beside the folder field: the core's reason when it refuses the folder (missing, a file, not
      // absolute), or how many models it found there.
      addModelFolder: async (folder) => {
        if (get().modelFolders.includes(folder)) {
          set({ folderNote: { error: false, text: `${folder} is already searched.` } });
          return;
        }
        const folders = [...get().modelFolders, folder];
        set({ folderNote: null });
        try {
          const known = new Set((get().models ?? []).map((m) => m.id));
          const models = await client.discoverModels({ folders });
          const there = models.filter((m) => m.source === 'folder' && !known.has(m.id)).length;
          set({ modelFolders: folders, models, folderNote: { error: false, text: there === 0 ? `No model in ${folder} (a folder with a config.json, or a .gguf file).` : `Found ${there} model${there === 1 ? '' : 's'} in ${folder}.` } });
        } catch (e) {
          set({ folderNote: { error: true, text: toApiError(e).message.replace(/^discoverModels: /, '') } });
        }
      },
      planAgent: (agent: AgentId, localModel = false) =>
        guard(async () => {
          const plan = await client.planAgent({ agent, ...(localModel ? { localModel } : {}) });
          set((s) => ({ plans: { ...s.plans, [agent]: plan } }));
        }),
      connectAgent: (agent: AgentId, localModel = false) =>
        guard(async () => {
          set({ wizardBusy: `connect:${agent}` });
          try {
            const r = await client.connectAgent({ agent, ...(localModel ? { localModel } : {}) });
            set((s) => ({ agentResults: { ...s.agentResults, [agent]: r } }));
            set({ agents: await client.detectAgents({}) });
          } finally {
            set({ wizardBusy: null });
          }
        }),
      chooseModel: (path) =>
        guard(async () => {
          set({ wizardBusy: 'model' });
          try {
            const r = path === 'demo' ? await client.useDemoModel({}) : await client.useModel({ path });
            // A model is chosen: what was said about a folder earlier (its error too) is settled.
            set({ settings: r.settings, folderNote: null });
            await get().loadStatus();
            set({ presets: await client.describePresets({}) });
          } finally {
            set({ wizardBusy: null });
          }
        }),
      loadPresets: () =>
        guard(async () => {
          set({ presets: await client.describePresets({}) });
        }),
      sendTestTurn: () =>
        guard(async () => {
          set({ wizardBusy: 'test', testTurn: null });
          try {
            set({ testTurn: await client.sendTestTurn({}) });
          } finally {
            set({ wizardBusy: null });
          }
        }),
    };
  };
}

/** The test turn has been seen by this window's event stream: capture works end to end. */
export const selectTestTurnArrived = (s: ReinState): boolean => s.testTurn !== null && s.turns.some((t) => t.id === s.testTurn!.turnId);
