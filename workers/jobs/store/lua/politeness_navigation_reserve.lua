--! prelude: clock_prelude
-- KEYS[1] = the domain's last-navigation key; ARGV[1] = this job's min delay (seconds). Reserves
-- the earliest time at least ``delay`` after the latest reservation (or now) for this navigation;
-- returns how long to wait for it (seconds, as a string).
local delay = tonumber(ARGV[1])
local last = tonumber(redis.call('GET', KEYS[1]) or '0')
local at = math.max(now, last + delay)
redis.call('SET', KEYS[1], string.format('%.6f', at), 'PX', math.ceil((at - now + delay) * 1000) + 1000)
return string.format('%.6f', at - now)
