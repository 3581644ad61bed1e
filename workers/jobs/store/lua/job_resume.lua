--! prelude: job_prelude
-- Also hands back a job waiting for a human (``request_human``).
-- Returns {outcome, state}: missing | finished | not_paused | resumed.
if redis.call('EXISTS', jkey) == 0 then return {'missing', ''} end
local state = redis.call('HGET', jkey, 'state')
if is_final(state) then return {'finished', state} end
if redis.call('HGET', jkey, 'paused') ~= '1' then return {'not_paused', state} end
local waiting = redis.call('HEXISTS', jkey, 'waiting_for_human') == 1
redis.call('HDEL', jkey, 'paused', 'paused_at', 'waiting_for_human', 'human_until')
redis.call('HSET', jkey, 'updated_at', now)
add_event('resume_requested', {at = tonumber(now), hand_back = waiting})
return {'resumed', state}
