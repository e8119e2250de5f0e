// The PostgreSQL schema as numbered SQL migrations, embedded in the code so `dist` needs no copied files.
// They run at every start (and by `npm run migrate` with DATABASE_URL) under a session advisory lock, so
// replicas starting together migrate once; a database at a newer version than this code knows stops the
// start. A migration is applied in one transaction together with its row in schema_migrations.
import type { ClientBase } from 'pg';

export interface SqlMigration {
  version: number;
  name: string;
  sql: string;
}

/** Every change of a table is announced on this channel (payload: the table name) by a trigger. */
export const CHANGES_CHANNEL = 'arr_changes';

export const MIGRATIONS: readonly SqlMigration[] = [
  {
    version: 1,
    name: 'initial',
    sql: `
CREATE TABLE resources (
  id text PRIMARY KEY,
  provider text NOT NULL,
  schema_version integer NOT NULL,
  name text NOT NULL,
  description text NOT NULL,
  instructions text NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX resources_provider_idx ON resources (provider);

CREATE TABLE machines (
  machine_id text PRIMARY KEY,
  token_digest text NOT NULL CHECK (token_digest ~ '^[0-9a-f]{64}$'),
  enrolled_at text NOT NULL,
  revoked_at text
);
CREATE UNIQUE INDEX machines_active_token_digest_idx ON machines (token_digest) WHERE revoked_at IS NULL;

-- record: the stored profile exactly as written (json keeps its bytes); alias_key: aliasKey(alias)
-- computed by the code (so the case rule is JavaScript's, not the database locale's); revision: the
-- content digest (the ETag).
CREATE TABLE profiles (
  id text PRIMARY KEY,
  alias_key text NOT NULL,
  revision text NOT NULL,
  record json NOT NULL
);
CREATE UNIQUE INDEX profiles_alias_key_idx ON profiles (alias_key);

-- The Agent Team registry document around the profiles: one row per other state key, and the
-- document's other top-level keys under '$document'. Carried unchanged.
CREATE TABLE registry_state (
  key text PRIMARY KEY,
  value jsonb NOT NULL
);

CREATE TABLE workloads (
  canvas_id text NOT NULL,
  thread_id text NOT NULL,
  record json NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (canvas_id, thread_id)
);

-- source: 'service', or 'import' for entries copied from a JSON DATA_DIR's audit.jsonl.
CREATE TABLE audit_log (
  seq bigserial PRIMARY KEY,
  at text NOT NULL,
  actor text NOT NULL,
  action text NOT NULL,
  object_id text NOT NULL,
  outcome text NOT NULL,
  source text NOT NULL DEFAULT 'service'
);

-- Every run of \`npm run import\` (a database that holds data and no import is refused).
CREATE TABLE json_imports (
  seq bigserial PRIMARY KEY,
  data_dir text NOT NULL,
  imported_at timestamptz NOT NULL DEFAULT now(),
  counts jsonb NOT NULL
);

CREATE FUNCTION arr_notify_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('${CHANGES_CHANNEL}', TG_TABLE_NAME);
  RETURN NULL;
END
$$;
-- Row triggers fire only when a row really changed (a refused conditional upsert announces nothing);
-- notifications with the same payload in one transaction are folded into one by PostgreSQL.
CREATE TRIGGER resources_changed AFTER INSERT OR UPDATE OR DELETE ON resources
  FOR EACH ROW EXECUTE FUNCTION arr_notify_change();
CREATE TRIGGER resources_truncated AFTER TRUNCATE ON resources
  FOR EACH STATEMENT EXECUTE FUNCTION arr_notify_change();
CREATE TRIGGER machines_changed AFTER INSERT OR UPDATE OR DELETE ON machines
  FOR EACH ROW EXECUTE FUNCTION arr_notify_change();
CREATE TRIGGER profiles_changed AFTER INSERT OR UPDATE OR DELETE ON profiles
  FOR EACH ROW EXECUTE FUNCTION arr_notify_change();
`,
  },
  {
    version: 2,
    name: 'resource-record-v2',
    // Record v2 beside v1: a row holds either v1's description and instructions or v2's source_content
    // (schema_version says which); display_name and user_content are the owner's, for either version.
    sql: `
ALTER TABLE resources ALTER COLUMN description DROP NOT NULL;
ALTER TABLE resources ALTER COLUMN instructions DROP NOT NULL;
ALTER TABLE resources ADD COLUMN source_content text;
ALTER TABLE resources ADD COLUMN display_name text;
ALTER TABLE resources ADD COLUMN user_content text NOT NULL DEFAULT '';
ALTER TABLE resources ADD CONSTRAINT resources_version_fields CHECK (
  (schema_version = 1 AND description IS NOT NULL AND instructions IS NOT NULL AND source_content IS NULL)
  OR (schema_version = 2 AND description IS NULL AND instructions IS NULL AND source_content IS NOT NULL)
);
`,
  },
  {
    version: 3,
    name: 'canvas token revocations',
    sql: `
-- One row per canvas whose tokens were revoked: tokens minted at or before revoked_before (ISO time,
-- written by the code in one format so text order is time order) are refused.
CREATE TABLE canvas_token_revocations (
  canvas_id text PRIMARY KEY,
  revoked_before text NOT NULL
);
`,
  },
  {
    version: 4,
    name: 'audit-details',
    sql: `
-- Structured facts of an audit entry (an invocation's machine, profile, canvas, thread, resource, duration,
-- bytes), as the JSON store keeps them in audit.jsonl; never a secret, never input or output.
ALTER TABLE audit_log ADD COLUMN details jsonb;
`,
  },
  {
    version: 5,
    name: 'change-events',
    // The change log (docs/events.md). Row triggers on the record tables add one event per row really changed,
    // in the writing transaction, without a cursor; a deferred constraint trigger gives the transaction's
    // events their cursors at COMMIT, under a transaction-level advisory lock held until the commit is
    // visible, so cursors are in commit order and a reader never skips one that commits later. The same
    // trigger notifies the replicas (payload `events`).
    sql: `
CREATE SEQUENCE events_seq;
CREATE TABLE events (
  local_id bigserial PRIMARY KEY,
  seq bigint UNIQUE,
  at text NOT NULL,
  type text NOT NULL,
  kind text NOT NULL,
  object_id text NOT NULL,
  provider text
);
-- The highest cursor dropped by retention (one row): a cursor below it is expired.
CREATE TABLE events_floor (
  one boolean PRIMARY KEY DEFAULT true CHECK (one),
  floor bigint NOT NULL
);
INSERT INTO events_floor (floor) VALUES (0);

CREATE FUNCTION arr_event(type text, kind text, object_id text, provider text) RETURNS void LANGUAGE sql AS $f$
  INSERT INTO events (at, type, kind, object_id, provider)
  VALUES (to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), type, kind, object_id, provider);
$f$;

CREATE FUNCTION arr_resource_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    PERFORM arr_event('resource.created', 'resource', NEW.id, NEW.provider);
  ELSIF TG_OP = 'DELETE' THEN
    PERFORM arr_event('resource.withdrawn', 'resource', OLD.id, OLD.provider);
  ELSIF (OLD.provider, OLD.schema_version, OLD.name, OLD.description, OLD.instructions, OLD.source_content)
        IS DISTINCT FROM (NEW.provider, NEW.schema_version, NEW.name, NEW.description, NEW.instructions, NEW.source_content) THEN
    PERFORM arr_event('resource.replaced', 'resource', NEW.id, NEW.provider);
  ELSIF (OLD.display_name, OLD.user_content) IS DISTINCT FROM (NEW.display_name, NEW.user_content) THEN
    PERFORM arr_event('resource.customized', 'resource', NEW.id, NEW.provider);
  END IF;
  RETURN NULL;
END
$$;
CREATE TRIGGER resources_event AFTER INSERT OR UPDATE OR DELETE ON resources
  FOR EACH ROW EXECUTE FUNCTION arr_resource_event();

CREATE FUNCTION arr_machine_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' OR (OLD.revoked_at IS NOT NULL AND NEW.revoked_at IS NULL) THEN
    PERFORM arr_event('machine.enrolled', 'machine', NEW.machine_id, NULL);
  ELSIF OLD.revoked_at IS NULL AND NEW.revoked_at IS NOT NULL THEN
    PERFORM arr_event('machine.revoked', 'machine', NEW.machine_id, NULL);
  ELSIF OLD.token_digest IS DISTINCT FROM NEW.token_digest THEN
    PERFORM arr_event('machine.rotated', 'machine', NEW.machine_id, NULL);
  END IF;
  RETURN NULL;
END
$$;
CREATE TRIGGER machines_event AFTER INSERT OR UPDATE ON machines
  FOR EACH ROW EXECUTE FUNCTION arr_machine_event();

CREATE FUNCTION arr_profile_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    PERFORM arr_event('profile.created', 'profile', NEW.id, NULL);
  ELSIF TG_OP = 'DELETE' THEN
    PERFORM arr_event('profile.deleted', 'profile', OLD.id, NULL);
  ELSIF OLD.revision IS DISTINCT FROM NEW.revision THEN
    PERFORM arr_event('profile.updated', 'profile', NEW.id, NULL);
  END IF;
  RETURN NULL;
END
$$;
CREATE TRIGGER profiles_event AFTER INSERT OR UPDATE OR DELETE ON profiles
  FOR EACH ROW EXECUTE FUNCTION arr_profile_event();

CREATE FUNCTION arr_workload_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM arr_event('workload.launched', 'workload', NEW.canvas_id || '/' || NEW.thread_id, NULL);
  RETURN NULL;
END
$$;
CREATE TRIGGER workloads_event AFTER INSERT ON workloads
  FOR EACH ROW EXECUTE FUNCTION arr_workload_event();

CREATE FUNCTION arr_number_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext('arr_events_commit_order'));
  UPDATE events SET seq = nextval('events_seq') WHERE local_id = NEW.local_id;
  PERFORM pg_notify('${CHANGES_CHANNEL}', 'events');
  RETURN NULL;
END
$$;
CREATE CONSTRAINT TRIGGER events_number AFTER INSERT ON events
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION arr_number_event();
`,
  },
  {
    version: 6,
    name: 'imported-skills',
    // The owner-side import mark of skill management (docs/decisions/imported-skill-mark.md): set by the
    // owner's import, never written by a provider's upsert (it is not among the provider's columns), gone
    // with the row. A change of it is the owner's, announced as resource.customized.
    sql: `
ALTER TABLE resources ADD COLUMN imported boolean NOT NULL DEFAULT false;
CREATE OR REPLACE FUNCTION arr_resource_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    PERFORM arr_event('resource.created', 'resource', NEW.id, NEW.provider);
  ELSIF TG_OP = 'DELETE' THEN
    PERFORM arr_event('resource.withdrawn', 'resource', OLD.id, OLD.provider);
  ELSIF (OLD.provider, OLD.schema_version, OLD.name, OLD.description, OLD.instructions, OLD.source_content)
        IS DISTINCT FROM (NEW.provider, NEW.schema_version, NEW.name, NEW.description, NEW.instructions, NEW.source_content) THEN
    PERFORM arr_event('resource.replaced', 'resource', NEW.id, NEW.provider);
  ELSIF (OLD.display_name, OLD.user_content, OLD.imported) IS DISTINCT FROM (NEW.display_name, NEW.user_content, NEW.imported) THEN
    PERFORM arr_event('resource.customized', 'resource', NEW.id, NEW.provider);
  END IF;
  RETURN NULL;
END
$$;
`,
  },
  {
    version: 7,
    name: 'catalogue-search',
    // Full-text search of the catalogue (docs/decisions/search-and-pages.md). The provider's texts and the
    // owner's are separate vectors (a provider's upsert rewrites only its own; the owner's customization only
    // the owner's), written by the application from the words of src/registry/search.ts `searchWords`
    // (weights: A the ID, name and displayName; B the description; C the body); \`search\` is their union,
    // GIN-indexed. A row written before this migration has no provider vector until the store fills it at
    // start. Pages walk (provider, id) in byte order on their own index.
    sql: `
ALTER TABLE resources ADD COLUMN search_source tsvector;
ALTER TABLE resources ADD COLUMN search_display tsvector NOT NULL DEFAULT ''::tsvector;
ALTER TABLE resources ADD COLUMN search_notes tsvector NOT NULL DEFAULT ''::tsvector;
ALTER TABLE resources ADD COLUMN search tsvector
  GENERATED ALWAYS AS (COALESCE(search_source, ''::tsvector) || search_display || search_notes) STORED;
-- No pending list: every search, and every probe for a fuzzy word's variants, would read it whole.
CREATE INDEX resources_search_idx ON resources USING gin (search) WITH (fastupdate = off);
CREATE INDEX resources_page_idx ON resources (provider COLLATE "C", id COLLATE "C");
`,
  },
  {
    version: 8,
    name: 'record-digests-and-revisions',
    // Record digests and revisions (docs/decisions/record-digest.md). `arr_record_digest` is the canonical
    // form of src/registry/record-digest.ts in SQL (the storage contract checks the two agree); a BEFORE
    // trigger stores it with every write, whichever statement makes it. An AFTER trigger keeps each new
    // content as a revision and applies the retention in the same transaction; the row lock of the record
    // orders the writes of one ID across replicas. Holds pin revisions for workloads and profiles.
    sql: `
CREATE FUNCTION arr_digest_field(name text, value text) RETURNS text IMMUTABLE LANGUAGE sql AS $f$
  SELECT CASE WHEN value IS NULL THEN '' ELSE name || ' ' || octet_length(value) || E'\n' || value || E'\n' END
$f$;
CREATE FUNCTION arr_record_digest(schema_version integer, id text, provider text, name text, display_name text,
    description text, instructions text, source_content text, user_content text) RETURNS text IMMUTABLE LANGUAGE sql AS $f$
  SELECT 'sha256:' || encode(sha256(convert_to('arr-record-digest/1' || E'\n'
    || arr_digest_field('schemaVersion', schema_version::text) || arr_digest_field('id', id)
    || arr_digest_field('provider', provider) || arr_digest_field('name', name)
    || arr_digest_field('displayName', display_name)
    || arr_digest_field('description', CASE WHEN schema_version = 1 THEN description END)
    || arr_digest_field('instructions', CASE WHEN schema_version = 1 THEN instructions END)
    || arr_digest_field('sourceContent', CASE WHEN schema_version = 2 THEN source_content END)
    || arr_digest_field('userContent', NULLIF(user_content, '')), 'UTF8')), 'hex')
$f$;
ALTER TABLE resources ADD COLUMN digest text;
UPDATE resources SET digest = arr_record_digest(schema_version, id, provider, name, display_name, description,
  instructions, source_content, user_content);
ALTER TABLE resources ALTER COLUMN digest SET NOT NULL;
CREATE FUNCTION arr_resource_digest() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.digest := arr_record_digest(NEW.schema_version, NEW.id, NEW.provider, NEW.name, NEW.display_name,
    NEW.description, NEW.instructions, NEW.source_content, NEW.user_content);
  RETURN NEW;
END
$$;
CREATE TRIGGER resources_digest BEFORE INSERT OR UPDATE ON resources FOR EACH ROW EXECUTE FUNCTION arr_resource_digest();

CREATE TABLE resource_revisions (
  id text NOT NULL,
  digest text NOT NULL,
  provider text NOT NULL,
  schema_version integer NOT NULL,
  name text NOT NULL,
  description text,
  instructions text,
  source_content text,
  display_name text,
  user_content text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  seq bigserial NOT NULL,
  PRIMARY KEY (id, digest)
);
CREATE INDEX resource_revisions_order_idx ON resource_revisions (id, seq DESC);
INSERT INTO resource_revisions (id, digest, provider, schema_version, name, description, instructions, source_content,
    display_name, user_content, created_at)
  SELECT id, digest, provider, schema_version, name, description, instructions, source_content, display_name, user_content,
    updated_at FROM resources ORDER BY id;

CREATE TABLE revision_holds (
  resource_id text NOT NULL,
  holder text NOT NULL,
  digest text NOT NULL,
  PRIMARY KEY (resource_id, holder)
);
CREATE INDEX revision_holds_digest_idx ON revision_holds (resource_id, digest);

CREATE FUNCTION arr_keep_revision() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'UPDATE' AND OLD.digest = NEW.digest THEN
    RETURN NULL;
  END IF;
  INSERT INTO resource_revisions (id, digest, provider, schema_version, name, description, instructions, source_content,
      display_name, user_content)
    VALUES (NEW.id, NEW.digest, NEW.provider, NEW.schema_version, NEW.name, NEW.description, NEW.instructions,
      NEW.source_content, NEW.display_name, NEW.user_content)
    ON CONFLICT (id, digest) DO UPDATE SET created_at = now(), seq = nextval('resource_revisions_seq_seq');
  DELETE FROM resource_revisions v
    WHERE v.id = NEW.id AND v.digest <> NEW.digest
      AND v.seq < (SELECT min(k.seq) FROM (SELECT seq FROM resource_revisions WHERE id = NEW.id ORDER BY seq DESC LIMIT 20) k)
      AND NOT EXISTS (SELECT 1 FROM revision_holds h WHERE h.resource_id = v.id AND h.digest = v.digest);
  RETURN NULL;
END
$$;
CREATE TRIGGER resources_revision AFTER INSERT OR UPDATE ON resources FOR EACH ROW EXECUTE FUNCTION arr_keep_revision();
`,
  },
  {
    version: 9,
    name: 'workload-drift',
    // Drift of pinned launches (src/registry/drift.ts `planDrift` is the same rule): a write that moves a
    // record away from a workload's pin appends one `workload.drifted` event per affected workload, in the
    // writing transaction, found through the holds of that ID (never a scan of the workloads). At most 10
    // (DRIFT_EVENTS_PER_WRITE) one by one, in holder order; the rest in one summary about the record.
    // `drift_notices` keeps what each workload was last told, so it is told once per digest. The trigger's
    // name sorts after `resources_event`: the record's own event comes first.
    sql: `
ALTER TABLE events ADD COLUMN detail jsonb;
CREATE TABLE drift_notices (
  resource_id text NOT NULL,
  holder text NOT NULL,
  told text NOT NULL,
  PRIMARY KEY (resource_id, holder)
);
CREATE FUNCTION arr_workload_drift() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  rid text;
  prov text;
  cur text;
  now_told text;
  affected integer;
  at text := to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"');
BEGIN
  IF TG_OP = 'DELETE' THEN
    rid := OLD.id; prov := OLD.provider; cur := NULL;
  ELSE
    IF TG_OP = 'UPDATE' AND OLD.digest = NEW.digest THEN
      RETURN NULL;
    END IF;
    rid := NEW.id; prov := NEW.provider; cur := NEW.digest;
  END IF;
  now_told := COALESCE(cur, 'withdrawn');
  SELECT count(*) INTO affected FROM revision_holds h
    LEFT JOIN drift_notices n ON n.resource_id = h.resource_id AND n.holder = h.holder
    WHERE h.resource_id = rid AND h.holder LIKE 'workload:%' AND h.digest IS DISTINCT FROM cur
      AND n.told IS DISTINCT FROM now_told;
  IF affected = 0 THEN
    RETURN NULL;
  END IF;
  WITH told AS (
    SELECT h.holder, h.digest FROM revision_holds h
      LEFT JOIN drift_notices n ON n.resource_id = h.resource_id AND n.holder = h.holder
      WHERE h.resource_id = rid AND h.holder LIKE 'workload:%' AND h.digest IS DISTINCT FROM cur
        AND n.told IS DISTINCT FROM now_told
      ORDER BY h.holder COLLATE "C" LIMIT 10
  ), noted AS (
    INSERT INTO drift_notices (resource_id, holder, told) SELECT rid, holder, now_told FROM told
      ON CONFLICT (resource_id, holder) DO UPDATE SET told = EXCLUDED.told
  )
  INSERT INTO events (at, type, kind, object_id, provider, detail)
    SELECT at, 'workload.drifted', 'workload', substr(holder, 10), NULL,
        jsonb_strip_nulls(jsonb_build_object('resourceId', rid, 'provider', prov, 'pinned', digest, 'current', cur))
      FROM told ORDER BY holder COLLATE "C";
  IF affected > 10 THEN
    INSERT INTO events (at, type, kind, object_id, provider, detail)
      VALUES (at, 'workload.drifted', 'resource', rid, prov,
        jsonb_strip_nulls(jsonb_build_object('resourceId', rid, 'provider', prov, 'current', cur, 'more', affected - 10)));
  END IF;
  RETURN NULL;
END
$$;
CREATE TRIGGER resources_event_drift AFTER INSERT OR UPDATE OR DELETE ON resources
  FOR EACH ROW EXECUTE FUNCTION arr_workload_drift();
`,
  },
  {
    version: 10,
    name: 'revision-usage',
    // A machine's usage counts its pinned history (src/registry/record-quota.ts heldHistoryBytes): its
    // revisions are found by provider.
    sql: `CREATE INDEX resource_revisions_provider_idx ON resource_revisions (provider);
`,
  },
  {
    version: 11,
    name: 'skill-source-revision',
    // An imported skill's folder revision is part of its record and of its digest (the canonical form's
    // `sourceRevision` field, src/registry/record-digest.ts): a row without one keeps the digest it had. It is
    // the provider's: a change of it alone is announced as resource.replaced.
    sql: `
ALTER TABLE resources ADD COLUMN source_revision text;
CREATE OR REPLACE FUNCTION arr_resource_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    PERFORM arr_event('resource.created', 'resource', NEW.id, NEW.provider);
  ELSIF TG_OP = 'DELETE' THEN
    PERFORM arr_event('resource.withdrawn', 'resource', OLD.id, OLD.provider);
  ELSIF (OLD.provider, OLD.schema_version, OLD.name, OLD.description, OLD.instructions, OLD.source_content, OLD.source_revision)
        IS DISTINCT FROM (NEW.provider, NEW.schema_version, NEW.name, NEW.description, NEW.instructions, NEW.source_content,
          NEW.source_revision) THEN
    PERFORM arr_event('resource.replaced', 'resource', NEW.id, NEW.provider);
  ELSIF (OLD.display_name, OLD.user_content, OLD.imported) IS DISTINCT FROM (NEW.display_name, NEW.user_content, NEW.imported) THEN
    PERFORM arr_event('resource.customized', 'resource', NEW.id, NEW.provider);
  END IF;
  RETURN NULL;
END
$$;
ALTER TABLE resource_revisions ADD COLUMN source_revision text;
CREATE FUNCTION arr_record_digest(schema_version integer, id text, provider text, name text, display_name text,
    description text, instructions text, source_content text, user_content text, source_revision text) RETURNS text IMMUTABLE LANGUAGE sql AS $f$
  SELECT 'sha256:' || encode(sha256(convert_to('arr-record-digest/1' || E'\n'
    || arr_digest_field('schemaVersion', schema_version::text) || arr_digest_field('id', id)
    || arr_digest_field('provider', provider) || arr_digest_field('name', name)
    || arr_digest_field('displayName', display_name)
    || arr_digest_field('description', CASE WHEN schema_version = 1 THEN description END)
    || arr_digest_field('instructions', CASE WHEN schema_version = 1 THEN instructions END)
    || arr_digest_field('sourceContent', CASE WHEN schema_version = 2 THEN source_content END)
    || arr_digest_field('userContent', NULLIF(user_content, ''))
    || arr_digest_field('sourceRevision', CASE WHEN schema_version = 2 THEN source_revision END), 'UTF8')), 'hex')
$f$;
CREATE OR REPLACE FUNCTION arr_resource_digest() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.digest := arr_record_digest(NEW.schema_version, NEW.id, NEW.provider, NEW.name, NEW.display_name,
    NEW.description, NEW.instructions, NEW.source_content, NEW.user_content, NEW.source_revision);
  RETURN NEW;
END
$$;
DROP FUNCTION arr_record_digest(integer, text, text, text, text, text, text, text, text);
CREATE OR REPLACE FUNCTION arr_keep_revision() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'UPDATE' AND OLD.digest = NEW.digest THEN
    RETURN NULL;
  END IF;
  INSERT INTO resource_revisions (id, digest, provider, schema_version, name, description, instructions, source_content,
      display_name, user_content, source_revision)
    VALUES (NEW.id, NEW.digest, NEW.provider, NEW.schema_version, NEW.name, NEW.description, NEW.instructions,
      NEW.source_content, NEW.display_name, NEW.user_content, NEW.source_revision)
    ON CONFLICT (id, digest) DO UPDATE SET created_at = now(), seq = nextval('resource_revisions_seq_seq');
  DELETE FROM resource_revisions v
    WHERE v.id = NEW.id AND v.digest <> NEW.digest
      AND v.seq < (SELECT min(k.seq) FROM (SELECT seq FROM resource_revisions WHERE id = NEW.id ORDER BY seq DESC LIMIT 20) k)
      AND NOT EXISTS (SELECT 1 FROM revision_holds h WHERE h.resource_id = v.id AND h.digest = v.digest);
  RETURN NULL;
END
$$;
`,
  },
  {
    version: 12,
    name: 'catalogue-search-field-words',
    // The words of each record's key fields (ID, name, displayName: weight A of `search`) and of its summary
    // (B), each GIN-indexed on its own, so a search learns cheaply that no record holds a term in a field: the
    // bound on a match's tier that lets it read the scope in (provider, id) order and stop at a page
    // (docs/decisions/search-and-pages.md).
    sql: `
CREATE INDEX resources_search_key_idx ON resources USING gin (ts_filter(search, '{a}')) WITH (fastupdate = off);
CREATE INDEX resources_search_summary_idx ON resources USING gin (ts_filter(search, '{b}')) WITH (fastupdate = off);
`,
  },
];

