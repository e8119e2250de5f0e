// Machine-token rotation and per-canvas revocation on the PostgreSQL store (real server, restart).
import t from 'tap';
import { build } from '../helpers/build.js';
import { credentialOperationSuite } from '../helpers/credential-ops.js';
import { freshDatabase, postgresOrSkip } from '../helpers/postgres.js';

const base = postgresOrSkip(t);
if (base) {
  credentialOperationSuite(t, async (t) => {
    const env = { DATABASE_URL: await freshDatabase(t, base) };
    const h = await build(t, { env });
    return {
      h,
      restart: async () => {
        await h.app.close();
        return build(t, { env });
      },
    };
  });
}
