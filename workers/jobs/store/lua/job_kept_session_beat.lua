--! prelude: job_prelude
-- ARGV[4] = attempt. Heartbeat of an idle kept session (its job is final, so PROGRESS refuses it).
if redis.call('HGET', jkey, 'attempts') ~= ARGV[4] or redis.call('HGET', jkey, 'session') ~= 'kept' then
  return 0
end
redis.call('HSET', jkey, 'heartbeat_at', now)
return 1
