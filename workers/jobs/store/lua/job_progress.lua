--! prelude: job_prelude
-- ARGV[4] = attempt (fencing token), ARGV[5] = step number or '', ARGV[6] = step JSON or '',
-- ARGV[7] = first-command time or ''. Heartbeat, progress and step event in one round trip.
-- Returns 1 while the run still owns the job, 0 once it does not.
if redis.call('HGET', jkey, 'state') ~= 'running' or redis.call('HGET', jkey, 'attempts') ~= ARGV[4] then
  return 0
end
redis.call('HSET', jkey, 'heartbeat_at', now)
if ARGV[5] ~= '' then redis.call('HSET', jkey, 'step', ARGV[5], 'updated_at', now) end
if ARGV[6] ~= '' then
  redis.call('XADD', ekey, 'MAXLEN', '~', EVENTS_MAX, '*', 'type', 'step', 'data', ARGV[6])
end
if ARGV[7] ~= '' then redis.call('HSETNX', jkey, 'first_command_at', ARGV[7]) end
return 1
