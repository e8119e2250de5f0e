// The storage contract (test/helpers/storage-contract.ts) against the JSON file store.
import t from 'tap';
import { JsonFileStore } from '../../src/storage/json-file-store.js';
import { tempDataDir } from '../helpers/build.js';
import { runContract } from '../helpers/storage-contract.js';
import { auditLines } from '../helpers/audit.js';

let dataDir = '';
runContract(t, 'json', {
  fresh: async () => JsonFileStore.open({ dataDir: (dataDir = await tempDataDir()) }),
  readAudit: () => auditLines(dataDir),
});
