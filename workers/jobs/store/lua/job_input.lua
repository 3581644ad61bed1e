--! prelude: job_prelude
-- ARGV[4] = the input's name, ARGV[5] = its value, sealed (BROWSERD_SECRETS_KEY); ARGV[6] = most
-- inputs a job keeps. A value pushed to a running job (a code sent by SMS or e-mail): kept sealed in
-- the record's ``inputs`` (name -> sealed value; the same name again replaces it), the event names it
-- (never the value); a job waiting for a human is handed back by it.
-- Returns {outcome, state}: missing | finished | not_running | full | accepted | handed_back.
if redis.call('EXISTS', jkey) == 0 then return {'missing', ''} end
local state = redis.call('HGET', jkey, 'state')
if is_final(state) then return {'finished', state} end
if state ~= 'running' then return {'not_running', state} end
local inputs = cjson.decode(redis.call('HGET', jkey, 'inputs') or '{}')
local count = 0
for _ in pairs(inputs) do count = count + 1 end
if inputs[ARGV[4]] == nil and count >= tonumber(ARGV[6]) then return {'full', state} end
inputs[ARGV[4]] = ARGV[5]
redis.call('HSET', jkey, 'inputs', cjson.encode(inputs), 'updated_at', now)
add_event('input', {at = tonumber(now), name = ARGV[4]})
if redis.call('HEXISTS', jkey, 'waiting_for_human') == 1 then
  redis.call('HDEL', jkey, 'paused', 'paused_at', 'waiting_for_human', 'human_until')
  add_event('resume_requested', {at = tonumber(now), hand_back = true, by = 'input'})
  return {'handed_back', state}
end
return {'accepted', state}
