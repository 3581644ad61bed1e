--! prelude: job_prelude
-- ARGV[4] = attempt (fencing token), ARGV[5] = final state, ARGV[6] = category or '',
-- ARGV[7] = error or '', ARGV[8] = result JSON, ARGV[9] = ttl; for a job that keeps its session:
-- ARGV[10] = epoch the session is kept until, or 'closed' (ARGV[13] says why), ARGV[11] = run
-- number, ARGV[12] = run record JSON. Returns 1 if this call finished the job, 0 if the run no
-- longer owned it (finished, cancelled or taken over by a redelivery).
if redis.call('HGET', jkey, 'state') ~= 'running' or redis.call('HGET', jkey, 'attempts') ~= ARGV[4] then
  return 0
end
local final, category, err = ARGV[5], ARGV[6], ARGV[7]
local session, run = ARGV[10] or '', ARGV[11] or ''
redis.call('HSET', jkey, 'finished_at', now, 'result', ARGV[8])
redis.call('HDEL', jkey, 'paused', 'paused_at', 'waiting_for_human', 'human_until')
if run ~= '' then redis.call('HSET', jkey, 'runs', run, 'run:' .. run, ARGV[12]) end
if session == 'closed' then
  redis.call('HSET', jkey, 'session', 'closed', 'session_note', ARGV[13] or '')
  redis.call('HDEL', jkey, 'session_until')
elseif session ~= '' then
  redis.call('HSET', jkey, 'session', 'kept', 'session_until', session, 'heartbeat_at', now)
end
if category ~= '' then redis.call('HSET', jkey, 'category', category) end
if err ~= '' then redis.call('HSET', jkey, 'error', err) end
local data = {}
if category ~= '' then data['category'] = category end
set_state('running', final, data)
finalize(ARGV[9])
return 1
