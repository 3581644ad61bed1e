--! prelude: clock_prelude
-- What the politeness scripts that read a domain's adaptive back-off share. The hash holds
-- ``level`` (doublings), ``at`` (Redis time of the last 429/503/blocked_by_site) and ``until`` (no
-- navigation before, a Retry-After). The level recovers by one every ``recovery`` seconds without a
-- new hit, so a slowed site speeds up again slowly; spacing at level L is base * 2^(L-1), capped.
local function backoff_level(key, recovery)
  local held = redis.call('HMGET', key, 'level', 'at', 'until')
  local level = tonumber(held[1] or '0') or 0
  local at = tonumber(held[2] or '0') or 0
  local till = tonumber(held[3] or '0') or 0
  if level > 0 and recovery > 0 then
    level = math.max(0, level - math.floor((now - at) / recovery))
  end
  return level, till
end

local function backoff_spacing(level, base, cap)
  if level <= 0 then
    return 0
  end
  return math.min(cap, base * (2 ^ (level - 1)))
end
