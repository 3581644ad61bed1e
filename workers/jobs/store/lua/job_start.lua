--! prelude: job_prelude
-- ARGV[4] = worker id, ARGV[5] = max attempts, ARGV[6] = seconds without heartbeat after which a
-- running job counts as abandoned, ARGV[7] = ttl. Returns {outcome, attempts}; outcome is one of
-- run | missing | finished | busy | cancelled | lost.
local worker, max_attempts, stale_after, ttl = ARGV[4], tonumber(ARGV[5]), tonumber(ARGV[6]), ARGV[7]
if redis.call('EXISTS', jkey) == 0 then return {'missing', 0} end
local state = redis.call('HGET', jkey, 'state')
local attempts = tonumber(redis.call('HGET', jkey, 'attempts') or '0')
if is_final(state) then  -- a message for a finished job (cancelled while it waited): its release is spent
  local tenant = redis.call('HGET', jkey, 'tenant')
  if tenant and tenant ~= '' then redis.call('ZREM', prefix .. 'tenant:' .. tenant .. ':inflight', id) end
  return {'finished', attempts}
end
if state == 'running' then
  local beat = tonumber(redis.call('HGET', jkey, 'heartbeat_at') or '0')
  if tonumber(now) - beat < stale_after then return {'busy', attempts} end
end
if redis.call('HGET', jkey, 'cancel_requested') == '1' then
  redis.call('HSET', jkey, 'finished_at', now)
  set_state(state, 'cancelled', {})
  finalize(ttl)
  return {'cancelled', attempts}
end
if state == 'running' and tonumber(redis.call('HGET', jkey, 'runs') or '0') > 1 then
  -- a follow-up ran in the lost worker's browser session, which no other worker has
  local err = 'the worker holding the job\'s session was lost during a follow-up; '
    .. 'a session cannot move to another worker'
  redis.call('HSET', jkey, 'finished_at', now, 'category', 'worker_lost', 'error', err, 'session', 'closed',
    'session_note', 'its worker was lost')
  redis.call('HDEL', jkey, 'paused', 'paused_at', 'waiting_for_human', 'human_until')
  end_run('failed', 'worker_lost', err)
  set_state(state, 'failed', {category = 'worker_lost'})
  finalize(ttl)
  return {'lost', attempts}
end
if state == 'running' then
  set_state('running', 'retrying', {reason = 'the worker running attempt ' .. attempts .. ' was lost'})
  state = 'retrying'
end
if attempts >= max_attempts then
  redis.call('HSET', jkey, 'finished_at', now, 'category', 'worker_lost',
    'error', 'the job\'s worker was lost ' .. attempts .. ' time(s); giving up after ' .. max_attempts .. ' attempt(s)')
  set_state(state, 'failed', {category = 'worker_lost'})
  finalize(ttl)
  return {'lost', attempts}
end
attempts = redis.call('HINCRBY', jkey, 'attempts', 1)
redis.call('HSET', jkey, 'worker', worker, 'started_at', now, 'heartbeat_at', now, 'step', 0)
set_state(state, 'running', {attempt = attempts, worker = worker})
return {'run', attempts}
