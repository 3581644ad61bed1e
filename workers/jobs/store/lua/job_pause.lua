--! prelude: job_prelude
-- Returns {outcome, state}: missing | finished | not_running (queued or retrying) | already | paused.
if redis.call('EXISTS', jkey) == 0 then return {'missing', ''} end
local state = redis.call('HGET', jkey, 'state')
if is_final(state) then return {'finished', state} end
if state ~= 'running' then return {'not_running', state} end
if redis.call('HGET', jkey, 'paused') == '1' then return {'already', state} end
redis.call('HSET', jkey, 'paused', '1', 'paused_at', now, 'updated_at', now)
add_event('pause_requested', {at = tonumber(now)})
return {'paused', state}
