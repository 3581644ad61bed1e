--! prelude: job_prelude
-- Returns {outcome, state}: missing | finished | not_paused | resumed.
if redis.call('EXISTS', jkey) == 0 then return {'missing', ''} end
local state = redis.call('HGET', jkey, 'state')
if is_final(state) then return {'finished', state} end
if redis.call('HGET', jkey, 'paused') ~= '1' then return {'not_paused', state} end
redis.call('HDEL', jkey, 'paused', 'paused_at')
redis.call('HSET', jkey, 'updated_at', now)
add_event('resume_requested', {at = tonumber(now)})
return {'resumed', state}
