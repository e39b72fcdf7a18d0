// The ordered list of frozen migrations. Append only.
import * as m0001 from './0001-init.ts';
import * as m0002 from './0002-turn-policy.ts';
import * as m0003 from './0003-arena.ts';
import * as m0004 from './0004-reward-models.ts';
import * as m0005 from './0005-chats.ts';
import * as m0006 from './0006-parked-ratings.ts';
import * as m0007 from './0007-signals.ts';
import * as m0008 from './0008-prompt-ids.ts';
import * as m0009 from './0009-signal-kinds.ts';

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export const MIGRATIONS: readonly Migration[] = [m0001, m0002, m0003, m0004, m0005, m0006, m0007, m0008, m0009];
