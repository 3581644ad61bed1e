--! prelude: job_prelude
-- ARGV[4] = attempt. The worker's idle session ends: 1 if it did, 0 when a follow-up is waiting in
-- the list (accepted just before the idle time ran out: the worker runs it) or the run lost the job.
if redis.call('HGET', jkey, 'attempts') ~= ARGV[4] then return 0 end
if redis.call('LLEN', jkey .. ':follow-ups') > 0 then return 0 end
if redis.call('HGET', jkey, 'session') == 'kept' and is_final(redis.call('HGET', jkey, 'state')) then
  redis.call('HSET', jkey, 'session', 'closed', 'session_note', ARGV[5])
  redis.call('HDEL', jkey, 'session_until')
  add_event('session', {session = 'closed', reason = ARGV[5], at = tonumber(now)})
end
return 1
