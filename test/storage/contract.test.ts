// The storage contract (test/helpers/storage-contract.ts) against the JSON file store.
import t from 'tap';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { JsonFileStore } from '../../src/storage/json-file-store.js';
import { tempDataDir } from '../helpers/build.js';
import { runContract } from '../helpers/storage-contract.js';

let dataDir = '';
runContract(t, 'json', {
  fresh: async () => JsonFileStore.open({ dataDir: (dataDir = await tempDataDir()) }),
  async readAudit() {
    const text = await readFile(path.join(dataDir, 'audit.jsonl'), 'utf8');
    return text
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l));
  },
});
