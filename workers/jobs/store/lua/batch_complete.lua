--! prelude: job_prelude
-- ARGV[2] = batch id, ARGV[4] = ttl. Completes the batch if every job finished (see ``finalize``);
-- for a batch whose last jobs were duplicates, or one the reconciler repaired. Returns 1 if it did.
return complete_batch(id, ARGV[4])
