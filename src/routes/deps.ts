// What the route plugins are handed: the core services and the validated configuration.
import type { CapabilityProjection } from '../capabilities/capability-projection.js';
import type { Config } from '../config.js';
import type { Credentials } from '../credentials/credentials-file.js';
import type { MachineRegistry } from '../machines/machine-registry.js';
import type { ProfileRegistry } from '../profiles/profile-registry.js';
import type { CatalogueCache } from '../registry/catalogue-cache.js';
import type { CataloguePages } from '../registry/catalogue-pages.js';
import type { ResourceRegistry } from '../registry/resource-registry.js';
import type { AuditTrail } from '../audit/audit-trail.js';
import type { ExpensiveWork } from '../http/expensive-work.js';
import type { LargeBodyGate } from '../http/large-bodies.js';
import type { SecretAllowlist } from '../secrets/secret-allowlist.js';
import type { SecretScanner } from '../secrets/secret-scanner.js';
import type { ThreadReads } from '../registry/thread-reads.js';

export interface RouteDeps {
  config: Config;
  credentials: Credentials;
  registry: ResourceRegistry;
  machines: MachineRegistry;
  profiles: ProfileRegistry;
  catalogue: CatalogueCache;
  /** Pages and search of the catalogue views (per request, never cached). */
  pages: CataloguePages;
  capabilities: CapabilityProjection;
  scanner: SecretScanner;
  /** The owner's secret allowlist (the skill import hands its entries to the machine). */
  secretAllowlist: SecretAllowlist;
  audit: AuditTrail;
  /** Per-credential bound on expensive requests (SVG renders, large reconciles). */
  expensive: ExpensiveWork;
  /** Large publishes (a machine's whole set) read and handled one at a time. */
  largeBodies: LargeBodyGate;
  now: () => Date;
  /** What a launched thread reads (its pins); the RFS and MCP reads choose through it. */
  threads: ThreadReads;
}
