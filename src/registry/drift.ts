// Drift of pinned launches (docs/profiles-and-launching.md, "Drift").
/** Most `workload.drifted` events one write of one record appends one by one; the rest are summarized in one. */
export const DRIFT_EVENTS_PER_WRITE = 50;