export const SCHEMA_VERSION = Math.max(...MIGRATIONS.map((m) => m.version));

/** Arbitrary constant key of the session advisory lock migrations run under. */
export const MIGRATION_LOCK_KEY = 7_420_331_901;

export class DatabaseSchemaError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DatabaseSchemaError';
  }
}

export interface MigrationReport {
  from: number;
  to: number;
  applied: string[];
}

/**
 * Brings the database to SCHEMA_VERSION while holding the migration lock (a second caller waits, then
 * finds nothing to do). Refuses a database whose version is newer than the code's.
 */
export async function migrate(client: Pick<ClientBase, 'query'>, options: { dryRun?: boolean } = {}): Promise<MigrationReport> {
  await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
  try {
    await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version integer PRIMARY KEY,
      name text NOT NULL,
      applied_at timestamptz NOT NULL DEFAULT now()
    )`);
    const { rows } = await client.query<{ version: number | null }>('SELECT max(version) AS version FROM schema_migrations');
    const from = rows[0]?.version ?? 0;
    if (from > SCHEMA_VERSION) {
      throw new DatabaseSchemaError(
        `The database schema is at version ${from}, newer than this version of agent-resource-registry knows (${SCHEMA_VERSION}); run a newer release, or restore a backup taken before the upgrade.`,
      );
    }
    const applied: string[] = [];
    for (const m of MIGRATIONS) {
      if (m.version <= from) continue;
      applied.push(`${String(m.version).padStart(3, '0')}-${m.name}`);
      if (options.dryRun) continue;
      await client.query('BEGIN');
      try {
        await client.query(m.sql);
        await client.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [m.version, m.name]);
        await client.query('COMMIT');
      } catch (err) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw err;
      }
    }
    return { from, to: options.dryRun ? from : SCHEMA_VERSION, applied };
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]).catch(() => undefined);
  }
}
