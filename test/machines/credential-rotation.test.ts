// Machine-token rotation and per-canvas revocation on the JSON store (real socket, real files, restart).
import t from 'tap';
import { build } from '../helpers/build.js';
import { credentialOperationSuite } from '../helpers/credential-ops.js';

credentialOperationSuite(t, async (t) => {
  const h = await build(t);
  return {
    h,
    restart: async () => {
      await h.app.close();
      return build(t, { dataDir: h.dataDir });
    },
  };
});
