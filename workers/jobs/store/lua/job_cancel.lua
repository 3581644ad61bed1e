--! prelude: job_prelude
-- ARGV[4] = ttl. Returns {outcome, state}: missing | finished | cancelled (never started) |
-- requested (running: the executor sees the flag between actions) | session_closed (finished,
-- its kept session is closed now: a close marker wakes the worker holding it).
if redis.call('EXISTS', jkey) == 0 then return {'missing', ''} end
local state = redis.call('HGET', jkey, 'state')
if is_final(state) and redis.call('HGET', jkey, 'session') == 'kept' then
  redis.call('HSET', jkey, 'session', 'closed', 'session_note', 'closed by a cancel', 'updated_at', now)
  redis.call('HDEL', jkey, 'session_until')
  redis.call('RPUSH', jkey .. ':follow-ups', cjson.encode({close = true}))
  add_event('session', {session = 'closed', reason = 'closed by a cancel', at = tonumber(now)})
  return {'session_closed', state}
end
if is_final(state) then return {'finished', state} end
redis.call('HSET', jkey, 'cancel_requested', '1', 'updated_at', now)
if state == 'queued' then
  redis.call('HSET', jkey, 'finished_at', now)
  set_state(state, 'cancelled', {})
  finalize(ARGV[4])
  return {'cancelled', 'cancelled'}
end
add_event('cancel_requested', {at = tonumber(now)})
return {'requested', state}
