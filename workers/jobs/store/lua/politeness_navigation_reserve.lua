--! prelude: backoff_prelude
-- KEYS[1] = the domain's last-navigation key, KEYS[2] = its back-off hash; ARGV[1] = this job's min
-- delay (seconds), ARGV[2] = back-off base spacing, ARGV[3] = its cap, ARGV[4] = its recovery
-- seconds per level. Reserves the earliest time at least ``delay`` after the latest reservation (or
-- now) for this navigation, where ``delay`` is the larger of the job's and the back-off's spacing,
-- and not before the back-off's ``until`` (a Retry-After); returns {seconds to wait for it, the
-- back-off level} (as strings).
local level, till = backoff_level(KEYS[2], tonumber(ARGV[4]))
local delay = math.max(tonumber(ARGV[1]), backoff_spacing(level, tonumber(ARGV[2]), tonumber(ARGV[3])))
local last = tonumber(redis.call('GET', KEYS[1]) or '0')
local at = math.max(now, last + delay, till)
redis.call('SET', KEYS[1], string.format('%.6f', at), 'PX', math.ceil((at - now + delay) * 1000) + 1000)
return {string.format('%.6f', at - now), tostring(level)}
