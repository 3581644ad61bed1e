--! prelude: clock_prelude
-- KEYS = slots zsets, ARGV[1] = lease seconds, ARGV[2..] = the job id holding a slot in each key.
-- Extends the slots still held (a lapsed one is not taken back: its job goes on, past the count).
local lease = tonumber(ARGV[1])
for i, key in ipairs(KEYS) do
  if redis.call('ZADD', key, 'XX', 'CH', now + lease, ARGV[i + 1]) == 1 then
    redis.call('EXPIRE', key, math.ceil(lease) + 1)
  end
end
return #KEYS
