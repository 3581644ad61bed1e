--! prelude: backoff_prelude
-- KEYS[1] = the domain's back-off hash; ARGV[1] = Retry-After seconds (-1: none), ARGV[2] = base
-- spacing, ARGV[3] = cap (seconds; caps the spacing and the Retry-After), ARGV[4] = recovery
-- seconds per level. A 429/503/blocked_by_site on the domain: one level more (from what is left of
-- the last one after its recovery), no navigation before now + max(spacing, Retry-After). Returns
-- {level, seconds the domain is closed for} (as strings).
local retry_after = tonumber(ARGV[1])
local base, cap, recovery = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local level, till = backoff_level(KEYS[1], recovery)
level = math.min(level + 1, 30)
local pause = backoff_spacing(level, base, cap)
if retry_after >= 0 then
  pause = math.max(pause, math.min(retry_after, cap))
end
till = math.max(till, now + pause)
redis.call('HSET', KEYS[1], 'level', level, 'at', string.format('%.6f', now), 'until', string.format('%.6f', till))
redis.call('PEXPIRE', KEYS[1], math.ceil((till - now + level * recovery) * 1000) + 1000)
return {tostring(level), string.format('%.6f', till - now)}
