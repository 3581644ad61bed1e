--! prelude: job_prelude
-- ARGV[4] = attempt (fencing token), ARGV[5] = event type, ARGV[6] = event JSON. Appends an event
-- the run reports (the agent's execution events) while it still owns the job; returns 1, else 0.
if redis.call('HGET', jkey, 'state') ~= 'running' or redis.call('HGET', jkey, 'attempts') ~= ARGV[4] then
  return 0
end
redis.call('XADD', ekey, 'MAXLEN', '~', EVENTS_MAX, '*', 'type', ARGV[5], 'data', ARGV[6])
return 1
