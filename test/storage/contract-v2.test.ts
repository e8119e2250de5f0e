// Record v2 in the storage contract (test/helpers/storage-contract-v2.ts) against the JSON file store.
import t from 'tap';
import { JsonFileStore } from '../../src/storage/json-file-store.js';
import { tempDataDir } from '../helpers/build.js';
import { runV2Contract } from '../helpers/storage-contract-v2.js';

let dataDir = '';
runV2Contract(t, 'json', {
  fresh: async () => JsonFileStore.open({ dataDir: (dataDir = await tempDataDir()) }),
  reopen: async () => JsonFileStore.open({ dataDir }),
});
