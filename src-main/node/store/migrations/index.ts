// The ordered list of frozen migrations. Append only.
import * as m0001 from './0001-init.ts';

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export const MIGRATIONS: readonly Migration[] = [m0001];
